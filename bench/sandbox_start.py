"""What the driver sandbox costs per driver host start, and per case (bench/README.md, "Driver sandbox").

Per start: a host's whole life around a driver that does nothing (``/bin/true``
run by nnvts's namespace init, ``vts.ipc.contain``), from ``Popen`` to its
exit, the sandbox's preparation (mount plan, seccomp pipe, cgroup made and
removed) included, under each way a host can start:

* ``subreaper``: no namespaces (``NNVTS_NO_NAMESPACES=1``, what ``--in-process`` avoids too);
* ``unshare``: the PID/mount/network namespaces of ``vts.ipc.contain`` alone (before the sandbox);
* ``bwrap`` and ``nnvts``: the two sandboxes.

Rounds are interleaved, medians reported.  Per case: the sandbox adds no work to a call (the socket and the
pools are descriptors inherited once), which ``--cases`` checks with ``nnvts run`` over the bundled
hand-written specs, sandboxed and not, in one process each.

    .venv/bin/python -m bench.sandbox_start [--rounds 20] [--cases]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from vts.ipc import contain
from vts.ipc.sandbox.core import HostSandbox, SandboxKind, probe
from vts.ipc.sandbox.view import MountPlan


def _once(kind: str) -> float:
    read, write = os.pipe2(os.O_CLOEXEC)
    start = time.perf_counter()
    box = None
    if kind in ("bwrap", "nnvts"):
        box = HostSandbox(SandboxKind(kind, limits=probe().limits), False, 1 << 30,
                          MountPlan.for_host(["/bin/true"], ""))
        argv = box.wrap(contain.contained_argv((), 0, 1 << 30, write, ["/bin/true"], box.rlimit_tasks))
        fds = [write, *box.pass_fds]
    elif kind == "unshare":
        argv = contain.contained_argv(contain.probe(False).prefix, 0, 1 << 30, write, ["/bin/true"])
        fds = [write]
    else:
        argv, fds = ["/bin/true"], []
    process = subprocess.Popen(argv, pass_fds=fds, stdin=subprocess.DEVNULL)
    if box is not None:
        box.started()
    process.wait()
    if box is not None:
        box.close()
    elapsed = time.perf_counter() - start
    os.close(read)
    os.close(write)
    return elapsed


def starts(rounds: int) -> dict[str, float]:
    kinds = ["subreaper", "unshare"]
    if probe().name == "bwrap":
        kinds.append("bwrap")
    kinds.append("nnvts")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for kind in kinds:
        _once(kind)  # warm caches (the probes, the binaries)
    for _ in range(rounds):
        for kind in kinds:
            times[kind].append(_once(kind))
    return {kind: statistics.median(values) * 1000 for kind, values in times.items()}


def cases() -> dict[str, float]:
    """Seconds in cases (sum of case durations) of one ``nnvts run`` over specs/hand, per sandbox."""
    import json
    import tempfile

    found = {}
    for kind in ("none", probe().name):
        with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:
            report = os.path.join(folder, "r.json")
            env = dict(os.environ, NNVTS_SANDBOX=kind)
            subprocess.run([sys.executable, "-m", "cli", "run", "--family", "generated", "--json", report, "-q",
                            "specs"], env=env, check=False, capture_output=True)
            with open(report, encoding="utf-8") as handle:
                data = json.load(handle)
            found[kind] = sum(case.get("duration", 0) for case in data["cases"]) / max(1, len(data["cases"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cases", action="store_true")
    args = parser.parse_args()
    print(os.popen("uptime").read().strip())
    print(f"sandbox here: {probe().describe()}")
    for kind, ms in starts(args.rounds).items():
        print(f"host start, {kind:10}: {ms:7.1f} ms (median of {args.rounds})")
    if args.cases:
        for kind, seconds in cases().items():
            print(f"time per case, sandbox {kind:6}: {seconds * 1000:.2f} ms")


if __name__ == "__main__":
    main()
