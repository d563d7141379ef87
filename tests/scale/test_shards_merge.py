"""``--shard I/N`` (by hash, or balanced by durations) and ``nnvts merge`` add up to one full run."""

from __future__ import annotations

import json

import pytest

from tests.scale.conftest import QUANT_BROKEN, SLICE, verdicts
from vts.report.resultsfile import ResultsFileError
from vts.run.durations import load_durations, plan_shards, shard_loads, store_durations
from vts.run.selection import Shard


def test_duration_plan_puts_every_case_in_exactly_one_shard_deterministically():
    names = [f"case{i:03d}" for i in range(200)]
    durations = {n: float(i % 17) + (50.0 if i % 41 == 0 else 0.0) for i, n in enumerate(names) if i % 5}
    plan = plan_shards(names, durations, 3)
    assert sorted(plan) == names and set(plan.values()) == {0, 1, 2}
    assert plan == plan_shards(list(reversed(names)), dict(reversed(list(durations.items()))), 3)


def test_duration_plan_balances_skewed_durations_better_than_the_hash():
    names = [f"case{i:03d}" for i in range(90)]
    durations = {n: (100.0 if i < 6 else 1.0) for i, n in enumerate(names)}
    loads = shard_loads(plan_shards(names, durations, 3), durations, 3)
    assert max(loads) - min(loads) <= 1.0
    hashed = [sum(durations[n] for n in names if Shard(i, 3)(n)) for i in (1, 2, 3)]
    assert max(hashed) - min(hashed) >= max(loads) - min(loads)


def test_cases_without_a_duration_weigh_the_mean():
    plan = plan_shards(["a", "b", "c", "d"], {"a": 3.0, "b": 1.0}, 2)
    loads = shard_loads(plan, {"a": 3.0, "b": 1.0}, 2)
    assert sorted(loads) == [3.0, 5.0] or sorted(loads) == [4.0, 4.0]
    assert sum(loads) == 8.0  # c and d weigh the mean, 2 s each


def test_durations_file_round_trip_and_errors(tmp_path):
    path = tmp_path / "durations.json"
    store_durations(str(path), {"b": 2.0, "a": 1.5})
    store_durations(str(path), {"c": 0.25, "a": 1.0})
    assert load_durations(str(path)) == {"a": 1.0, "b": 2.0, "c": 0.25}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nnvts_results": 1}\n{"case": {"name": "x"}}\n')
    with pytest.raises(ResultsFileError, match=r"bad.jsonl:2: malformed case record"):
        load_durations(str(bad))


def test_three_hash_shards_merged_equal_one_full_run(nnvts, tmp_path):
    full = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--jsonl", str(tmp_path / "full.jsonl"))
    assert full.returncode == 1, full.stderr
    shards = []
    for index in (1, 2, 3):
        path = tmp_path / f"shard{index}.jsonl"
        nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--shard", f"{index}/3", "--jsonl", str(path))
        shards.append(str(path))
    merged = nnvts("merge", *shards, *SLICE, "--json", str(tmp_path / "m.json"), "--junit", str(tmp_path / "m.xml"),
                   "--html", str(tmp_path / "m.html"), "--jsonl", str(tmp_path / "m.jsonl"))
    assert merged.returncode == 1, merged.stderr  # the quantized cases fail, as in the full run
    assert "missing" not in merged.stderr and "duplicate" not in merged.stderr
    expected = verdicts(tmp_path / "full.jsonl")
    assert {"passed", "failed"} <= set(expected.values())
    assert verdicts(tmp_path / "m.json") == expected
    assert verdicts(tmp_path / "m.jsonl") == expected
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["merged_from"] == shards and report["interrupted"] is False
    assert report["merge"] == {"missing": 0, "duplicates": 0, "unexpected": 0, "incomplete_files": []}
    # The merge job can gate on regressions: against the full run, every failure is still-failing.
    gated = nnvts("merge", *shards, *SLICE, "--baseline", str(tmp_path / "full.jsonl"), "--fail-on", "new",
                  "--json", str(tmp_path / "g.json"))
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "new failures against" in gated.stdout
    statuses = {c["extra"]["baseline"] for c in json.loads((tmp_path / "g.json").read_text())["cases"]}
    assert statuses == {"still-failing", "still-passing"}


