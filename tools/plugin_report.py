"""Conformance reports of engine plugins (QNN's HTP through ONNX Runtime, LiteRT with XNNPACK) for docs/engines.md.

    .venv/bin/python tools/plugin_report.py [--config onnxruntime-qnn] [--shard 1/40] [--corpus-shard 1/50] [--reuse]

Per configuration (a driver and its driver options, ``CONFIGS``) it runs
``nnvts run -j 2`` over the bundled cases (generated_tests/): the
``generated`` family in full, every other default family on a stable shard
(``--shard``, 1/40 by default: the bundled cases are 180k, 165k of them
validation), and, with ``--corpus-shard``, the corpus's ``generated``
family on that shard.  Each run's JSON lines go to
``reports/engines/plugin-CONFIG-PART.jsonl``; the page block between
``<!-- plugins:begin -->`` and ``<!-- plugins:end -->`` is rewritten from
every report present: counts per family, the share of golden cases the
device ran (passed or failed: not skipped), the engine findings (failed
classes, one example case each, with its reason), any error, crash or
timeout, and the largest skip classes with the reason of one example.
Classes are ``tools/engines_report.py``'s (operations, operand types,
reason pattern).  ``--reuse`` renders existing reports without running.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.engines_report import (  # noqa: E402 (after the path set-up, as a script)
    DOC,
    OUT,
    VERDICTS,
    DriverReasons,
    _cell,
    _run,
    classify,
    default_families,
    failure_rows,
    read_cases,
    split_by_family,
)

#: Configuration -> (driver, driver options).
CONFIGS = {
    "onnxruntime-qnn": ("onnxruntime", ("ep=qnn",)),
    "litert-xnnpack": ("litert", ("delegate=xnnpack",)),
}
BEGIN, END = "<!-- plugins:begin -->", "<!-- plugins:end -->"
CORPUS = "../shared/corpus"
SKIP_ROWS = 12


def report(config: str, part: str) -> Path:
    return OUT / f"plugin-{config}-{part}.jsonl"


def meta_path(config: str) -> Path:
    return OUT / f"plugin-{config}-shards.json"


def run_config(config: str, parts: set[str], shard: str, corpus_shard: str | None, jobs: int) -> None:
    """The runs of ``parts`` (generated, others, corpus) for one configuration; the shards noted beside them."""
    driver, options = CONFIGS[config]
    base = ["--driver", driver]
    for option in options:
        base += ["--driver-option", option]
    OUT.mkdir(parents=True, exist_ok=True)
    meta = json.loads(meta_path(config).read_text()) if meta_path(config).exists() else {}
    if "generated" in parts:
        _run([*base, "--specs", "generated_tests", "--family", "generated", "-j", str(jobs)],
             report(config, "generated"))
    if "others" in parts:
        others = [f for f in default_families() if f != "generated"]
        together = report(config, "others")
        arguments = [*base, "--specs", "generated_tests", "-j", str(jobs), "--shard", shard]
        for family in others:
            arguments += ["--family", family]
        _run(arguments, together)
        split_by_family(together, {family: report(config, f"others-{family}") for family in others})
        together.unlink(missing_ok=True)
        meta["shard"] = shard
    if "corpus" in parts and corpus_shard:
        _run([*base, "--specs", CORPUS, "--family", "generated", "--shard", corpus_shard, "-j", str(jobs)],
             report(config, "corpus-generated"))
        meta["corpus_shard"] = corpus_shard
    meta_path(config).write_text(json.dumps(meta))


def _asker(driver: str, options: tuple[str, ...]) -> DriverReasons:
    """``engines_report``'s in-process asker, on the driver with this configuration's options."""
    from vts.ipc.drivers import DriverRef

    asker = DriverReasons.__new__(DriverReasons)
    asker.device = DriverRef(driver, options=tuple(o.split("=", 1) for o in options)).load()
    asker._specs = {}
    return asker


def render(config: str, ask: bool = True) -> list[str]:
    driver, options = CONFIGS[config]
    meta = json.loads(meta_path(config).read_text()) if meta_path(config).exists() else {}
    shard, corpus_shard = meta.get("shard", "?"), meta.get("corpus_shard", "?")
    parts: dict[str, list[dict]] = {}
    if report(config, "generated").exists():
        parts["generated (bundled, all)"] = read_cases([report(config, "generated")])
    for family in default_families():
        path = report(config, f"others-{family}")
        if family != "generated" and path.exists():
            parts[f"{family} (bundled, shard {shard})"] = read_cases([path])
    if report(config, "corpus-generated").exists():
        parts[f"generated (corpus, shard {corpus_shard})"] = read_cases([report(config, "corpus-generated")])
    if not parts:
        return []
    lines = ["", f"### {config}: `nnvts run --driver {driver} "
             + " ".join(f"--driver-option {o}" for o in options) + "`", "",
             "| family (cases) | cases | " + " | ".join(VERDICTS) + " | golden cases run on the device |",
             "| --- | ---: | " + " | ".join("---:" for _ in VERDICTS) + " | ---: |"]
    for label, cases in parts.items():
        counts = collections.Counter(c["verdict"] for c in cases)
        ran = counts.get("passed", 0) + counts.get("failed", 0)
        share = f"{ran / len(cases):.0%}" if cases and label.startswith("generated") else "-"
        lines.append(f"| {label} | {len(cases)} | " + " | ".join(str(counts.get(v, 0)) for v in VERDICTS)
                     + f" | {share} |")
    lines += ["", f"#### {config}: findings (failed) and any error, crash or timeout", "",
              "| family | operation | operand types | verdict: reason pattern | cases | example case: reason |",
              "| --- | --- | --- | --- | ---: | --- |"]
    found = False
    for label, cases in parts.items():
        rows = failure_rows(label.split(" ")[0], cases, 200)
        found = found or bool(rows)
        lines += rows
    if not found:
        lines.append("| - | - | - | none | 0 | - |")
    generated = parts.get("generated (bundled, all)", [])
    skipped = classify(generated, ("skipped",))
    if skipped:
        lines += ["", f"#### {config}: largest skip classes (generated, bundled)", "",
                  "| operation | operand types | cases | the driver's reason (one example, asked in process) |",
                  "| --- | --- | ---: | --- |"]
        ranked = sorted(skipped.items(), key=lambda item: -item[1].count)
        asker = _asker(driver, options) if ask else None
        for (ops, types, _), group in ranked[:SKIP_ROWS]:
            reason = asker.reason(group.examples[0]) if asker else group.examples[0].get("reason", "")
            lines.append(f"| {ops} | {types} | {group.count} | {_cell(reason[:200])} |")
        rest = ranked[SKIP_ROWS:]
        if rest:
            lines.append(f"| ({len(rest)} more classes) | | {sum(g.count for _, g in rest)} | |")
    return lines


def write(block: str) -> None:
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + block + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS), help="repeatable; default all")
    parser.add_argument("--shard", default="1/40", help="shard of the bundled cases for families but generated")
    parser.add_argument("--corpus-shard", help="also the corpus's generated family on this shard (1/50...)")
    parser.add_argument("--reuse", action="store_true", help="render the existing reports only")
    parser.add_argument("--parts", default="generated,others,corpus",
                        help="which runs: generated (bundled, all), others (bundled, --shard), corpus (--corpus-shard)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--no-skip-reasons", action="store_true", help="do not ask the drivers why they skip")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    configs = args.config or list(CONFIGS)
    if not args.reuse:
        for config in configs:
            run_config(config, set(args.parts.split(",")), args.shard, args.corpus_shard, args.jobs)
    lines = [BEGIN]
    for config in CONFIGS:
        lines += render(config, not args.no_skip_reasons)
    lines += ["", END]
    write("\n".join(lines))
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
