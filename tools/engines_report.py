"""Conformance reports of the engine drivers (LiteRT, ONNX Runtime): run nnvts, count, classify, write the tables.

    .venv/bin/python tools/engines_report.py [--engine litert] [--family generated] [--reuse]

For each engine and each default family it runs ``nnvts run --driver ENGINE
--specs ../shared/corpus --specs specs --family F -j 2 --jsonl
reports/engines/ENGINE-F.jsonl`` (the sweep families ``validation`` and
``deadline`` on a stable shard, ``--shard 1/20``: their full sweep is about
a million cases), then rewrites the generated part of docs/engines.md,
between ``<!-- engines:begin -->`` and ``<!-- engines:end -->``: passed /
failed / skipped counts per engine and family, the failure classes with one
example each, and the skip classes with the driver's own reason (asked
in-process of the driver for one model of the class).  The prose around the
markers -- what each failure class means -- is written by hand and kept.

A class is (family, operations, operand types, reason pattern): the reason
with its numbers and names of operands blanked, up to the first detail.
``--reuse`` classifies existing JSON-lines files without running anything.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENGINES = ("litert", "onnxruntime")
CORPUS = "../shared/corpus"
SHARDED = {"validation": "1/20", "deadline": "1/20"}
VERDICTS = ("passed", "failed", "skipped", "error", "crash", "timeout")
BEGIN, END = "<!-- engines:begin -->", "<!-- engines:end -->"
DOC = ROOT / "docs" / "engines.md"
OUT = ROOT / "reports" / "engines"


def default_families() -> list[str]:
    from vts.families.registry import families

    return [name for name, cls in families().items() if getattr(cls, "default", True)]


def run_family(engine: str, family: str, jobs: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{engine}-{family}.jsonl"
    command = [str(ROOT / ".venv" / "bin" / "nnvts"), "run", "--driver", engine, "--specs", CORPUS,
               "--specs", "specs", "--family", family, "-j", str(jobs), "--jsonl", str(path)]
    if family in SHARDED:
        command += ["--shard", SHARDED[family]]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(["nice", "-n", "10", *command], cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    return path


def read_cases(path: Path) -> list[dict]:
    cases = []
    with path.open() as stream:
        for line in stream:
            record = json.loads(line)
            if "case" in record:
                cases.append(record["case"])
    return cases


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def reason_pattern(reason: str) -> str:
    """The reason without its particulars: numbers blanked, operand names and value details dropped."""
    text = reason.split(" (")[0] if reason.startswith("sync execution returned") else reason
    text = re.sub(r"output\w*:", "OUTPUT:", text)
    text = re.sub(r"; worst at .*", "", text)
    text = _NUMBER.sub("#", text)
    return text[:140]


def case_operations(case: dict) -> str:
    """Operations of the case; the ADD that turns inputs into internal operands is not the subject."""
    operations = case.get("operations") or []
    if len(operations) > 1 and "ADD" in operations and "all_inputs_as_internal" in case["name"]:
        operations = [o for o in operations if o != "ADD"]
    return ",".join(operations) or "-"


@dataclass
class Group:
    count: int = 0
    examples: list[dict] = field(default_factory=list)


def classify(cases: list[dict], verdicts: tuple[str, ...]) -> dict[tuple[str, str, str], Group]:
    groups: dict[tuple[str, str, str], Group] = collections.defaultdict(Group)
    for case in cases:
        if case["verdict"] not in verdicts:
            continue
        key = (case_operations(case), ",".join(case.get("operand_types") or []) or "-",
               f"{case['verdict']}: {reason_pattern(case.get('reason', ''))}")
        group = groups[key]
        group.count += 1
        if len(group.examples) < 1:
            group.examples.append(case)
    return dict(sorted(groups.items(), key=lambda item: (-item[1].count, item[0])))


class DriverReasons:
    """The driver's own reason for an unsupported operation, asked in-process for one model of a class."""

    def __init__(self, engine: str) -> None:
        from vts.run.drivers import DriverRef

        self.device = DriverRef(engine).load()
        self._specs: dict[str, list] = {}

    def reason(self, case: dict) -> str:
        from vts.spec.loader import load_file
        from vts.testmodel import close_model, parse_spec, to_hal_model

        spec = case.get("spec")
        if not spec:
            return ""
        if spec not in self._specs:
            self._specs[spec] = parse_spec(load_file(str(ROOT / spec)).document)
        candidates = [m for m in self._specs[spec]
                      if case["name"] == m.case_name() or case["name"].startswith(m.case_name() + ".")]
        for model in sorted(candidates, key=lambda m: -len(m.case_name()))[:1]:
            try:
                hal = to_hal_model(model)
            except Exception as error:  # a model the harness cannot build for this driver (unknown extension)
                return f"(not asked: {error})"
            try:
                reasons = [r for r in self.device.unsupported_reasons(hal) if r]
            except Exception as error:  # a report line, not a crash
                return f"(could not ask: {error})"
            finally:
                close_model(hal)
            return "; ".join(dict.fromkeys(reasons))[:200]
        return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: dict[str, dict[str, list[dict]]], skip_reasons: bool) -> str:
    lines = [BEGIN, "", "### Counts", ""]
    lines.append("| engine | family | cases | " + " | ".join(VERDICTS) + " |")
    lines.append("| --- | --- | ---: | " + " | ".join("---:" for _ in VERDICTS) + " |")
    for engine, by_family in results.items():
        for family, cases in by_family.items():
            counts = collections.Counter(c["verdict"] for c in cases)
            shard = f" (shard {SHARDED[family]})" if family in SHARDED else ""
            lines.append(f"| {engine} | {family}{shard} | {len(cases)} | "
                         + " | ".join(str(counts.get(v, 0)) for v in VERDICTS) + " |")
    for engine, by_family in results.items():
        lines += ["", f"### {engine}: failure classes", "",
                  "| family | operation | operand types | verdict: reason pattern | cases | example |",
                  "| --- | --- | --- | --- | ---: | --- |"]
        any_failure = False
        for family, cases in by_family.items():
            for (ops, types, pattern), group in classify(cases, ("failed", "error", "crash", "timeout")).items():
                any_failure = True
                example = group.examples[0]
                lines.append(f"| {family} | {ops} | {types} | {_cell(pattern)} | {group.count} | "
                             f"`{example['name']}`: {_cell(example.get('reason', '')[:220])} |")
        if not any_failure:
            lines.append("| - | - | - | no failures | 0 | - |")
        if not skip_reasons:
            continue
        reasons = DriverReasons(engine)
        lines += ["", f"### {engine}: skip classes (generated family)", "",
                  "| operation | operand types | cases | the driver's reason (one example) |",
                  "| --- | --- | ---: | --- |"]
        skipped = classify(by_family.get("generated", []), ("skipped",))
        merged: dict[tuple[str, str], Group] = collections.defaultdict(Group)
        for (ops, types, _), group in skipped.items():
            merged[(ops, types)].count += group.count
            merged[(ops, types)].examples += group.examples
        for (ops, types), group in sorted(merged.items(), key=lambda item: (-item[1].count, item[0])):
            lines.append(f"| {ops} | {types} | {group.count} | {_cell(reasons.reason(group.examples[0]))} |")
    lines += ["", END]
    return "\n".join(lines)


def write_doc(block: str) -> None:
    text = DOC.read_text() if DOC.exists() else f"# Engine drivers\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + block + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", choices=ENGINES, help="engine (repeatable; default both)")
    parser.add_argument("--family", action="append", help="family (repeatable; default every default family)")
    parser.add_argument("--reuse", action="store_true", help="classify existing reports/engines/*.jsonl only")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--no-skip-reasons", action="store_true", help="do not ask the drivers why they skip")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    engines = args.engine or list(ENGINES)
    families = args.family or default_families()
    results: dict[str, dict[str, list[dict]]] = {}
    for engine in engines:
        results[engine] = {}
        for family in families:
            path = OUT / f"{engine}-{family}.jsonl"
            if not args.reuse:
                path = run_family(engine, family, args.jobs)
            if path.exists():
                results[engine][family] = read_cases(path)
    write_doc(render(results, not args.no_skip_reasons))
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
