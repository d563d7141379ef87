"""Validating the command line: parameter types that refuse hostile values, and one-line usage errors.

Every value on the command line comes from outside (a CI script, a typo, a
hostile tester), so each option is checked while it is parsed and a bad one
is a usage error: exit status 2, one line on stderr, no traceback.  Click's
own types leave holes this closes: ``FloatRange`` accepts NaN (every
comparison with NaN is false) and infinity, paths may be empty, an input
file may be a FIFO that blocks the first read, and a driver reference is
only discovered to be unusable once a host process fails to start.

``NnvtsGroup`` makes every command of the group (including ones added
later) print click's usage errors as one line and refuse NUL bytes and
empty option values.  Only click and the standard library are imported here:
``nnvts --help`` must stay fast.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef

EXIT_USAGE = 2


class OneLineUsageError(click.ClickException):
    """A usage error shown as ``nnvts: error: MESSAGE`` on one line (exit status 2)."""

    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        click.echo(f"nnvts: error: {one_line(self.format_message())}", err=True)


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of spaces folded: CI logs grep one line per error."""
    return " ".join(text.split())


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    try:
        yield
    except click.UsageError as error:
        raise OneLineUsageError(error.format_message()) from None


def _option_label(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return "/".join(param.opts)
    return param.human_readable_name


class NnvtsCommand(click.Command):
    """A command whose arguments may hold no NUL byte and no empty option value."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for arg in args:
            if "\0" in arg:
                raise click.UsageError(f"argument {arg!r} contains a NUL byte", ctx)
        rest = super().parse_args(ctx, args)
        for param in self.get_params(ctx):
            value = ctx.params.get(param.name or "")
            values = value if isinstance(value, (tuple, list)) else (value,)
            source = ctx.get_parameter_source(param.name or "")
            if source is click.core.ParameterSource.COMMANDLINE and any(v == "" for v in values):
                raise click.UsageError(f"{_option_label(param)}: expected a value, got an empty string", ctx)
        return rest


class NnvtsGroup(click.Group):
    """A group whose commands are ``NnvtsCommand``s and whose usage errors are one line."""

    command_class = NnvtsCommand

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Commands defined in other modules must be ``NnvtsCommand``/``NnvtsGroup`` too (hostile-argument rules)."""
        if not isinstance(cmd, (NnvtsCommand, NnvtsGroup)):
            raise TypeError(f"command {cmd.name!r} must be defined with cls=NnvtsCommand (or NnvtsGroup)")
        super().add_command(cmd, name)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _one_line_usage_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line_usage_errors():
            try:
                return super().invoke(ctx)
            except OSError as error:
                if error.errno == errno.EPIPE:  # a closed pipe (nnvts list | head): click's own handling
                    raise
                # A full disk or a vanished directory: say so on one line, not in a traceback.
                where = f" ({error.filename})" if error.filename else ""
                raise OneLineUsageError(f"input/output error: {error.strerror or error}{where}") from None


# --- numbers ----------------------------------------------------------------------------------


class FiniteFloat(click.ParamType):
    """A finite float within ``[low, high]`` (ends open when asked); NaN and infinities refused."""

    name = "float"

    def __init__(self, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 high_open: bool = False) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from vts.run.option_checks import OptionValueError, finite_float

        try:
            return finite_float(value, self.low, self.high, low_open=self.low_open, high_open=self.high_open)
        except OptionValueError as error:
            self.fail(str(error), param, ctx)

    def _describe(self) -> str:
        from vts.run.option_checks import describe_range

        return describe_range(self.low, self.high, self.low_open, self.high_open)

    def __repr__(self) -> str:
        return f"FiniteFloat({self._describe()})"


# --- files ------------------------------------------------------------------------------------


class ResultsFile(click.ParamType):
    """An existing regular file of any size (a results stream of a large run is hundreds of MB): read as it streams.

    Checked with ``stat`` only, never opened here: a FIFO or device would block or never end.
    """

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        path = os.fspath(value)
        self._regular(path, param, ctx)
        return path

    def _regular(self, path: str, param: click.Parameter | None, ctx: click.Context | None) -> os.stat_result:
        from vts.run.option_checks import OptionValueError, regular_file

        try:
            return regular_file(path)
        except OptionValueError as error:
            self.fail(str(error), param, ctx)


class InputFile(ResultsFile):
    """An existing regular UTF-8 text file of at most ``max_bytes`` (read whole by the option's user).

    Read as the pytest plugin reads its lists (``vts.run.option_checks.read_input_file``): never blocking.
    """

    def __init__(self, max_bytes: int = 16 << 20) -> None:
        self.max_bytes = max_bytes

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from vts.run.option_checks import OptionValueError, read_input_file

        path = os.fspath(value)
        try:
            read_input_file(path, self.max_bytes)
        except OptionValueError as error:
            self.fail(str(error), param, ctx)
        return path


class OutputFile(click.ParamType):
    """A file path a report can be written to: not a directory; its directory exists or can be made."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from vts.run.option_checks import OptionValueError, output_file

        try:
            return output_file(os.fspath(value))
        except OptionValueError as error:
            self.fail(str(error), param, ctx)


class OutputDir(click.ParamType):
    """A directory to write into: an existing directory, or a path whose first existing ancestor is one."""

    name = "directory"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        path = os.fspath(value)
        existing = os.path.abspath(path)
        while not os.path.lexists(existing):
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            self.fail(f"{path!r}: {existing!r} is not a directory", param, ctx)
        if not os.access(existing, os.W_OK | os.X_OK):
            self.fail(f"{path!r}: cannot write in {existing!r}", param, ctx)
        return path


class SocketPath(click.ParamType):
    """A Unix socket path to listen on: absent, or a stale socket (replaced); never another file,
    which binding would first delete.  Its directory must exist, and the path fit ``sun_path`` with one
    byte to spare: the socket is bound as PATH~ and renamed once it listens (``vts.ipc.listener``)."""

    name = "path"
    MAX_BYTES = 106  # sun_path is 108 bytes on Linux, NUL included, and the staging name is one byte longer

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        path = os.fspath(value)
        if len(os.fsencode(path)) > self.MAX_BYTES:
            self.fail(f"{path!r} is longer than a Unix socket path may be ({self.MAX_BYTES} bytes)", param, ctx)
        for taken in (path, path + "~"):
            if os.path.lexists(taken) and not stat.S_ISSOCK(os.lstat(taken).st_mode):
                self.fail(f"{taken!r} exists and is not a socket (it would be replaced)", param, ctx)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            self.fail(f"{path!r}: no directory {parent!r}", param, ctx)
        if not os.access(parent, os.W_OK | os.X_OK):
            self.fail(f"{path!r}: cannot create a socket in {parent!r}", param, ctx)
        return path


# --- drivers and descriptors ------------------------------------------------------------------


class DriverParam(click.ParamType):
    """``NAME``, ``module:attr`` or (when allowed) ``exec:COMMAND``, checked without loading the driver.

    An installed name must exist; a module must be importable (found, not
    executed, so a driver meant for a host process never runs in the
    harness); an ``exec:`` command must be non-empty with balanced quoting.
    """

    name = "driver"

    def __init__(self, allow_exec: bool = True) -> None:
        self.allow_exec = allow_exec

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> DriverRef:
        from vts.ipc.drivers import DriverNotFound, DriverRef  # here, not at the top: keeps --help fast

        if isinstance(value, DriverRef):
            return value
        try:
            ref = DriverRef(str(value))
        except DriverNotFound as error:
            self.fail(str(error), param, ctx)
        problem = driver_problem(ref, self.allow_exec)
        if problem:
            self.fail(problem, param, ctx)
        return ref


def driver_problem(ref: DriverRef, allow_exec: bool = True) -> str | None:
    """Why the well-formed ``ref`` cannot name a usable driver here, or None when it may."""
    from vts.ipc.drivers import DriverNotFound  # here, not at the top: keeps --help fast

    if ref.is_exec:
        if not allow_exec:
            return f"{ref.spec!r} is a program: give an installed driver name or module:attr"
        return None  # a program that is missing fails its host start, with the OS's reason
    if ref.kind == "module":
        return _module_problem(ref.spec.partition(":")[0])
    try:
        ref.target  # noqa: B018 - resolves installed names
    except DriverNotFound as error:
        return str(error)
    return None


def _module_problem(module: str) -> str | None:
    import importlib.util

    try:
        found = importlib.util.find_spec(module)
    except Exception as error:  # a parent package that fails to import, a bad name
        return f"cannot import driver module {module!r}: {type(error).__name__}: {error}"
    return None if found is not None else f"cannot import driver module {module!r}: no such module"


class SocketFd(click.ParamType):
    """An inherited file descriptor that is open and is a socket."""

    name = "fd"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            fd = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a descriptor number", param, ctx)
        if not 0 <= fd < 1 << 20:
            self.fail(f"{fd} is not a descriptor number", param, ctx)
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            self.fail(f"descriptor {fd} is not open", param, ctx)
        if not stat.S_ISSOCK(mode):
            self.fail(f"descriptor {fd} is not a socket", param, ctx)
        return fd


def bounded_int(low: int, high: int) -> click.IntRange:
    """``click.IntRange`` with both ends: a huge count (workers, threads, sizes) is a usage error too."""
    return click.IntRange(min=low, max=high)


def check_outputs_spare_inputs(outputs: dict[str, str | None], inputs: list[str], command: str = "run") -> None:
    """A usage error when two outputs name one file, or an output names an input (a spec, a list, a shard):
    writing the report would overwrite what the command reads, or one report the other
    (``vts.run.option_checks.check_outputs_spare_inputs``: by real path, device and inode)."""
    from vts.run.option_checks import OptionValueError
    from vts.run.option_checks import check_outputs_spare_inputs as check

    try:
        check(outputs, inputs, command)
    except OptionValueError as error:
        raise OneLineUsageError(str(error)) from None


def check_out_dir_spares_specs(out_dir: str, spec_files: list[str]) -> None:
    """A usage error when ``generate --out`` is a directory holding specs it reads (stale files there
    are removed, so the specs would be overwritten or deleted)."""
    out = os.path.realpath(out_dir)
    clashing = [f for f in spec_files if os.path.dirname(os.path.realpath(f)) == out]
    if clashing:
        raise OneLineUsageError(f"--out {out_dir!r} holds specs being read ({clashing[0]}): generate would "
                                "overwrite or remove them; write to another directory")


class DriverOptionParam(click.ParamType):
    """``KEY=VALUE`` of ``--driver-option``, parsed here once (whether the driver accepts it is checked
    against the driver before anything runs)."""

    name = "key=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        from vts.ipc.driver_options import DriverOptionError, parse_driver_option  # keeps --help fast

        if isinstance(value, tuple):
            return value
        try:
            return parse_driver_option(str(value))
        except DriverOptionError as error:
            self.fail(str(error), param, ctx)


#: ``--driver-option``, the same on every command that takes ``--driver``.
driver_option = click.option(
    "--driver-option", "driver_options", type=DriverOptionParam(), multiple=True, metavar="KEY=VALUE",
    help="An option of the driver (repeatable); `nnvts info` lists those it accepts, with defaults.")


def configured_driver(driver: DriverRef, options: Sequence[tuple[str, str]], fail: Callable[[str], Any]) -> DriverRef:
    """``driver`` with its ``--driver-option`` values, checked against what it accepts (``fail`` when not)."""
    from vts.ipc.drivers import DriverNotFound
    from vts.run.assemble import check_driver
    from vts.run.plan import driver_ref

    try:
        ref = driver_ref(driver, options)
        check_driver(ref)
    except DriverNotFound as error:
        fail(str(error))
        raise
    return ref
