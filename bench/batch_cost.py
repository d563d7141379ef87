"""What a validation case costs the harness and the driver host, with and without ``BATCH`` (protocol revision 3).

Run standalone from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.batch_cost
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.batch_cost --rounds 9 --drivers sample_c

The validation family's model-mutation cases of the hand ADD model (126 cases: each a
``get_supported_operations`` and a ``prepare_model`` of an invalid model, both refused), run through an
``IsolatedRunner`` as ``nnvts run`` runs them, in three ways, interleaved round by round so the machine's
other work hits all alike:

* ``one by one``: no call sent ahead (``send_ahead`` off, the harness asks for no feature): two round
  trips a case, the protocol's full cost;
* ``sent ahead``: the next 8 mutations sent ahead one call a message (the harness asks for no feature, as
  with a revision-2 driver): the sweep before revision 3;
* ``batched``: the harness asks for ``batch``: four mutations to a message ahead, a case alone sends its
  two calls in one message.

Per case, the harness's CPU (this process: the runner, the family, encoding, the protocol) and the
driver host's (``/proc/PID/schedstat`` of the host process, uncontained: ``NNVTS_NO_NAMESPACES=1``), medians
of the rounds.  Against the C sample (``make sample-driver``) the host's CPU is nearly all protocol: its
own validation is a few microseconds; against the reference the host's CPU includes the driver's own
validation (Python).  Read ratios of one sitting; ``uptime`` is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ["NNVTS_NO_NAMESPACES"] = "1"

from tests.conftest import hand_add_float  # noqa: E402
from vts.families.base import RunOptions  # noqa: E402
from vts.families.validation.family import ValidationFamily  # noqa: E402
from vts.ipc import opening  # noqa: E402
from vts.ipc.process import HostProcess  # noqa: E402
from vts.model.casemodel import parse_spec  # noqa: E402
from vts.results import Verdict  # noqa: E402
from vts.run.isolated import IsolatedRunner  # noqa: E402

C_DRIVER = os.path.join(ROOT, "nnvts", "drivers", "sample_c", "sample_driver")
VARIANTS = ("one by one", "sent ahead", "batched")


def _host_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``'s main thread, in nanoseconds' resolution (``/proc/PID/schedstat``;
    ``/proc/PID/stat`` counts clock ticks, 10 ms, too coarse for a few hundred cases).  The host serves
    the sweep's calls on its main thread, the C sample has no other."""
    with open(f"/proc/{pid}/schedstat", encoding="ascii") as handle:
        return int(handle.read().split()[0]) / 1e9


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _start(spec: str, batched: bool) -> HostProcess:
    # No aidl:N asked: the drivers are judged as HAL 1.3, the sweep's cases all run (as the figures always had it).
    opening.WANTED_FEATURES = (opening.p.BATCH_FEATURE,) if batched else ()
    host = HostProcess(spec)
    host.start()
    return host


def _sweep(host: HostProcess, send_ahead: bool) -> tuple[int, float, float]:
    """(cases, harness CPU s, host CPU s) of one pass over the model mutations."""
    family = ValidationFamily()
    (model,) = parse_spec(hand_add_float())
    cases = [case for case in family.model_cases(model, "<inline>") if case.config.get("kind") == "model"]
    runner = IsolatedRunner(host.device, RunOptions(case_timeout=60.0, send_ahead=send_ahead), host=host)
    pid = host.driver_pid()
    assert pid is not None
    harness, driver = _self_cpu(), _host_cpu(pid)
    for case in cases:
        result = runner.run_case(family, case)
        if result.verdict is not Verdict.PASSED:
            raise SystemExit(f"{case.name}: {result.verdict.value}: {result.reason}")
    return len(cases), _self_cpu() - harness, _host_cpu(pid) - driver


def measure(spec: str, rounds: int) -> dict[str, tuple[float, float]]:
    hosts = {"one by one": _start(spec, False), "sent ahead": _start(spec, False), "batched": _start(spec, True)}
    try:
        assert hosts["batched"].device.connection.features == {opening.p.BATCH_FEATURE}
        for variant, host in hosts.items():
            _sweep(host, variant != "one by one")  # warm up
        samples: dict[str, list[tuple[float, float]]] = {variant: [] for variant in VARIANTS}
        for _ in range(rounds):
            for variant in VARIANTS:
                cases, harness, driver = _sweep(hosts[variant], variant != "one by one")
                samples[variant].append((harness / cases, driver / cases))
    finally:
        for host in hosts.values():
            host.stop()
    return {variant: (statistics.median(h for h, _ in rows), statistics.median(d for _, d in rows))
            for variant, rows in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (medians are reported)")
    parser.add_argument("--drivers", default="sample_c,reference", help="sample_c and/or reference")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    started = time.monotonic()
    for name in filter(None, args.drivers.split(",")):
        if name == "sample_c" and not os.access(C_DRIVER, os.X_OK):
            print("sample_c: not built (make sample-driver)")
            continue
        spec = f"exec:{C_DRIVER}" if name == "sample_c" else "reference"
        figures = measure(spec, args.rounds)
        base_h, base_d = figures["one by one"]
        print(f"{name}: per validation model-mutation case, medians of {args.rounds} interleaved rounds")
        print(f"  {'variant':<11} {'harness us':>11} {'host us':>9} {'harness vs one by one':>22}")
        for variant, (harness, driver) in figures.items():
            print(f"  {variant:<11} {harness * 1e6:11.1f} {driver * 1e6:9.1f} {harness / base_h:21.2f}x")
        del base_d
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min); {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
