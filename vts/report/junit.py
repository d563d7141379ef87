"""The JUnit XML report: what CI servers (Jenkins, GitLab, GitHub annotations) read to gate a change.

It follows the schema Jenkins' xUnit plugin publishes (``junit-10.xsd``,
Surefire's format; tests/data/junit-10.xsd, checked in the test suite):

- one ``<testsuite>`` per family, with ``<properties>`` naming the driver
  (name, version, type, and its options as ``nnvts.driver.options``), the
  nnvts version, the selection and the seed;
- failed and xpass cases carry ``<failure>``; error, crash, timeout (and any
  other failing verdict) ``<error type=VERDICT>``; a crashed case has the
  driver's stderr tail in ``<system-out>``; skipped and xfail ``<skipped>``;
- a flaky case (failed, then passed on a rerun) passes with one
  ``<flakyFailure>`` (``<flakyError>`` for a crash or timeout) per failed
  attempt, and a case that failed on every attempt has ``<rerunFailure>``
  / ``<rerunError>`` for the reruns: Surefire's convention, which Jenkins
  shows as flaky;
- an interrupted run has the property ``nnvts.interrupted=true`` in every
  suite, a killed one (no footer in the stream) ``nnvts.incomplete``; the
  schema allows no attribute of our own, and the exit status (130, 143,
  129) already fails the CI job.  The counts are those of the cases that ran.

Every string passed ``vts.report.sanitize`` on the way in (bounded, only
XML characters) and is escaped here, so the file is well-formed whatever a
driver said.  It is streamed: cases go to one scratch file per family, then
the suites are assembled behind their counts.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from vts.report.digest import attempts_of
from vts.report.header import driver_options, options_text
from vts.report.output import atomic_write, scratch_directory
from vts.report.sanitize import clean
from vts.results import CaseResult, Verdict

_FAILURE = {"failed", "xpass", "unreproduced_crash"}  # the driver broke a rule (its death included)
_SKIPPED = {"skipped", "xfail"}
#: Attempts rendered per case (a rerun policy could try many times).
MAX_ATTEMPTS_SHOWN = 10


#: Characters ``escape`` or ``quoteattr`` (with our entities) would change; text without any is used as is.
_MARKUP = re.compile("[&<>\"\n\r\t]")


def _text(value: object) -> str:
    text = clean(value)
    return text if _MARKUP.search(text) is None else escape(text)


def _attr(value: object) -> str:
    """``quoteattr`` of the cleaned value; a case name needs no escaping, and quoting it alone is 5x cheaper
    (the JUnit report of a million cases spent a third of its time here)."""
    text = clean(value)
    if _MARKUP.search(text) is None:
        return f'"{text}"'
    # quoteattr leaves \n and \t as is; an XML parser normalizes them to spaces in an attribute.
    return quoteattr(text, {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def junit_kind(verdict: Verdict) -> str:
    """How a verdict appears in JUnit: failure, error, skipped or passed (flaky passes)."""
    value = verdict.value
    if value in _FAILURE:
        return "failure"
    if value in _SKIPPED:
        return "skipped"
    if verdict.is_failure:
        return "error"
    return "passed"


def properties(header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool) -> list[tuple[str, str]]:
    """The run's identity for every suite: driver, versions, selection, seed, and how the run ended."""
    driver = header.get("driver") if isinstance(header.get("driver"), dict) else {"name": header.get("driver")}
    pairs: list[tuple[str, object]] = [(f"driver.{key}", driver.get(key)) for key in
                                       ("name", "version", "type", "ref", "isolation", "sandbox")]
    pairs.append((OPTIONS_PROPERTY, options_text(driver_options(header))))
    pairs.append(("nnvts.version", header.get("nnvts_version")))
    selection = header.get("selection")
    if isinstance(selection, dict):
        pairs += [(f"selection.{key}", value) for key, value in sorted(selection.items())]
    if header.get("argv") is not None:
        pairs.append(("selection.argv", " ".join(str(a) for a in header.get("argv") or [])))
    pairs += [("seed", header.get("seed")), ("started", header.get("started")), ("host", header.get("host"))]
    if footer:
        pairs += [("finished", footer.get("finished")), ("duration", footer.get("duration"))]
    pairs.append(("nnvts.interrupted", "true" if interrupted else "false"))
    if footer is None:
        pairs.append(("nnvts.incomplete", "true: no summary in the results stream (the run was killed)"))
    return [(name, _property_value(value)) for name, value in pairs if value is not None and value != ""]


