"""Conformance reports of the engine drivers (LiteRT, ONNX Runtime): run nnvts, count, classify, write the tables.

    .venv/bin/python tools/engines_report.py [--engine litert] [--family generated] [--reuse]

For each engine it runs every default family, ``nnvts run --driver ENGINE
--specs SOURCE --family F... -j 2``, one run per shard (below) and source,
split into ``reports/engines/ENGINE-F-SOURCE.jsonl`` per family,
for SOURCE ../shared/corpus and specs/ (two runs: a run refuses two spec
files of one name, and specs/ shares ``l2_normalization_axis`` with the
corpus; the sweep families ``validation`` and
``deadline`` on a stable shard, ``--shard 1/20``: their full sweep is about
a million cases), then rewrites the generated part of docs/engines.md,
between ``<!-- engines:begin -->`` and ``<!-- engines:end -->``: passed /
failed / skipped counts per engine and family, the failure classes with one
example each, and the skip classes with the driver's own reason (asked
in-process of the driver for one model of the class).  The prose around the
markers -- what each failure class means -- is written by hand and kept.

A class is (family, operations, operand types, reason pattern): the reason
with its numbers and names of operands blanked, up to the first detail.
``--reuse`` classifies existing JSON-lines files without running anything;
the page always covers every report present under reports/engines/, so
``--engine``/``--family`` rerun a part and keep the rest.

Each engine is also the *oracle* of the reference driver once: ``nnvts run
--driver reference --family differential --oracle ENGINE`` per source, into
reports/engines/reference-oracle-ENGINE-SOURCE.jsonl (a few minutes each).
The page counts agreements (passed), disagreements (failed) and skips,
classifies the disagreements, and names the side each class is wrong on
where a golden decides it: whichever failed the golden of the same model
in the ``generated`` family -- the engine's own run, and one run of the
reference (``nnvts run --driver reference --family generated``, into
reports/engines/reference-generated-SOURCE.jsonl).  A class no golden
decides says so, and the prose below the tables reasons it out from
NNAPI's semantics.  Skip
classes carry the engine's own reason, asked in-process as above.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENGINES = ("litert", "onnxruntime", "xla")
#: Engines whose tables sit between their own markers (``<!-- engines:xla:begin -->``...), so one engine's
#: report is regenerated without the others' reports present (the page keeps a block whose reports are absent).
OWN_BLOCK = ("xla",)
CORPUS = "../shared/corpus"
#: Families run on a stable shard: the sweeps (about a million cases in full), and burst and concurrency,
#: which re-run every golden model another way (12k cases each) and would double the run.
SHARDED = {"validation": "1/20", "deadline": "1/20", "burst": "1/5", "concurrency": "1/5"}
VERDICTS = ("passed", "failed", "skipped", "error", "crash", "timeout")
#: Skip classes listed per engine (the largest first; the rest summed in one row).
SKIP_ROWS = 40
BEGIN, END = "<!-- engines:begin -->", "<!-- engines:end -->"
DOC = ROOT / "docs" / "engines.md"
OUT = ROOT / "reports" / "engines"


def default_families() -> list[str]:
    from vts.families.registry import families

    return [name for name, cls in families().items() if getattr(cls, "default", True)]


#: Spec sources, run separately: a run refuses two spec files of one name, and specs/ has
#: l2_normalization_axis like the corpus.
SOURCES = {"corpus": CORPUS, "specs": "specs"}


def report_path(engine: str, family: str, source: str) -> Path:
    return OUT / f"{engine}-{family}-{source}.jsonl"


def oracle_report_path(engine: str, source: str) -> Path:
    return OUT / f"reference-oracle-{engine}-{source}.jsonl"


def _run(arguments: list[str], path: Path) -> None:
    """``nnvts run ARGUMENTS`` at low priority, its JSON lines into ``path`` (replaced)."""
    path.unlink(missing_ok=True)
    command = [str(ROOT / ".venv" / "bin" / "nnvts"), "run", *arguments, "--jsonl", str(path)]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(["nice", "-n", "10", *command], cwd=ROOT, stdout=subprocess.DEVNULL, check=False)


def run_families(engine: str, families: list[str], jobs: int) -> None:
    """Every family of one shard in one ``nnvts run`` per source, split into per-family reports.

    One run per shard rather than per family: a driver that compiles at preparation (XLA, about
    0.4 s a model) then compiles each model once per worker host instead of once per family.
    Shards select by case name, and names carry the family, so each family gets exactly the cases
    its own run would have.
    """
    OUT.mkdir(parents=True, exist_ok=True)
    by_shard: dict[str | None, list[str]] = collections.defaultdict(list)
    for family in families:
        by_shard[SHARDED.get(family)].append(family)
    for shard, group in by_shard.items():
        for source, specs in SOURCES.items():
            arguments = ["--driver", engine, "--specs", specs, "-j", str(jobs)]
            for family in group:
                arguments += ["--family", family]
            if shard:
                arguments += ["--shard", shard]
            together = OUT / f"{engine}-together-{source}.jsonl"
            _run(arguments, together)
            split_by_family(together, {family: report_path(engine, family, source) for family in group})
            together.unlink(missing_ok=True)


def split_by_family(path: Path, outputs: dict[str, Path]) -> None:
    """The JSON lines of one run written out per family: the header line into each, every case into its own."""
    handles = {family: target.open("w") for family, target in outputs.items()}
    try:
        with path.open() as stream:
            for line in stream:
                record = json.loads(line)
                if "case" in record:
                    family = record["case"].get("family")
                    if family in handles:
                        handles[family].write(line)
                else:
                    for handle in handles.values():
                        handle.write(line)
    finally:
        for handle in handles.values():
            handle.close()


def reference_golden_path(source: str) -> Path:
    return OUT / f"reference-generated-{source}.jsonl"


def run_reference_goldens(jobs: int) -> None:
    """The reference on the goldens, once: the other side of every disagreement's golden verdict."""
    OUT.mkdir(parents=True, exist_ok=True)
    for source, specs in SOURCES.items():
        _run(["--driver", "reference", "--specs", specs, "--family", "generated", "-j", str(jobs)],
             reference_golden_path(source))


