"""The child side of the import: run Android's generator on a list of ``.mod.py`` specs.

Run as a script by ``sandbox.py`` in a fresh interpreter, in a temporary
working folder, with the copy of the generator of the tree being imported on
``sys.path``.  It imports nothing of nnvts (the tree's generator and numpy
only), so that a hostile spec sees no harness state.  It mirrors
``test_generator.Run`` -- one interpreter, one exec scope, the specs in
sorted order, ``Example.DumpAllExamples`` with every declared and implicit
variation -- but hands each generated case to ``dump_case`` instead of the
C++ printer and writes it as JSON to the results pipe.

Protocol (one JSON object per line on the results fd):
``{"event": "begin", "file": F}`` before a spec runs, then either
``{"event": "spec", "file": F, "spec_name": S, "cases": [...]}`` or
``{"event": "failed", "file": F, "reason": R}``; ``{"event": "done"}`` last.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

#: Audit events that change the file system or start programs: a spec may do none of them.
_FORBIDDEN_EVENTS = frozenset({
    "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.symlink", "os.link", "os.truncate",
    "os.chmod", "os.chown", "os.utime", "os.chdir", "os.chroot", "os.mkfifo", "os.mknod",
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.startfile",
    "os.putenv", "os.unsetenv", "os.kill", "os.killpg",
    "subprocess.Popen", "pty.spawn", "socket.connect", "socket.bind", "socket.sendto",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
    "shutil.rmtree", "shutil.chown", "shutil.make_archive", "shutil.unpack_archive",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.addressof", "ctypes.cdata", "ctypes.call_function",
    "sys.addaudithook", "resource.setrlimit", "resource.prlimit", "signal.pthread_kill",
    "fcntl.ioctl", "mmap.__new__",
})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


#: Audit events that look into the interpreter's own state (every object, other threads' frames, tracing): how
#: a spec would find the importer's objects and change them.  Forbidden as writes are.  ``sys._getframe`` is
#: not among them: ``collections.namedtuple`` calls it (V1_2/cast.mod.py makes one), and a spec walking its
#: own frames up finds the importer's ``main`` and no switch (the hook keeps no state).
_INTROSPECTION_EVENTS = frozenset({
    "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.set_asyncgen_hooks",
    "cpython._PySys_ClearAuditHooks",
})
#: Modules a spec may not import: ways to start a program or call C without an audit event.
_FORBIDDEN_MODULES = frozenset({"_posixsubprocess", "subprocess", "multiprocessing", "_multiprocessing", "ctypes",
                                "_ctypes", "_xxsubinterpreters", "_testcapi", "_testinternalcapi", "pty", "socket",
                                "_socket", "asyncio"})
#: Exit status of a child that a spec's violation ended (the reason is its last line of output).
VIOLATION_STATUS = 86
VIOLATION_MARK = "nnvts-violation: "


def wall(readable: Sequence[str]) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook that is the generator's second wall (the sandbox around the child is the first).

    It has no state a spec could change: once installed (``sys.addaudithook``, never removable) it refuses
    every write, spawn, forbidden import and look into the interpreter's state, and every read outside
    ``readable`` (the import's own folder, Python's libraries).  The first violation ends the child at once
    (``VIOLATION_STATUS``, the reason on its last line of output): a spec cannot catch it and go on.
    """
    roots = tuple(os.path.join(os.path.realpath(r), "") for r in readable)
    allowed = frozenset({os.devnull, "/dev/urandom", os.path.realpath(__file__)})  # this file: for tracebacks

    def outside(path: object) -> bool:
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return True
        return real not in allowed and not (real + os.sep).startswith(roots)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        what = None
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes and not isinstance(path, int):
                what = f"writes the file {os.fsdecode(path)!r}"
            elif outside(path):
                what = f"reads the file {os.fsdecode(path)!r} outside the import's folder"
        elif event in ("os.listdir", "os.scandir") and args and args[0] is not None and outside(args[0]):
            what = f"lists the folder {os.fsdecode(args[0])!r} outside the import's folder"
        elif event == "import" and args and str(args[0]).split(".")[0] in _FORBIDDEN_MODULES:
            what = f"imports {args[0]}"
        elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__":
            what = f"rewrites code ({event} {args[1]})"
        elif (event in _FORBIDDEN_EVENTS or event in _INTROSPECTION_EVENTS
              or event.startswith(("os.exec", "os.spawn", "os.posix_spawn"))):
            what = f"does what a spec may not ({event})"
        if what is not None:
            os.write(2, f"\n{VIOLATION_MARK}{what}\n".encode("utf-8", "replace"))
            os._exit(VIOLATION_STATUS)

    return hook


#: Longer value lists travel as raw little-endian bytes: most of a folder's data, and 10x cheaper than
#: JSON numbers to write and parse.  The parent holds the same threshold for its own {b64} form.
PACK_ABOVE = 256


def _values(operand: Any, tg: Any) -> Any:
    """The operand's data as the C++ printer reads it: float (exact doubles), bool or int (truncated)."""
    value = operand.value
    if value is None:
        return None
    if operand.type.type == "SUBGRAPH":
        return [int(v) for v in value]
    is_float, is_bool = operand.type.IsFloat(), operand.type.IsBool()
    if len(value) > PACK_ABOVE:
        packed = _pack(value, is_float, is_bool)
        if packed is not None:
            return packed
    if is_float:
        return [float(v) for v in value]
    if is_bool:
        return [bool(v) for v in value]
    return [int(v) for v in value]


