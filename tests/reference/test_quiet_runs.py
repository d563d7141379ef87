"""A quiet run prints its summary and nothing else: no numpy RuntimeWarning from the reference driver.

REDUCE_PROD on float16 saturates to infinity on the differential family's random inputs (an expected
result, computed exactly); before the cast was done under ``np.errstate`` numpy printed "overflow
encountered in cast" into ``-q`` runs of the corpus.  Read from ``../shared/corpus``; skipped without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "corpus" / "V1_2" / "reduce_prod.json.gz"


@pytest.mark.skipif(not SPEC.exists(), reason="needs ../shared/corpus")
def test_a_quiet_run_of_saturating_reductions_prints_only_its_summary() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="default")
    result = subprocess.run([sys.executable, "-m", "cli", "run", "--driver", "reference", "--specs", str(SPEC),
                             "--family", "differential", "--in-process", "-q"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    assert [line for line in result.stdout.splitlines() if line.strip()] == [result.stdout.strip()]
    assert result.stdout.startswith("nnvts: ")
