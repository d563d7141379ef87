"""The ``nnvts fuzz`` command: parsing and exit codes only (the work is in ``vts.fuzz.loop``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from vts.cli.duration import Duration
from vts.cli.params import (
    DriverParam,
    FiniteFloat,
    NnvtsCommand,
    OutputDir,
    OutputFile,
    bounded_int,
    configured_driver,
    driver_option,
)

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOTHING, EXIT_INTERRUPTED = 0, 1, 2, 5, 130
INSTALL_HINT = "nnvts fuzz needs Hypothesis: pip install 'nnvts[fuzz]' (or: pip install hypothesis)"


def _fail_usage(message: str) -> None:
    click.echo(f"nnvts: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.command(cls=NnvtsCommand)
@click.option("--driver", type=DriverParam(), default="reference", show_default=True,
              help="Driver: an installed name, module:attr, or exec:COMMAND.")
@driver_option
@click.option("--in-process", is_flag=True,
              help="Load the driver into the harness (fast; a segfault then ends the run).")
@click.option("--specs", "specs", multiple=True, metavar="PATH",
              help="Specs whose valid models are mutated (repeatable). Default: generated_tests/.")
@click.option("-k", "keyword", metavar="EXPR", help="Only base models whose case names match (as run -k).")
@click.option("--examples", type=bounded_int(1, 2**31 - 1), default=1000, show_default=True,
              help="Fuzzed models to generate (each with --requests-per-model requests when prepared).")
@click.option("--seed", type=bounded_int(0, 2**31 - 1), default=0, show_default=True,
              help="Seed of the first chunk; chunk i uses SEED+i (resume a run from its progress log).")
@click.option("--chunk", type=bounded_int(1, 2**31 - 1), default=1000, show_default=True,
              help="Examples per seeded chunk.")
@click.option("--time-budget", type=Duration(), metavar="DURATION", help="Stop after this long (90s, 10m, 1h).")
@click.option("--save-dir", type=OutputDir(), default="fuzz-failures", show_default=True,
              help="Where a failing input is saved as a spec (re-run: nnvts run --specs DIR -k NAME).")
@click.option("--requests-per-model", type=bounded_int(0, 1024), default=4, show_default=True)
@click.option("--max-models", type=bounded_int(1, 1 << 20), default=1000, show_default=True,
              help="Valid base models to load from the specs.")
@click.option("--timeout", "call_timeout", type=FiniteFloat(0, 3600, low_open=True), default=10.0, show_default=True,
              help="Seconds a driver call may take before it counts as a hang.")
@click.option("--shrink-budget", type=Duration(), default="60", show_default=True, metavar="DURATION",
              help="Time spent shrinking a failing input.")
@click.option("--memory-limit", "memory_limit", type=bounded_int(0, 1 << 30), default=4096, show_default=True,
              metavar="MIB", help="Address-space limit of the driver process in MiB (0: none).")
@click.option("--progress", "progress_path", type=OutputFile(),
              help="Append one JSON line per finished chunk here (seed, counts, failure).")
@click.option("--json", "json_path", type=OutputFile(), help="Write the JSON report here.")
def fuzz(driver: DriverRef, driver_options: tuple[tuple[str, str], ...], in_process: bool, specs: tuple[str, ...],
         keyword: str | None, examples: int, seed: int,
         chunk: int, time_budget: float | None, save_dir: str, requests_per_model: int, max_models: int,
         call_timeout: float, shrink_budget: float, memory_limit: int, progress_path: str | None,
         json_path: str | None) -> None:
    """Throw models and requests that look valid but are not at a driver (Hypothesis, with shrinking).

    Every answer must be a HAL status (INVALID_ARGUMENT for an invalid input)
    or, for a valid input, a well-typed success: never a crash, a hang, a
    non-HAL exception or a wrong-typed answer.  Exit 0 when nothing was
    found, 1 when a failing input was found (shrunk and saved), 5 when no
    valid base model was selected.
    """
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        _fail_usage(INSTALL_HINT)
    from vts.cli.arguments import selection_problem
    from vts.fuzz.run import FuzzRequest, fuzz_session

    driver = configured_driver(driver, driver_options, _fail_usage)
    from vts.spec.bundled import default_spec_paths

    spec_paths = list(specs) or default_spec_paths()
    problem = selection_problem(spec_paths, keyword)
    if problem is not None:
        _fail_usage(problem)
    sys.exit(fuzz_session(FuzzRequest(
        driver=driver, in_process=in_process, specs=spec_paths, keyword=keyword,
        examples=examples, seed=seed, chunk=chunk, time_budget=time_budget, save_dir=save_dir,
        requests_per_model=requests_per_model, max_models=max_models, call_timeout=call_timeout,
        shrink_budget=shrink_budget, memory_limit_mib=memory_limit, progress_path=progress_path,
        json_path=json_path, argv=sys.argv[1:]), usage_error=_fail_usage))
