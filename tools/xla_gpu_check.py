"""`make gpu-check`: the XLA driver on a GPU, in one command, with one summary.

    .venv/bin/python tools/xla_gpu_check.py [--corpus ../shared/corpus] [--backend gpu] [--shard 1/10]

For a machine that already has JAX with its GPU plugin (``jax[cuda12]`` or
the vendor's build): nothing is installed and no package registry is
reached.  It checks that JAX sees a GPU backend (else it says so in one line
and exits with status 2), then runs, with ``NNVTS_XLA_BACKEND`` set:

1. ``nnvts run --driver xla`` over a stable shard (default 1/10) of the
   corpus, families generated, differential (the reference as oracle),
   memory_domain, fenced, burst, caching and concurrency;
2. the precision self-test: the same shard, generated family, float32
   convolutions and fully-connected models only, with the driver variant
   that leaves XLA's default precision (``nnvts.drivers.xla:gpu_default_precision``).
   On a GPU that runs TF32/bf16 passes, the suite must fail it somewhere;
   on a CPU it is equivalent to full precision and passes;
3. ``nnvts bench --driver xla``;
4. ``nnvts soak --driver xla --duration 60s`` on the bundled cases;

then prints one summary (and writes reports/gpu-check/summary.json).
``--backend cpu --shard 1/200 --soak 5s --bench-runs 1`` runs the same path
on the CPU in a few minutes (how it is tested without a GPU).

The driver host runs without an address-space limit (``--memory-limit 0``):
a CUDA runtime reserves far more virtual memory than nnvts' default 4 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "reports" / "gpu-check"
FAMILIES = ("generated", "differential", "memory_domain", "fenced", "burst", "caching", "concurrency")
PRECISION_SELECTION = "conv or fully_connected or depthwise"


def nnvts() -> list[str]:
    script = Path(sys.executable).with_name("nnvts")
    return [str(script)] if script.exists() else [sys.executable, str(ROOT / "cli.py")]


def gpu_backend(name: str) -> str | None:
    """None if JAX has backend ``name`` here; else the one-line reason (checked in a child: no state kept)."""
    code = ("import sys, jax\n"
            "try:\n    devices = jax.devices(sys.argv[1])\n"
            "except Exception as error:\n    print(str(error).splitlines()[0][:200]); sys.exit(1)\n"
            "print(devices[0].device_kind if devices else 'no device')\n")
    alias = {"gpu": "gpu", "cuda": "cuda", "rocm": "rocm"}.get(name, name)
    try:
        probe = subprocess.run([sys.executable, "-c", code, alias], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "JAX did not answer within 300 s"
    if probe.returncode != 0:
        text = (probe.stdout + probe.stderr).strip().splitlines()
        return text[-1] if text else f"exit status {probe.returncode}"
    print(f"gpu-check: JAX backend {name!r}: {probe.stdout.strip()}")
    return None


def run(step: str, argv: list[str], env: dict[str, str], log: Path) -> dict:
    started = time.monotonic()
    with log.open("w") as out:
        status = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    elapsed = time.monotonic() - started
    print(f"gpu-check: {step}: exit status {status} in {elapsed:.0f} s (log {log.relative_to(ROOT)})")
    return {"step": step, "status": status, "seconds": round(elapsed, 1), "log": str(log.relative_to(ROOT))}


def run_summary(path: Path) -> dict[str, int]:
    try:
        return json.loads(path.read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="../shared/corpus")
    parser.add_argument("--backend", default="gpu", help="JAX backend (gpu, cuda, rocm; cpu to test this script)")
    parser.add_argument("--shard", default="1/10")
    parser.add_argument("--soak", default="60s", help="soak duration")
    parser.add_argument("--bench-runs", type=int, default=5)
    parser.add_argument("-j", "--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    problem = gpu_backend(args.backend)
    if problem is not None:
        print(f"gpu-check: no {args.backend!r} backend in this JAX ({problem}). Install JAX with its GPU plugin "
              "(e.g. pip install 'jax[cuda12]') on a machine with a GPU, or pass --backend cpu to test the check.")
        return 2
    if not Path(args.corpus).is_dir():
        print(f"gpu-check: corpus {args.corpus} not found (--corpus DIR)")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NNVTS_XLA_BACKEND": args.backend, "NNVTS_XLA_PRECISION": "highest"}
    common = ["--memory-limit", "0", "-j", str(args.jobs), "--shard", args.shard, "-q"]
    steps = []
    families = [flag for family in FAMILIES for flag in ("--family", family)]
    steps.append(run("families", [*nnvts(), "run", "--driver", "xla", "--specs", args.corpus, *families,
                                  "--oracle", "reference", *common, "--json", str(OUT / "families.json")],
                     env, OUT / "families.txt"))
    variant = ("nnvts.drivers.xla:gpu_default_precision" if args.backend != "cpu"
               else "nnvts.drivers.xla:cpu_default_precision")
    steps.append(run("precision self-test", [*nnvts(), "run", "--driver", variant, "--specs", args.corpus,
                                             "--family", "generated", "-k", PRECISION_SELECTION, "--memory-limit",
                                             "0", "--shard", args.shard, "-q", "--json", str(OUT / "precision.json")],
                     env, OUT / "precision.txt"))
    steps.append(run("bench", [*nnvts(), "bench", "--driver", "xla", "--runs", str(args.bench_runs), "--json"],
                     env, OUT / "bench.json"))
    steps.append(run("soak", [*nnvts(), "soak", "--driver", "xla", "--specs", "generated_tests", "--family",
                              "generated", "--duration", args.soak, "--memory-limit", "0",
                              "--json", str(OUT / "soak.json")], env, OUT / "soak.txt"))
    families_summary = run_summary(OUT / "families.json")
    precision_summary = run_summary(OUT / "precision.json")
    summary = {"backend": args.backend, "shard": args.shard, "steps": steps, "families": families_summary,
               "precision_self_test": precision_summary}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2))
    print()
    print(f"gpu-check summary (backend {args.backend}, corpus shard {args.shard}):")
    print("  families: " + (", ".join(f"{v} {k}" for k, v in families_summary.items() if v) or "no report"))
    caught = precision_summary.get("failed", 0) > 0
    verdict = ("caught (as it must be on a GPU)" if caught else
               "not caught (expected on a CPU; on a GPU the suite should have failed it)")
    print(f"  precision=default self-test: {verdict}: "
          + (", ".join(f"{v} {k}" for k, v in precision_summary.items() if v) or "no report"))
    for step in steps[2:]:
        print(f"  {step['step']}: exit status {step['status']} ({step['log']})")
    broken = families_summary.get("error", 0) + families_summary.get("crash", 0) + families_summary.get("timeout", 0)
    ok = bool(families_summary.get("passed")) and broken == 0 and all(s["status"] in (0, 1) for s in steps)
    print(f"  overall: {'ok' if ok else 'PROBLEMS'} (failed cases are findings; see the logs)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