def run_oracle_comparison(engine: str, jobs: int) -> None:
    """The reference driver judged against ``engine`` as the differential family's oracle."""
    OUT.mkdir(parents=True, exist_ok=True)
    for source, specs in SOURCES.items():
        _run(["--driver", "reference", "--oracle", engine, "--specs", specs, "--family", "differential",
              "-j", str(jobs)], oracle_report_path(engine, source))


def read_cases(paths: list[Path]) -> list[dict]:
    """The cases of one family's runs; a device-level case both sources ran (same name) counts once."""
    cases: dict[str, dict] = {}
    for path in paths:
        with path.open() as stream:
            for line in stream:
                record = json.loads(line)
                if "case" in record:
                    cases.setdefault(record["case"]["name"], record["case"])
    return list(cases.values())


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def reason_pattern(reason: str) -> str:
    """The reason without its particulars: numbers blanked, operand names and value details dropped."""
    text = reason.split(" (")[0] if reason.startswith("sync execution returned") else reason
    text = re.sub(r"^random input \d+, \w+ execution: ", "", text)  # which draw and path: particulars
    text = text.replace(" (expected: the oracle's answer)", "")
    text = re.sub(r"output\w*:", "OUTPUT:", text)
    text = re.sub(r"; worst at .*", "", text)
    text = _NUMBER.sub("#", text)
    return text[:140]


def case_operations(case: dict) -> str:
    """Operations of the case; the ADD that turns inputs into internal operands is not the subject."""
    operations = case.get("operations") or []
    if len(operations) > 1 and "ADD" in operations and "all_inputs_as_internal" in case["name"]:
        operations = [o for o in operations if o != "ADD"]
    return ",".join(operations) or "-"


@dataclass
class Group:
    count: int = 0
    examples: list[dict] = field(default_factory=list)


def classify(cases: list[dict], verdicts: tuple[str, ...]) -> dict[tuple[str, str, str], Group]:
    groups: dict[tuple[str, str, str], Group] = collections.defaultdict(Group)
    for case in cases:
        if case["verdict"] not in verdicts:
            continue
        key = (case_operations(case), ",".join(case.get("operand_types") or []) or "-",
               f"{case['verdict']}: {reason_pattern(case.get('reason', ''))}")
        group = groups[key]
        group.count += 1
        if len(group.examples) < 1:
            group.examples.append(case)
    return dict(sorted(groups.items(), key=lambda item: (-item[1].count, item[0])))


