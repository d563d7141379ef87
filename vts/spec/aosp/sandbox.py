"""Running the tree's generator in a child interpreter, bounded in time, memory and output.

The generator and the specs are code from the tree being imported, so they
run in a fresh interpreter (``child.py``) that nnvts treats as hostile: a
temporary working folder holding a copy of the generator and of the specs
(so nothing it does by relative path reaches SRC or DIR), RLIMIT_AS and
RLIMIT_CPU set in the child, no file may grow (RLIMIT_FSIZE 0) and an audit
hook (``child.wall``, no state a spec could switch off) ends the child at
the first write, spawn, forbidden import, look into the interpreter's state
or read outside the import's folder and Python's libraries.

That hook is the second wall.  The first is the sandbox drivers run in
(``vts.ipc.sandbox.launch``): where the machine has one, an unprivileged
user (``nobody`` for a root harness), a read-only view of the filesystem in
which the import's temporary folder is all it sees of the harness's
temporary files, a private ``/tmp``, an allowlisted environment, no network,
a seccomp filter, a PID namespace (nothing it starts outlives it) and limits
on the whole tree; else contain's namespaces (PID, mount, network); else
only a session of its own, whose process group is killed (a process that
leaves the session survives: said by the notice ``nnvts corpus import``
prints).  The parent adds a wall-clock limit per spec, bounds what the child
prints and what it sends back, and kills the whole process group on any
breach.  A spec that breaks a limit fails alone: the specs after it run in a
fresh child.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vts.ipc import contain
from vts.ipc.sandbox import probe
from vts.ipc.sandbox.launch import Launch, confined

_CHILD = Path(__file__).with_name("child.py")
#: child.py's exit status and output mark for a spec its audit hook stopped (kept in step with child.py,
#: which imports nothing of nnvts).
VIOLATION_STATUS = 86
VIOLATION_MARK = "nnvts-violation: "


def isolation() -> str:
    """The wall around the generator on this machine, in words (``nnvts corpus import`` prints it)."""
    kind = probe()
    if kind.sandboxed:
        return kind.describe()
    if contain.probe(False).available:
        return f"a PID namespace only ({kind.reason})"
    return f"a session of its own only ({kind.reason})"


def start_confined(root: Path, command: Callable[[int], list[str]], results_fd: int, env: dict[str, str],
                   memory_bytes: int) -> tuple[subprocess.Popen[bytes], Launch]:
    """``command(fd)`` started in the drivers' sandbox, seeing ``root`` (read-only) and ``results_fd`` as ``fd``.

    Its output (stdout and stderr together) is the process's ``stdout`` pipe.  The caller closes
    ``results_fd``, waits for the process, then ``_release``s the launch.
    """
    launch = confined(command(3), results_fd, memory_bytes, network=False, pythonpath="", reads=[str(root)])
    argv = launch.argv or command(results_fd)
    if launch.box is not None:
        env = launch.box.environment(env)
    try:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, pass_fds=launch.pass_fds, start_new_session=True)
    except OSError:
        _release(launch)
        raise
    finally:
        launch.started()
    return proc, launch


def _release(launch: Launch) -> None:
    """After the confined process ended: its report pipe (its init's lifeline) and its sandbox go."""
    if launch.report >= 0:
        os.close(launch.report)
        launch.report = -1
    if launch.box is not None:
        launch.box.close()


def _open_to_others(root: Path) -> None:
    """The import's folder readable by the sandbox's user (a temporary folder is its creator's alone): it holds
    copies of the tree's files, nothing of the harness's."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one spec may use; a spec past any of them fails with a one-line reason."""

    seconds: float = 120.0  # wall clock and CPU, per spec
    memory_mib: int = 2048  # address space of the child interpreter
    output_bytes: int = 1 << 20  # what a spec may print (stdout and stderr together)
    result_bytes: int = 1 << 30  # the JSON of one spec's generated cases


@dataclass(frozen=True, slots=True)
class Outcome:
    """One spec file after the generator ran it: its cases, or why it has none."""

    file: str  # the .mod.py file name
    spec_name: str | None = None  # the generator's name for it (the file name up to the first dot)
    cases: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None  # set when the spec failed

    @property
    def failed(self) -> bool:
        return self.reason is not None


OnOutcome = Callable[[Outcome], None]


def run_specs(generator: Path, version: str, specs: Sequence[Path], limits: Limits,
              on_outcome: OnOutcome | None = None) -> list[Outcome]:
    """Run every spec of one version folder, in sorted order, in as few fresh children as failures allow.

    ``on_outcome`` sees each spec as soon as the child has generated it, so
    the caller's conversion runs while the child generates the next spec;
    the outcomes are also returned (without their cases when a callback
    took them, to keep memory flat).
    """
    remaining = sorted(specs, key=lambda p: str(p))
    outcomes: list[Outcome] = []

    def deliver(outcome: Outcome) -> None:
        if on_outcome is None:
            outcomes.append(outcome)
        else:
            on_outcome(outcome)
            outcomes.append(Outcome(outcome.file, outcome.spec_name, [], outcome.reason))

    while remaining:
        run = _ChildRun(generator, version, remaining, limits, deliver)
        done = run.run()
        if not done:  # the generator did not even start: every spec shares its fate
            reason = run.death_reason or "the generator produced nothing"
            for p in remaining:
                deliver(Outcome(p.name, reason=f"the generator failed before the spec ran: {reason}"))
            break
        remaining = [p for p in remaining if p.name not in done]
    return outcomes


class _ChildRun:
    """One child interpreter over a list of specs; gives back the outcomes of the specs it reached."""

    def __init__(self, generator: Path, version: str, specs: list[Path], limits: Limits,
                 deliver: OnOutcome) -> None:
        self.deliver = deliver
        self.done: set[str] = set()
        self.generator = generator
        self.version = version
        self.specs = specs
        self.limits = limits
        self.death_reason: str | None = None
        self._tail = b""
        #: Whether the child ran under contain's init, which reports a death by signal N as status 128 + N.
        self._contained = False

    def _give(self, outcome: Outcome) -> None:
        self.done.add(outcome.file)
        self.deliver(outcome)

    def run(self) -> set[str]:
        """Run the child; the files it reached (each delivered once, failed or not)."""
        with tempfile.TemporaryDirectory(prefix="nnvts-aosp-") as tmp:
            root = Path(tmp)
            gen_dir, spec_dir, work = root / "generator", root / "specs" / self.version, root / "work"
            gen_dir.mkdir()
            spec_dir.mkdir(parents=True)
            work.mkdir()
            for source in sorted(self.generator.glob("*.py")):
                shutil.copyfile(source, gen_dir / source.name)
            for spec in self.specs:
                shutil.copyfile(spec, spec_dir / spec.name)
            self._spawn(gen_dir, spec_dir, work)
            return self.done

    def _spawn(self, gen_dir: Path, spec_dir: Path, work: Path) -> None:
        read_fd, write_fd = os.pipe()
        root = gen_dir.parent
        _open_to_others(root)

        def command(results_fd: int) -> list[str]:
            job = {"generator": str(gen_dir), "spec_dir": str(spec_dir), "results_fd": results_fd,
                   "root": str(root), "cpu_seconds": max(1, int(self.limits.seconds)),
                   "memory_bytes": self.limits.memory_mib << 20}
            return [sys.executable, "-I", "-B", str(_CHILD), json.dumps(job)]

        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TMPDIR": str(work),
               "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        try:
            proc, launch = start_confined(root, command, write_fd, env, self.limits.memory_mib << 20)
        finally:
            os.close(write_fd)
        self._contained = launch.argv is not None
        try:
            self._collect(proc, read_fd)
        finally:
            os.close(read_fd)
            _kill(proc)
            _release(launch)

    def _collect(self, proc: subprocess.Popen[bytes], read_fd: int) -> None:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(read_fd, selectors.EVENT_READ, "results")
        sel.register(proc.stdout, selectors.EVENT_READ, "output")
        buffer = bytearray()
        current: str | None = None
        printed = 0
        deadline = time.monotonic() + self.limits.seconds
        open_streams = 2
        while open_streams:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                return self._fail(proc, current, f"ran past the {self.limits.seconds:g} s time limit")
            for key, _ in sel.select(min(timeout, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                if key.data == "output":
                    printed += len(chunk)
                    self._tail = (self._tail + chunk)[-2000:]
                    if printed > self.limits.output_bytes:
                        return self._fail(proc, current,
                                          f"printed more than {_size(self.limits.output_bytes)}")
                    continue
                if b"\n" not in chunk:  # most of a big spec's cases: no line ends yet, nothing to parse
                    buffer += chunk
                    if len(buffer) > self.limits.result_bytes:
                        return self._fail(proc, current,
                                          f"generated more than {_size(self.limits.result_bytes)} of cases")
                    continue
                buffer += chunk
                lines = buffer.split(b"\n")
                buffer = bytearray(lines.pop())
                for line in lines:
                    message = _message(line, {p.name for p in self.specs} - self.done)
                    if message is None:  # a spec wrote to the results pipe itself: its fault, not a result
                        return self._fail(proc, current, "wrote to the importer's results pipe")
                    if message["event"] == "begin":
                        current, printed = message["file"], 0
                        deadline = time.monotonic() + self.limits.seconds
                    elif message["event"] in ("spec", "failed"):
                        if message["file"] != current:
                            return self._fail(proc, current, "wrote to the importer's results pipe")
                        started = time.monotonic()
                        self._give(Outcome(message["file"], message.get("spec_name"), message.get("cases", []),
                                           message.get("reason")))
                        deadline += time.monotonic() - started  # the caller's time is not the spec's
                        current = None
        status = proc.wait()
        if current is not None:  # died inside a spec
            self._give(Outcome(current, reason=self._death(status)))
        elif status != 0:
            self.death_reason = self._death(status)

    def _fail(self, proc: subprocess.Popen[bytes], current: str | None, reason: str) -> None:
        _kill(proc)
        if current is None:
            self.death_reason = reason
        else:
            self._give(Outcome(current, reason=reason))

    def _death(self, status: int) -> str:
        last = [line for line in self._tail.decode("utf-8", "replace").splitlines() if line.strip()]
        if status == VIOLATION_STATUS and last and last[-1].startswith(VIOLATION_MARK):
            return last[-1][len(VIOLATION_MARK):].strip()[:300]
        if self._contained and status > 128:  # contain's init reports a signal's death as 128 + its number
            status = -(status - 128)
        if status == -signal.SIGXCPU:
            return f"ran past the {self.limits.seconds:g} s CPU limit"
        if status == -signal.SIGKILL:
            return "was killed (out of memory?)"
        if status < 0:
            return f"crashed the interpreter (signal {signal.Signals(-status).name})"
        detail = f": {last[-1].strip()[:200]}" if last else ""
        if "MemoryError" in detail:
            return "exhausted the memory limit (MemoryError)"
        return f"the interpreter exited with status {status}{detail}"


def _message(line: bytes, expected_files: set[str]) -> dict[str, Any] | None:
    """A well-formed message of child.py's protocol, or None.

    The spec runs in the child and could write to the results pipe itself,
    so nothing in a message is trusted: the shape is checked here, the cases
    when they are converted.
    """
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("event") == "done":
        return {"event": "done"} if isinstance(message, dict) else None
    if message.get("file") not in expected_files:
        return None
    event = message.get("event")
    if event == "spec" and isinstance(message.get("cases"), list) and isinstance(message.get("spec_name"), str):
        return message
    if event == "failed" and isinstance(message.get("reason"), str):
        return {**message, "reason": " ".join(message["reason"].split())[:500]}
    return message if event == "begin" else None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End the child and anything it started (it leads its own session)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} bytes"
