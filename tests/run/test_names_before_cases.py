"""Names before cases: a shard, a -j worker or the progress count builds only the cases it keeps.

The set, the order and the names of the cases are those of ``iter_cases``
whatever the selection; only the work of building the dropped ones goes.  A
shard decides the cases of one model together (its unit), before they are
named, and checks only the spec files and parses only the models some unit
of it needs (every model of such a file when a family pairs models).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vts.families.base import Case
from vts.families.registry import families
from vts.model import casemodel
from vts.run.runner import Selection, count_cases, iter_cases, iter_models
from vts.run.selection import Shard, WorkerSlot, parse_expression, unit_key, worker_slot
from vts.spec import loader

SPECS = ["generated_tests"]


def _names(selection: Selection) -> list[str]:
    return [case.name for _, case in iter_cases(selection)]


@pytest.fixture(scope="module")
def every_name() -> list[str]:
    return _names(Selection(SPECS))


def _written_sizes(specs: list[str]) -> dict[str, int]:
    """Each model's operands plus operations as its spec file writes them, read here with plain json."""
    sizes = {}
    for path in loader.iter_spec_paths(specs):
        document = json.loads(Path(path).read_text())
        for model in document["models"]:
            main = model["main"]
            sizes[casemodel.model_case_name(document["name"], model["name"])] = (len(main["operands"])
                                                                                + len(main["operations"]))
    return sizes


def _units(shard: bool, specs: list[str] = SPECS, heavy: int | None = None) -> dict[str, str]:
    """Each case name's unit, worked out independently of ``Selection``: its model, or the name itself; for
    a shard, a family that sees whole spec files has its spec file as its unit; for a -j slot, a model of
    ``heavy`` or more operands and operations is no unit for validation: each of its cases is its own."""
    out: dict[str, str] = {}
    sizes = _written_sizes(specs)
    chosen = [cls() for cls in families().values() if cls.default]
    for family in chosen:
        out.update((case.name, case.name) for case in family.device_cases())
    for spec_path, model in iter_models(specs):
        for family in chosen:
            unit = unit_key(model.spec if shard and family.sees_whole_spec else model.case_name())
            shared = not shard and family.name == "validation" and sizes[model.case_name()] >= (heavy or 10**9)
            out.update((case.name, case.name if shared else unit) for case in family.model_cases(model, spec_path))
    return out


@pytest.fixture(scope="module")
def units() -> dict[str, str]:
    """The units of a shard."""
    return _units(shard=True)


@pytest.fixture(scope="module")
def slot_units() -> dict[str, str]:
    """The units of a -j slot."""
    return _units(shard=False)


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The names of the cases built (``Case.__init__`` run) from here on."""
    names: list[str] = []
    original = Case.__init__

    def counting_init(self, name, *args, **kwargs):
        names.append(name)
        original(self, name, *args, **kwargs)

    monkeypatch.setattr(Case, "__init__", counting_init)
    return names


def test_a_shard_selects_whole_units_and_keeps_the_order(every_name, units):
    shard = Shard(2, 5)
    assert set(units) == set(every_name)
    kept = _names(Selection(SPECS, shard=shard))
    assert kept == [n for n in every_name if shard(units[n])]
    assert 0.1 < len(kept) / len(every_name) < 0.3  # a fifth, give or take the units' sizes


def test_the_shards_partition_the_cases(every_name):
    parts = [_names(Selection(SPECS, shard=Shard(i, 3))) for i in (1, 2, 3)]
    assert sorted(n for part in parts for n in part) == sorted(every_name)


def test_a_shard_parses_only_the_models_its_units_need(monkeypatch, units):
    every_model = [model.case_name() for _, model in iter_models(SPECS)]
    parsed: list[str] = []
    original = casemodel.parse_model

    def counting(spec_name, doc, *args, **kwargs):
        parsed.append(casemodel.model_case_name(spec_name, doc["name"]))
        return original(spec_name, doc, *args, **kwargs)

    monkeypatch.setattr(casemodel, "parse_model", counting)
    shard = Shard(1, 6)
    names = _names(Selection(SPECS, families=["validation"], shard=shard))
    needed = set(units[n] for n in names)
    assert names and needed <= set(parsed)
    assert all(shard(unit_key(m)) for m in parsed) and len(parsed) < len(every_model) / 3


def test_the_j_slots_take_whole_units_and_together_every_case(every_name, slot_units):
    """A -j worker's slot decides units like a shard: together the slots run every case once, in order."""
    parts = [_names(Selection(SPECS, partition=WorkerSlot(i, 3))) for i in range(3)]
    for i, part in enumerate(parts):
        assert part == [n for n in every_name if worker_slot(slot_units[n], 3) == i]
    assert sorted(n for part in parts for n in part) == sorted(every_name)