#: The property listing the driver's ``--driver-option`` pairs, ``KEY=VALUE,KEY2=VALUE2`` in key order;
#: absent when the run gave none (as every property with nothing to say is).
OPTIONS_PROPERTY = "nnvts.driver.options"


def _property_value(value: object) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def testcase_xml(result: CaseResult, kind: str | None = None) -> str:
    """The ``<testcase>`` element of ``result`` (``kind``: its ``junit_kind``, when the caller has it)."""
    classname = f"{result.family}.{result.name.split('/')[-1].split('.')[0]}"
    head = f"    <testcase classname={_attr(classname)} name={_attr(result.name)} time=\"{result.duration:.4f}\""
    kind = kind or junit_kind(result.verdict)
    value = result.verdict.value
    if kind == "passed" and value == "passed" and not result.extra:
        return f"{head}/>\n"  # nothing to say: no body, no attempts (the common case)
    body = _text("\n".join(result.details))
    parts: list[str] = []
    if kind in ("failure", "error"):
        parts.append(f"<{kind} message={_attr(result.reason)} type={_attr(value)}>{body}</{kind}>")
        # The first attempt is this verdict; later ones (if the case was rerun) failed again.
        parts += [_attempt_xml("rerun", attempt) for attempt in attempts_of(result)[1:MAX_ATTEMPTS_SHOWN]]
        if value == "crash" and result.details:
            parts.append(f"<system-out>driver stderr (last lines):\n{body}</system-out>")
    elif kind == "skipped":
        parts.append(f"<skipped message={_attr(result.reason)} type={_attr(value)}/>")
    else:
        failed_attempts = [a for a in attempts_of(result) if str(a.get("verdict")) != "passed"]
        parts += [_attempt_xml("flaky", attempt) for attempt in failed_attempts[:MAX_ATTEMPTS_SHOWN]]
        if value != "passed":
            parts.append(f"<system-out>{_text(f'verdict {value}: {result.reason}')}\n{body}</system-out>")
    if not parts:
        return f"{head}/>\n"
    return f"{head}>\n" + "".join(f"      {part}\n" for part in parts) + "    </testcase>\n"


def _attempt_xml(prefix: str, attempt: dict[str, object]) -> str:
    """``<{prefix}Failure>`` or ``<{prefix}Error>`` (Surefire's names) for one attempt, by its verdict."""
    verdict = attempt.get("verdict", "failed")
    try:
        errored = junit_kind(Verdict(str(verdict))) == "error"
    except ValueError:
        errored = False
    element = f"{prefix}{'Error' if errored else 'Failure'}"
    duration = attempt.get("duration")
    seconds = f" after {duration:.3f} s" if isinstance(duration, int | float) else ""
    return (f"<{element} message={_attr(attempt.get('reason', ''))} type={_attr(verdict)}>"
            f"{_text(f'attempt {verdict}{seconds}')}</{element}>")


@dataclass
class JunitPart:
    """The testcases of a part of the stream (``vts.report.parts``): counts, and a file of testcases, by family."""

    counts: dict[str, Counter[str]]
    files: dict[str, str]