class DriverReasons:
    """The driver's own reason for an unsupported operation, asked in-process for one model of a class."""

    def __init__(self, engine: str) -> None:
        from vts.ipc.drivers import DriverRef

        self.device = DriverRef(engine).load()
        self._specs: dict[str, list] = {}

    def reason(self, case: dict) -> str:
        from vts.model.casemodel import close_model, parse_spec, to_hal_model
        from vts.spec.loader import load_file

        spec = case.get("spec")
        if not spec:
            return ""
        if spec not in self._specs:
            self._specs[spec] = parse_spec(load_file(str(ROOT / spec)).document)
        name = case["name"].removeprefix(f"{case.get('family')}/")
        candidates = [m for m in self._specs[spec]
                      if name == m.case_name() or name.startswith(m.case_name() + ".")]
        for model in sorted(candidates, key=lambda m: -len(m.case_name()))[:1]:
            try:
                hal = to_hal_model(model)
            except Exception as error:  # a model the harness cannot build for this driver (unknown extension)
                return f"(not asked: {error})"
            try:
                reasons = [r for r in self.device.unsupported_reasons(hal) if r]
            except Exception as error:  # a report line, not a crash
                return f"(could not ask: {error})"
            finally:
                close_model(hal)
            return "; ".join(dict.fromkeys(reasons))[:200]
        return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def failure_rows(label: str, cases: list[dict], reason_width: int) -> list[str]:
    """One family's failure classes as table rows (family, operation, types, pattern, cases, example), for
    every engine report (this one and ``tools/plugin_report.py``)."""
    rows = []
    for (ops, types, pattern), group in classify(cases, ("failed", "error", "crash", "timeout")).items():
        example = group.examples[0]
        rows.append(f"| {label} | {ops} | {types} | {_cell(pattern)} | {group.count} | "
                    f"`{example['name']}`: {_cell(example.get('reason', '')[:reason_width])} |")
    return rows


def golden_verdict(engine: str, case: dict, generated: dict[str, list[dict]]) -> str:
    """Which side a disagreement is wrong on: whoever fails the golden of the same model (``generated``
    holds each side's generated-family cases, by driver name)."""
    model = case["name"].removeprefix("differential/")
    verdicts = {side: {c["verdict"] for c in cases if c["name"] == model} for side, cases in generated.items()}
    wrong = [side for side in (engine, "reference") if "failed" in verdicts.get(side, set())]
    if wrong:
        return " and ".join(wrong) + ": fails this model's golden in the generated family"
    if all("passed" in verdicts.get(side, set()) for side in (engine, "reference")):
        return "no golden decides: both pass this model's golden (see below)"
    return "no golden verdict for this model (see below)"