def test_the_j_slots_share_a_heavy_models_validation_cases_by_name(monkeypatch, every_name):
    """A model of HEAVY_MODEL_SIZE or more, as its spec file writes it, is no -j unit for validation: each
    slot parses it and runs the cases whose name hashes to it; its other families stay whole on one slot."""
    from vts.run import runner

    monkeypatch.setattr(runner, "HEAVY_MODEL_SIZE", 14)
    slot_units = _units(shard=False, heavy=14)
    parts = [_names(Selection(SPECS, partition=WorkerSlot(i, 3))) for i in range(3)]
    for i, part in enumerate(parts):
        assert part == [n for n in every_name if worker_slot(slot_units[n], 3) == i]
    assert sorted(n for part in parts for n in part) == sorted(every_name)
    heavy = {m for m, size in _written_sizes(SPECS).items() if size >= 14}
    shared = [n for n in every_name if n.startswith("validation/") and n.split("/", 1)[1].rsplit(".", 1)[0] in heavy]
    shared_names = set(shared)
    assert heavy and shared and {i for i, part in enumerate(parts) for n in part if n in shared_names} == {0, 1, 2}
    # Without a family that sees whole spec files, a slot parses only the models it needs: the heavy ones too.
    alone = [_names(Selection(SPECS, families=["validation"], partition=WorkerSlot(i, 3))) for i in range(3)]
    assert sorted(n for part in alone for n in part) == sorted(n for n in every_name if n.startswith("validation/"))


CORPUS_MOBILENET = Path("../shared/corpus/V1_0/mobilenet_224_gender_basic_fixed.json.gz")


@pytest.mark.skipif(not CORPUS_MOBILENET.exists(), reason="the shared corpus is not here")
def test_two_slots_each_take_about_half_of_the_corpus_mobilenet_sweep():
    """The corpus's largest model (248 operands and operations): its 6,785 validation cases were one unit,
    a quarter of V1_0's case time on one worker."""
    specs = [str(CORPUS_MOBILENET)]
    parts = [_names(Selection(specs, families=["validation", "generated"], partition=WorkerSlot(i, 2)))
             for i in range(2)]
    validation = [sum(n.startswith("validation/") for n in part) for part in parts]
    assert sum(validation) > 6000 and min(validation) > 0.4 * sum(validation), validation
    assert sorted(sum(n.startswith("generated/") for n in part) for part in parts)[0] == 0  # whole, on one slot


def test_a_j_slot_with_a_shard_and_a_keyword_builds_only_its_own_cases(every_name, units, slot_units, built):
    shard, slot, keyword = Shard(1, 2), WorkerSlot(1, 2), "validation/ or generated/ or concurrency/"
    kept = _names(Selection(SPECS, keyword=parse_expression(keyword), shard=shard, partition=slot))
    expected = [n for n in every_name
                if shard(units[n]) and slot(slot_units[n]) and parse_expression(keyword)(n)]
    assert kept and kept == expected
    assert [n for n in built if n.startswith("validation/")] == [n for n in kept if n.startswith("validation/")]


def test_a_keyword_selects_the_same_names_as_filtering_every_case(every_name):
    keyword = "validation/ and operand_type"
    expected = [n for n in every_name if parse_expression(keyword)(n)]
    assert expected
    assert _names(Selection(SPECS, keyword=parse_expression(keyword))) == expected


def test_count_builds_no_costly_case_and_counts_what_iter_cases_yields(every_name, units, built):
    """Families whose cases cost to build (validation, caching) build none to be counted; cheap
    families may build theirs and drop them."""
    assert sum(1 for _ in count_cases(Selection(SPECS))) == len(every_name)
    shard = Shard(1, 7)
    assert sum(1 for _ in count_cases(Selection(SPECS, shard=shard))) == sum(shard(units[n]) for n in every_name)
    assert not [n for n in built if n.startswith(("validation/", "caching/"))]


def test_a_validation_shard_builds_only_its_own_cases(every_name, built):
    shard = Shard(3, 4)
    kept = _names(Selection(SPECS, families=["validation"], shard=shard))
    assert kept and built == kept