def _pack(value: Any, is_float: bool, is_bool: bool) -> dict[str, str] | None:
    """A long list as raw bytes, converted by numpy as float()/bool()/int() would (None: not plain numbers)."""
    import numpy as np  # the generator has imported it already

    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if array.ndim != 1 or array.dtype.kind not in "biuf":
        return None
    if is_float:
        kind, data = "f8", array.astype("<f8")
    elif is_bool:
        kind, data = "b1", (array != 0).astype("u1")
    elif array.dtype.kind == "f":
        if not np.isfinite(array).all() or np.abs(array).max(initial=0) >= 2.0**63:
            return None
        kind, data = "i8", np.trunc(array).astype("<i8")  # int(x) truncates toward zero
    elif array.dtype.kind == "u" and array.max(initial=0) >= 2**63:
        return None
    else:
        kind, data = "i8", array.astype("<i8")
    return {kind: base64.b64encode(data.tobytes()).decode("ascii")}


def _operand(operand: Any, tg: Any) -> dict[str, Any]:
    extra = operand.type.extraParams
    channel = None
    if extra is not None and not getattr(extra, "hide", False):
        channel = {"dim": int(extra.channelDim), "scales": [float(s) for s in extra.scales]}
    return {
        "name": str(operand.name),
        "type": str(operand.type.type),
        "dims": [int(d) for d in operand.type.dimensions],
        "scale": float(operand.type.scale),
        "zero_point": int(operand.type.zeroPoint),
        "channel_quant": channel,
        "lifetime": str(operand.lifetime),
        "ignored": isinstance(operand, tg.IgnoredOutput),
        "value": _values(operand, tg),
    }


def _subgraph(model: Any, tg: Any) -> dict[str, Any]:
    return {
        "operands": [_operand(o, tg) for o in model.operands],
        "operations": [{"type": str(op.optype), "inputs": [i.model_index for i in op.ins],
                        "outputs": [o.model_index for o in op.outs]} for op in model.operations],
        "inputs": [o.model_index for o in model.GetInputs()],
        "outputs": [o.model_index for o in model.GetOutputs()],
    }


def dump_case(example: Any, tg: Any) -> dict[str, Any]:
    """One generated case: what ``example_generator.GetModelStruct`` gives C++, as plain data."""
    model = example.model
    return {
        "test_name": str(example.testName),
        "main": _subgraph(model, tg),
        "referenced": [_subgraph(m, tg) for m in model.GetReferencedModels()],
        "relaxed": bool(model.isRelaxed),
        "multinomial_tolerance": float(example.expectedMultinomialDistributionTolerance),
        "expect_failure": bool(example.expectFailure),
        "version": None if model.version is None else str(model.version),
    }


def _unaudited_deepcopy_ids() -> None:
    """Let ``copy.deepcopy`` key its memo without an audit event per object.

    The generator deep-copies a model per variation; every ``id()`` call
    raises a ``builtins.id`` audit event, and with the guard's hook installed
    those 3.6 million Python calls (V1_0 alone) took a third of the import.
    ``object.__hash__`` is the same one-to-one function of a live object's
    address and raises no event, so the memo keys stay unique.
    """
    import copy

    copy.id = object.__hash__  # type: ignore[attr-defined]


def _limit_resources(memory_bytes: int, cpu_seconds: int) -> None:
    """Address space and CPU bounded, no file may grow, no core dump: set before the generator is imported
    (a spec may not set limits; the parent's wall clock bounds each spec's own time)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _reason(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "exhausted the memory limit (MemoryError)"
    if isinstance(error, RecursionError):
        return "exceeded the recursion limit (RecursionError)"
    text = str(error).strip().splitlines()
    tb = traceback.extract_tb(error.__traceback__)
    where = next((f"line {f.lineno}" for f in reversed(tb) if f.filename.endswith(".mod.py")), None)
    detail = f": {text[0][:200]}" if text else ""
    return f"raised {type(error).__name__}{detail}" + (f" ({where})" if where else "")


def main() -> None:
    """Read the job from argv, run every spec, stream the results."""
    job = json.loads(sys.argv[1])
    _limit_resources(job["memory_bytes"], job["cpu_seconds"] * max(1, len(os.listdir(job["spec_dir"]))) + 1)
    results = os.fdopen(job["results_fd"], "w", encoding="utf-8")

    def emit(obj: dict[str, Any]) -> None:
        results.write(json.dumps(obj, separators=(",", ":")))
        results.write("\n")
        results.flush()

    sys.path.insert(0, job["generator"])
    import test_generator as tg  # the tree's own generator, found at run time

    _unaudited_deepcopy_ids()
    exec_scope = tg.GetExecScope()
    tg.FileNames.InitializeFileLists(job["spec_dir"], None)
    import sysconfig

    paths = sysconfig.get_paths()
    readable = [job["root"], *(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)]
    sys.addaudithook(wall(readable))  # from here on, and for good
    while tg.FileNames.NextFile():
        file = os.path.basename(tg.FileNames.specFile)
        emit({"event": "begin", "file": file})
        cases: list[dict[str, Any]] = []
        reason = None
        text = tg.Read(tg.FileNames.specFile)
        try:
            exec(compile(text, tg.FileNames.specFile, "exec"), exec_scope)  # as Android's Run() does
            tg.Example.DumpAllExamples(DumpExample=lambda example, _fd, sink=cases: sink.append(dump_case(example, tg)),
                                       example_fd=True)
        except BaseException as error:  # SystemExit, KeyboardInterrupt too: all the spec's doing
            reason = _reason(error)
        if reason is None:
            emit({"event": "spec", "file": file, "spec_name": tg.FileNames.specName, "cases": cases})
        else:
            emit({"event": "failed", "file": file, "reason": reason})
    emit({"event": "done"})


if __name__ == "__main__":
    main()