def render_oracle_comparison(comparisons: dict[str, list[dict]], results: dict[str, dict[str, list[dict]]],
                             reference_goldens: list[dict],
                             reasons: Callable[[str], DriverReasons | None]) -> list[str]:
    """The reference driver against each engine as its oracle: counts, disagreement and skip classes."""
    lines = ["", "### The reference driver with each engine as oracle (differential family)", "",
             "`nnvts run --driver reference --family differential --oracle ENGINE`, corpus and specs/.", "",
             "| oracle | cases | agreed (passed) | disagreed (failed) | skipped | error | crash | timeout |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for engine, cases in comparisons.items():
        counts = collections.Counter(c["verdict"] for c in cases)
        lines.append(f"| {engine} | {len(cases)} | " + " | ".join(str(counts.get(v, 0)) for v in VERDICTS) + " |")
    for engine, cases in comparisons.items():
        generated = {engine: results.get(engine, {}).get("generated", []), "reference": reference_goldens}
        lines += ["", f"#### reference against {engine}: disagreement classes", "",
                  "| operation | operand types | verdict: reason pattern | cases | example | wrong side |",
                  "| --- | --- | --- | ---: | --- | --- |"]
        disagreements = classify(cases, ("failed", "error", "crash", "timeout"))
        for (ops, types, pattern), group in disagreements.items():
            example = group.examples[0]
            lines.append(f"| {ops} | {types} | {_cell(pattern)} | {group.count} | "
                         f"`{example['name']}`: {_cell(example.get('reason', '')[:220])} | "
                         f"{_cell(golden_verdict(engine, example, generated))} |")
        if not disagreements:
            lines.append("| - | - | no disagreements | 0 | - | - |")
        by_reason: dict[str, Group] = collections.defaultdict(Group)
        for group in classify(cases, ("skipped",)).values():
            key = reason_pattern(group.examples[0].get("reason", ""))
            by_reason[key].count += group.count
            by_reason[key].examples += group.examples
        ranked = sorted(by_reason.items(), key=lambda item: (-item[1].count, item[0]))
        asker = reasons(engine)
        lines += ["", f"#### reference against {engine}: skip classes", "",
                  f"| skip reason | cases | {engine}'s own reason (one example) |", "| --- | ---: | --- |"]
        for pattern, group in ranked[:SKIP_ROWS // 2]:
            example = group.examples[0]
            own = asker.reason(example) if asker and "does not support" in example.get("reason", "") else ""
            lines.append(f"| {_cell(pattern)} | {group.count} | {_cell(own)} |")
        rest = ranked[SKIP_ROWS // 2:]
        if rest:
            lines.append(f"| ({len(rest)} more classes) | {sum(g.count for _, g in rest)} | |")
    return lines


def markers(engine: str | None) -> tuple[str, str]:
    """The markers of the main block (None) or of an engine with its own block."""
    return (BEGIN, END) if engine is None else (f"<!-- engines:{engine}:begin -->", f"<!-- engines:{engine}:end -->")


def render(results: dict[str, dict[str, list[dict]]], comparisons: dict[str, list[dict]],
           reference_goldens: list[dict], skip_reasons: bool, block: str | None = None) -> str:
    begin, end = markers(block)
    askers: dict[str, DriverReasons] = {}

    def reasons(engine: str) -> DriverReasons | None:
        if skip_reasons and engine not in askers:
            askers[engine] = DriverReasons(engine)
        return askers.get(engine)

    lines = [begin, "", "### Counts", ""]
    lines.append("| engine | family | cases | " + " | ".join(VERDICTS) + " |")
    lines.append("| --- | --- | ---: | " + " | ".join("---:" for _ in VERDICTS) + " |")
    for engine, by_family in results.items():
        for family, cases in by_family.items():
            counts = collections.Counter(c["verdict"] for c in cases)
            shard = f" (shard {SHARDED[family]})" if family in SHARDED else ""
            lines.append(f"| {engine} | {family}{shard} | {len(cases)} | "
                         + " | ".join(str(counts.get(v, 0)) for v in VERDICTS) + " |")
    for engine, by_family in results.items():
        lines += ["", f"### {engine}: failure classes", "",
                  "| family | operation | operand types | verdict: reason pattern | cases | example |",
                  "| --- | --- | --- | --- | ---: | --- |"]
        any_failure = False
        for family, cases in by_family.items():
            rows = failure_rows(family, cases, 220)
            any_failure = any_failure or bool(rows)
            lines += rows
        if not any_failure:
            lines.append("| - | - | - | no failures | 0 | - |")
        asker = reasons(engine)
        if asker is None:
            continue
        lines += ["", f"### {engine}: skip classes (generated family)", "",
                  "| operation | operand types | cases | the driver's reason (one example) |",
                  "| --- | --- | ---: | --- |"]
        skipped = classify(by_family.get("generated", []), ("skipped",))
        merged: dict[tuple[str, str], Group] = collections.defaultdict(Group)
        for (ops, types, _), group in skipped.items():
            merged[(ops, types)].count += group.count
            merged[(ops, types)].examples += group.examples
        ranked = sorted(merged.items(), key=lambda item: (-item[1].count, item[0]))
        for (ops, types), group in ranked[:SKIP_ROWS]:
            lines.append(f"| {ops} | {types} | {group.count} | {_cell(asker.reason(group.examples[0]))} |")
        rest = ranked[SKIP_ROWS:]
        if rest:
            lines.append(f"| ({len(rest)} more classes) | | {sum(g.count for _, g in rest)} | |")
    if comparisons or block is None:
        lines += render_oracle_comparison(comparisons, results, reference_goldens, reasons)
    lines += ["", end]
    return "\n".join(lines)


def write_doc(block: str, engine: str | None = None) -> None:
    begin, end = markers(engine)
    text = DOC.read_text() if DOC.exists() else f"# Engine drivers\n\n{begin}\n{end}\n"
    if begin not in text or end not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(head + block + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", choices=ENGINES, help="engine (repeatable; default all)")
    parser.add_argument("--family", action="append", help="family (repeatable; default every default family)")
    parser.add_argument("--reuse", action="store_true", help="classify existing reports/engines/*.jsonl only")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--no-skip-reasons", action="store_true", help="do not ask the drivers why they skip")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    engines = args.engine or list(ENGINES)
    families = args.family or default_families()
    if not args.reuse:
        for engine in engines:
            run_families(engine, families, args.jobs)
            if args.family is None or "differential" in args.family:
                run_oracle_comparison(engine, args.jobs)
        if args.family is None or "differential" in args.family or "generated" in args.family:
            run_reference_goldens(args.jobs)
    # The page covers every report present, so running one engine or family keeps the others' tables.
    results: dict[str, dict[str, list[dict]]] = {}
    for engine in ENGINES:
        for family in default_families():
            paths = [p for p in (report_path(engine, family, source) for source in SOURCES) if p.exists()]
            if paths:
                results.setdefault(engine, {})[family] = read_cases(paths)
    comparisons = {}
    for engine in ENGINES:
        paths = [p for p in (oracle_report_path(engine, source) for source in SOURCES) if p.exists()]
        if paths:
            comparisons[engine] = read_cases(paths)
    goldens = read_cases([p for p in map(reference_golden_path, SOURCES) if p.exists()])
    shared = [e for e in ENGINES if e not in OWN_BLOCK]
    for block in (None, *OWN_BLOCK):
        names = shared if block is None else [block]
        part = {e: results[e] for e in names if e in results}
        compared = {e: comparisons[e] for e in names if e in comparisons}
        if part or compared:  # a block whose reports are all absent is kept as the page has it
            write_doc(render(part, compared, goldens, not args.no_skip_reasons, block), block)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