@pytest.mark.parametrize("family", sorted(families()))
def test_every_family_selects_its_names_in_the_order_of_its_cases(family):
    """``selected_*_cases`` keeps the names and order of ``model_cases``/``device_cases`` (a -j slot)."""
    def slot(name: str) -> bool:
        return worker_slot(name, 3) == 1

    whole = Selection(SPECS, families=[family])
    assert _names(Selection(SPECS, families=[family], shard=slot)) == [n for n in _names(whole) if slot(n)]


def test_a_spec_text_is_checked_once_per_process(tmp_path, monkeypatch):
    from vts.spec import schema

    spec = sorted(p for p in Path("generated_tests").rglob("*") if p.is_file())[0]
    calls: list[object] = []
    original = schema.schema_problems
    monkeypatch.setattr(schema, "schema_problems", lambda doc: calls.append(doc) or original(doc))
    monkeypatch.setattr(loader, "_checked", set())
    first = loader.load_file(str(spec))
    second = loader.load_file(str(spec))
    assert len(calls) == 1
    assert first == second


def test_a_shard_checks_only_the_spec_files_it_needs(every_name, monkeypatch):
    """A spec file none of whose units the shard takes is read for its names, never checked or expanded."""
    checked: list[str] = []
    original = loader.load_document
    monkeypatch.setattr(loader, "load_document",
                        lambda document, *args, **kwargs: checked.append(document["name"])
                        or original(document, *args, **kwargs))
    monkeypatch.setattr(loader, "_checked", set())
    kept = [case for _, case in iter_cases(Selection(SPECS, shard=Shard(3, 40)))]
    kept_names = {case.name for case in kept}
    assert [case.name for case in kept] == [name for name in every_name if name in kept_names]
    paths = loader.iter_spec_paths(SPECS)
    assert kept and len(checked) < len(paths) / 2, (len(checked), len(paths))
    assert {case.model.spec for case in kept if case.spec_path in paths} <= set(checked)


def test_a_broken_spec_fails_the_shards_that_need_it_and_no_other(tmp_path):
    from click.testing import CliRunner

    from tests.conftest import hand_add_float
    from vts.cli.main import main
    from vts.run.runner import needed_specs

    broken = hand_add_float()
    broken["name"] = "broken_add"
    broken["models"][0]["main"]["operands"][0]["type"] = "NOT_A_TYPE"
    path = tmp_path / "broken_add.json"
    path.write_text(__import__("json").dumps(broken))
    outcomes = {}
    for index in range(1, 21):
        shard = f"{index}/20"
        needs = needed_specs(Selection([str(path)], shard=Shard.parse(shard)))("broken_add",
                                                                               [loader.ModelOutline("add", 4)])
        result = CliRunner().invoke(main, ["list", "--specs", str(path), "--shard", shard])
        outcomes[shard] = (needs, result.exit_code, "NOT_A_TYPE" in result.output)
    assert {outcome for outcome in outcomes.values()} == {(True, 2, True), (False, 0, False)}, outcomes


def test_the_names_pass_reads_a_spec_file_once_until_it_changes(tmp_path, monkeypatch):
    """The check before a run and the run itself both read every file's names; the second pass takes the
    outlines the first read, unless the file changed in between (then it reads the new names)."""
    from tests.conftest import hand_add_float

    for name in ("first_add", "second_add"):
        document = hand_add_float()
        document["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(document))
    monkeypatch.setattr(loader, "_outlines", {})
    monkeypatch.setattr(loader, "_outlines_held", 0)
    reads: list[str] = []
    original = loader.read_text
    monkeypatch.setattr(loader, "read_text", lambda path: reads.append(Path(path).name) or original(path))
    none = lambda name, outlines: False  # noqa: E731 - a shard that needs no file

    def names_pass() -> list[str]:
        del reads[:]
        assert list(loader.load_paths([str(tmp_path)], none)) == []
        return sorted(reads)

    assert names_pass() == ["first_add.json", "second_add.json"]
    assert names_pass() == []
    changed = hand_add_float()
    changed["name"] = "renamed_add"
    (tmp_path / "second_add.json").write_text(json.dumps(changed, indent=1))
    assert names_pass() == ["second_add.json"]
    seen: list[str] = []
    list(loader.load_paths([str(tmp_path)], lambda name, outlines: seen.append(name) or False))
    assert sorted(seen) == ["first_add", "renamed_add"]  # the new name, from the outline kept for it
    kept = [spec.name for spec in loader.load_paths([str(tmp_path)], lambda name, outlines: name == "first_add")]
    assert kept == ["first_add"]  # a file the outline says is needed is read and loaded in full
    assert loader._outlines_held == 2 * len(hand_add_float()["models"])  # the changed file's old outline let go
