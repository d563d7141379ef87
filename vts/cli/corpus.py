"""The ``nnvts corpus`` commands: parsing and exit codes only (the work is in ``vts.spec.aosp``).

``nnvts corpus import aosp SRC --out DIR`` builds the external conformance
corpus from a frameworks/ml checkout.  Exit status: 0 every spec imported,
1 some spec failed (each named on one line of stderr; the others are
imported), 2 usage or input error (SRC is not an ``nn/`` folder, a bad option).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from vts.bounds import shown
from vts.cli.params import FiniteFloat, NnvtsCommand, NnvtsGroup, bounded_int

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _usage(message: str) -> None:
    click.echo(f"nnvts: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.group(cls=NnvtsGroup)
def corpus() -> None:
    """Build the external conformance corpus from its sources."""


@corpus.group("import", cls=NnvtsGroup)
def import_() -> None:
    """Import another suite's tests as nnvts concrete specs."""


@import_.command("aosp", cls=NnvtsCommand)
@click.argument("src", metavar="SRC")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="Where the specs go: DIR/FOLDER/SPEC.json.gz, plus a hidden index for incremental imports.")
@click.option("--versions", metavar="V1_0,V1_3,...",
              help="Only these version folders of runtime/test/specs (default: every folder with .mod.py specs).")
@click.option("-j", "--jobs", type=bounded_int(1, 64), default=1, show_default=True,
              help="Version folders imported in parallel.")
@click.option("--timeout", type=FiniteFloat(0, 24 * 3600, low_open=True), default=120.0, show_default=True,
              help="Seconds (wall clock and CPU) one .mod.py may take in the generator.")
@click.option("--memory-limit", type=bounded_int(256, 1 << 20), default=2048, show_default=True, metavar="MIB",
              help="Address-space limit of the generator's interpreter.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the closing line.")
def aosp(src: str, out_dir: str, versions: str | None, jobs: int, timeout: float, memory_limit: int,
         quiet: bool) -> None:
    """Import Android's NNAPI test specs from SRC, the nn/ folder of a frameworks/ml checkout or a
    packages/modules/NeuralNetworks checkout (Android 12 and later, with its AIDL_Vn folders).

    Runs the generator of that tree (tools/test_generator) on every
    runtime/test/specs/FOLDER/*.mod.py, with every variation it declares and
    the implicit lifetime variations, and writes one gzip'ed concrete spec per
    .mod.py.  A second run re-imports only the specs (or generator) that changed.
    """
    from vts.spec.aosp.importer import import_tree
    from vts.spec.aosp.index import LinkInOutput
    from vts.spec.aosp.layout import LayoutError
    from vts.spec.aosp.sandbox import Limits

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        _usage(f"--out {out_dir}: not a folder")
    wanted = [v.strip() for v in versions.split(",") if v.strip()] if versions is not None else None
    if wanted is not None and not wanted:
        _usage("--versions: expected folder names, e.g. V1_0,V1_2")
    progress = None if quiet else (lambda folder: click.echo(f"nnvts: {folder} imported", err=True))
    started = time.monotonic()
    try:
        result = import_tree(Path(src), out, wanted, jobs, Limits(seconds=timeout, memory_mib=memory_limit),
                             progress)
    except (LayoutError, LinkInOutput) as error:
        _usage(shown(str(error)))
    for failure in result.failures:
        click.echo(f"nnvts: {shown(failure.key)}: {shown(failure.reason)}", err=True)
    cases = ", ".join(f"{folder} {n}" for folder, n in result.cases.items())
    click.echo(f"nnvts corpus import aosp: {len(result.imported)} imported ({len(result.written)} written), "
               f"{len(result.skipped)} unchanged, {len(result.removed)} removed, {len(result.failures)} failed in "
               f"{time.monotonic() - started:.1f} s; cases: {cases} -> {shown(str(out))}")
    if result.imported or result.failures:  # which wall stood around the tree's code (docs/corpus.md)
        from vts.spec.aosp.sandbox import isolation

        click.echo(f"nnvts: the generator ran in the drivers' sandbox: {isolation()}")
    sys.exit(EXIT_FAILED if result.failures else EXIT_OK)
