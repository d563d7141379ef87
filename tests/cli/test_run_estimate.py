"""``make run`` says first how long it will take: the last run's duration here, or a timed sample."""

from __future__ import annotations

import json
import os
import stat

from tools.run_estimate import last_duration, sample_estimate

ARGV = ["--driver", "reference", "--specs", "generated_tests"]


def _report(path, argv, duration=612.0, interrupted=False) -> str:
    path.write_text(json.dumps({"argv": argv, "duration": duration, "interrupted": interrupted, "cases": []}))
    return str(path)


def test_the_last_run_of_the_same_command_is_the_estimate(tmp_path):
    same = _report(tmp_path / "run.json", ["run", *ARGV, "--json", "reports/run.json"])
    assert last_duration(same, ARGV) == 612.0
    other = _report(tmp_path / "other.json", ["run", "--driver", "reference", "--family", "generated"])
    assert last_duration(other, ARGV) is None
    cut = _report(tmp_path / "cut.json", ["run", *ARGV], interrupted=True)
    assert last_duration(cut, ARGV) is None
    assert last_duration(str(tmp_path / "none.json"), ARGV) is None


def test_a_sample_counts_its_cases_n_times_and_its_start_once(tmp_path):
    """A stand-in nnvts writes a sample report whose cases took 0.5 s; the start is what else the call took."""
    fake = tmp_path / "nnvts"
    fake.write_text("#!/bin/sh\nwhile [ $# -gt 1 ]; do [ \"$1\" = --json ] && out=$2; shift; done\n"
                    'echo \'{"cases": [{"duration": 0.25}, {"duration": 0.25}]}\' > "$out"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    estimate, took = sample_estimate(str(fake), ARGV, 50)
    assert estimate == (took - 0.5) + 0.5 * 50 if took >= 0.5 else estimate == took * 50
    assert os.listdir(tmp_path) == ["nnvts"]  # the sample's report is not left behind