def test_merge_names_missing_and_duplicate_cases(nnvts, tmp_path):
    paths = []
    for index in (1, 2):
        path = tmp_path / f"shard{index}.jsonl"
        nnvts("run", "--driver", "reference", *SLICE, "--shard", f"{index}/3", "--jsonl", str(path))
        paths.append(str(path))
    missing_names = set(verdicts(tmp_path / "shard1.jsonl")) | set(verdicts(tmp_path / "shard2.jsonl"))
    result = nnvts("merge", paths[0], paths[1], paths[1], *SLICE, "--json", str(tmp_path / "m.json"))
    assert result.returncode == 1
    assert "missing (selected, but in no shard)" in result.stderr
    assert "duplicate (in more than one shard)" in result.stderr
    listed = nnvts("list", *SLICE, "--shard", "3/3").stdout.split()
    assert listed and all(name in result.stderr for name in sorted(listed)[:20])
    assert set(verdicts(tmp_path / "m.json")) == missing_names  # what ran is still reported, once
    found = json.loads((tmp_path / "m.json").read_text())["merge"]
    assert found["missing"] == len(listed) and found["duplicates"] == len(verdicts(tmp_path / "shard2.jsonl"))


def test_merge_of_a_malformed_file_is_an_input_error_naming_file_and_line(nnvts, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nnvts_results": 1}\nnot json\n{"case": {"name": "a", "family": "f", "verdict": "passed"}}\n')
    result = nnvts("merge", str(bad), "--no-coverage-check", "--json", str(tmp_path / "m.json"))
    assert result.returncode == 2
    assert "bad.jsonl:2: not a JSON record" in result.stderr
    assert not (tmp_path / "m.json").exists()


def test_duration_balanced_shards_merged_equal_one_full_run(nnvts, tmp_path):
    durations = tmp_path / "durations.json"
    full = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--jsonl", str(tmp_path / "full.jsonl"),
                 "--store-durations", str(durations))
    assert full.returncode == 1, full.stderr
    stored = load_durations(str(durations))
    assert set(stored) == set(verdicts(tmp_path / "full.jsonl"))
    shards = []
    for index in (1, 2, 3):
        path = tmp_path / f"shard{index}.jsonl"
        # Shard 2 runs with two workers: the balanced plan must reach them too.
        jobs = ("-j", "2") if index == 2 else ()
        nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--shard", f"{index}/3", "--durations-from",
              str(durations), "--jsonl", str(path), *jobs)
        shards.append(str(path))
    header = json.loads((tmp_path / "shard1.jsonl").read_text().splitlines()[0])
    assert header["ci"]["shard_plan"] == "shard 1/3 by durations"
    plan = plan_shards(stored, stored, 3)
    for index, path in enumerate(shards):
        assert set(verdicts(path)) == {n for n, s in plan.items() if s == index}
        listed = nnvts("list", *SLICE, "--shard", f"{index + 1}/3", "--durations-from", str(durations)).stdout
        assert set(listed.split()) == set(verdicts(path))  # nnvts list shows the plan a run follows
    merged = nnvts("merge", *shards, *SLICE, "--json", str(tmp_path / "m.json"))
    assert "missing" not in merged.stderr and "duplicate" not in merged.stderr, merged.stderr
    assert verdicts(tmp_path / "m.json") == verdicts(tmp_path / "full.jsonl")


def test_durations_from_needs_a_shard(nnvts, tmp_path):
    durations = tmp_path / "durations.json"
    durations.write_text("{}")
    result = nnvts("run", *SLICE, "--durations-from", str(durations))
    assert result.returncode == 2 and "--shard" in result.stderr


def test_merge_reads_the_selection_from_the_shards_headers(nnvts, tmp_path):
    paths = []
    for index in (1, 2):
        path = tmp_path / f"shard{index}.jsonl"
        nnvts("run", "--driver", "reference", *SLICE, "--shard", f"{index}/2", "--jsonl", str(path))
        paths.append(str(path))
    merged = nnvts("merge", *paths, "--json", str(tmp_path / "m.json"))  # no --specs, -k, --family
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "missing" not in merged.stderr
    assert json.loads((tmp_path / "m.json").read_text())["merge"]["missing"] == 0
    # A shard of another selection is refused in one line, before anything is written.
    other = tmp_path / "other.jsonl"
    nnvts("run", "--driver", "reference", "--family", "generated", "-k", "add_binary", "--shard", "2/2",
          "--jsonl", str(other))
    refused = nnvts("merge", paths[0], str(other), "--json", str(tmp_path / "x.json"))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "different selections" in refused.stderr
    assert not (tmp_path / "x.json").exists()
    # With --allow-mixed, the options still override the headers.
    forced = nnvts("merge", paths[0], str(other), *SLICE, "--allow-mixed", "--json", str(tmp_path / "y.json"))
    assert forced.returncode == 1 and "missing" in forced.stderr
