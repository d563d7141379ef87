"""One ``nnvts fuzz``: load seeds, open the driver, run the chunks, print and write what happened."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vts.fuzz.loop import ChunkResult, FuzzConfig, FuzzReport, progress_line, run_fuzz
from vts.ipc.drivers import DriverRef


@dataclass
class FuzzRequest:
    driver: DriverRef = field(default_factory=lambda: DriverRef("reference"))
    in_process: bool = False
    specs: Sequence[str] = ("generated_tests",)
    keyword: str | None = None
    examples: int = 1000
    seed: int = 0
    chunk: int = 1000
    time_budget: float | None = None
    save_dir: str | None = "fuzz-failures"
    requests_per_model: int = 4
    max_models: int = 1000
    call_timeout: float = 10.0
    shrink_budget: float = 60.0
    memory_limit_mib: int = 4096
    progress_path: str | None = None
    json_path: str | None = None
    argv: Sequence[str] = field(default_factory=list)


def fuzz_session(request: FuzzRequest, usage_error: Callable[[str], None],
                 echo: Callable[[str], None] = print) -> int:
    """Run and return the exit status (0 nothing found, 1 found, 5 no seed model, 130/143/129 interrupted)."""
    from vts.fuzz.seeds import load_seed_models
    from vts.fuzz.targets import open_target
    from vts.ipc.drivers import DriverNotFound
    from vts.ipc.process import HostStartError
    from vts.run import signals
    from vts.run.selection import SelectionError, parse_expression
    from vts.spec.errors import SpecError

    try:
        keyword = parse_expression(request.keyword) if request.keyword else None
        seeds = load_seed_models(request.specs, request.max_models, keyword=keyword)
    except (SpecError, SelectionError) as error:
        usage_error(str(error))
        return 2
    if not seeds:
        echo("nnvts fuzz: no valid base model selected")
        return 5
    if request.in_process and request.memory_limit_mib:
        _limit_address_space(request.memory_limit_mib << 20)
    try:
        target = open_target(request.driver, request.in_process, request.call_timeout,
                             0 if request.in_process else request.memory_limit_mib << 20)
    except (DriverNotFound, HostStartError) as error:
        usage_error(str(error))
        return 2
    command = "nnvts " + shlex.join(request.argv) if request.argv else "nnvts fuzz"
    config = FuzzConfig(examples=request.examples, seed=request.seed, time_budget=request.time_budget,
                        chunk=request.chunk, requests_per_model=request.requests_per_model,
                        shrink_budget=request.shrink_budget, save_dir=request.save_dir,
                        found_by={"driver": str(request.driver), "command": command})
    progress = open(request.progress_path, "a", encoding="utf-8") if request.progress_path else None  # noqa: SIM115

    def on_chunk(result: ChunkResult) -> None:
        if progress is not None:
            progress.write(progress_line(result) + "\n")
            progress.flush()

    echo(f"nnvts fuzz: {len(seeds)} base models, driver {request.driver} "
         f"({'in process' if request.in_process else 'driver host'}), seeds from {request.seed}")
    try:
        with signals.interrupt_on_signals():  # SIGTERM / SIGHUP end the run like Ctrl-C: summary and report kept
            report = run_fuzz(target, seeds, config, on_chunk)
    finally:
        target.close()
        if progress is not None:
            progress.close()
        for seed in seeds:
            seed.close()
    _print_summary(report, str(request.driver), echo)
    if request.json_path:
        with open(request.json_path, "w", encoding="utf-8") as f:
            json.dump({"driver": str(request.driver), "command": command, **report.as_dict()}, f, indent=1)
    if report.interrupted:
        return signals.exit_status()
    return 1 if report.failures else 0


def _limit_address_space(limit: int) -> None:
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _print_summary(report: FuzzReport, driver: str, echo: Callable[[str], None]) -> None:
    data = report.as_dict()
    echo(f"examples {data['examples']}: {data['models']} models ({data['invalid_models']} invalid, "
         f"{data['prepared']} prepared), {data['requests']} requests ({data['invalid_requests']} invalid); "
         f"{data['models_and_requests']} models and requests in {data['seconds']:.1f} s")
    if report.chunks:
        last = report.chunks[-1].seed
        echo(f"seeds {report.chunks[0].seed}..{last} done; resume with --seed {last + 1}")
    if report.out_of_time:
        echo("stopped: time budget reached")
    if report.interrupted:
        echo("interrupted")
    for failure in report.failures:
        echo("FAILED " + "\n".join(failure.describe()))
        if failure.spec_path:
            import os

            name = os.path.splitext(os.path.basename(failure.spec_path))[0]
            folder = os.path.dirname(failure.spec_path) or "."
            echo(f"  re-run: nnvts run --driver {shlex.quote(driver)} --specs {shlex.quote(folder)} -k {name}")
    if not report.failures and not report.interrupted:
        echo("no crash, hang, non-HAL exception or wrong answer found")
    sys.stdout.flush()