class JunitReport:
    """Fed case by case: each family's testcases go to a scratch file, assembled behind their counts at close.

    ``scratch``: a directory for those files that its owner removes (a part's, ``export``); by default
    the report makes one of its own.
    """

    def __init__(self, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool,
                 suite_name: str = "nnvts", scratch: str | None = None) -> None:
        self.path = path
        self.header = header
        self.suite_name = suite_name
        self.interrupted = interrupted
        self.incomplete = footer is None
        self.properties = properties(header, footer, interrupted)
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self._scratch, self._directory = scratch_directory(scratch, "nnvts-junit-")
        self._writing: dict[str, IO[str]] = {}
        #: Each family's testcases in order: files this report writes, and parts' files (paths) it was given.
        self.parts: dict[str, list[IO[str] | str]] = {}

    @classmethod
    def merged(cls, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool,
               parts: list[JunitPart]) -> JunitReport:
        """The report of consecutive parts of a stream, in order: the same file as one fed every case."""
        report = cls(path, header, footer, interrupted)
        for part in parts:
            for family, counts in part.counts.items():
                report.counts[family].update(counts)
            for family, name in part.files.items():
                report.parts.setdefault(family, []).append(name)
        return report

    def export(self) -> JunitPart:
        """This report's counts and files, for ``merged`` in another process; the files stay (``scratch``)."""
        for handle in self._writing.values():
            handle.close()
        part = JunitPart({family: Counter(counts) for family, counts in self.counts.items()},
                         {family: handle.name for family, handle in self._writing.items()})
        self._writing = {}
        return part

    def add(self, case: CaseResult) -> None:
        part = self._writing.get(case.family)
        if part is None:
            part = self._writing[case.family] = open(  # noqa: SIM115 - closed in discard()
                os.path.join(self._directory, f"{len(self._writing)}.xml"), "w+", encoding="utf-8")
            self.parts.setdefault(case.family, []).append(part)
        kind = junit_kind(case.verdict)
        part.write(testcase_xml(case, kind))
        tally = self.counts[case.family]
        tally["tests"] += 1
        tally["failures"] += kind == "failure"
        tally["errors"] += kind == "error"
        tally["skipped"] += kind == "skipped"
        tally["time_us"] += int(case.duration * 1e6)

    def close(self) -> None:
        try:
            atomic_write(self.path, lambda out: _render(out, self.suite_name, self.header, self.properties,
                                                        self.counts, self.parts, self.interrupted, self.incomplete))
        finally:
            self.discard()

    def discard(self) -> None:
        for part in self._writing.values():
            part.close()
        self._writing, self.parts = {}, {}
        if self._scratch is not None:
            self._scratch.cleanup()


def _render(out: IO[str], suite_name: str, header: dict[str, Any], props: list[tuple[str, str]],
            counts: dict[str, Counter[str]], parts: dict[str, list[IO[str] | str]], interrupted: bool,
            incomplete: bool) -> None:
    total = sum(c["tests"] for c in counts.values())
    failures = sum(c["failures"] for c in counts.values())
    errors = sum(c["errors"] for c in counts.values())
    seconds = sum(c["time_us"] for c in counts.values()) / 1e6
    stamp = f" timestamp={_attr(header['started'])}" if header.get("started") else ""
    host = f" hostname={_attr(header['host'])}" if header.get("host") else ""
    property_xml = "    <properties>\n" + "".join(
        f"      <property name={_attr(name)} value={_attr(value)}/>\n" for name, value in props) + "    </properties>\n"
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(f'<testsuites name={_attr(suite_name)} tests="{total}" failures="{failures}" errors="{errors}" '
              f'time="{seconds:.3f}">\n')
    for family in sorted(parts):
        c = counts[family]
        out.write(f"  <testsuite name={_attr(family)} tests=\"{c['tests']}\" failures=\"{c['failures']}\" "
                  f"errors=\"{c['errors']}\" skipped=\"{c['skipped']}\" time=\"{c['time_us'] / 1e6:.3f}\""
                  f"{stamp}{host}>\n")
        out.write(property_xml)
        for part in parts[family]:
            if isinstance(part, str):
                with open(part, encoding="utf-8") as handle:
                    shutil.copyfileobj(handle, out)
            else:
                part.seek(0)
                shutil.copyfileobj(part, out)
        out.write("  </testsuite>\n")
    if not parts:  # no case ran (an early interruption): the run's properties still say what and why
        out.write(f'  <testsuite name={_attr(suite_name)} tests="0" failures="0" errors="0" skipped="0" time="0"'
                  f"{stamp}{host}>\n{property_xml}  </testsuite>\n")
    out.write("</testsuites>\n")
