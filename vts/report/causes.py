"""Failures grouped by root cause: one line per bug, not one per reason string.

A driver with one bug fails hundreds of cases across families, each with its own reason text
(``expected 0.2689, got 0.1192`` in one, ``burst execution (A, slots 11, 12): output: ...`` in
another): issue 45's vendor read 434 reasons for 4 bugs.  A cause is what those cases share:

* the *subject*: the operation under test and the type (and, for a support claim, the rank) of its
  first input, from the ``extra["operation"]`` every failure carries (``vts.model.parameters``);
* the *kind* of failure: wrong outputs (a recorded comparison), a support claim broken (claimed,
  then refused by ``prepare_model``), a signed twin refused, a deadline ignored, or else the
  failing verdict with its reason stripped of numbers and labels;
* the *decisive parameters*: those whose value is off their neutral one (beta 1.0, stride 1,
  activation NONE, ...) in every case of the cause: a kernel that ignores a parameter computes as if
  it had its neutral value, so "beta ≠ 1.0" is what its failures have in common and its passes lack.

Some kinds are not about an operation (a deadline ignored by the synchronous path fails on whatever
model it runs; a driver without signed quant8 fails the coupling rule on every quant8 operation):
their causes gather every operation and name them.  Any other kind seen on three operations or more
with the same stripped reason is taken to be such a rule too.

``CauseTally`` is fed failing results one at a time, in bounded memory (``MAX_GROUPS`` groups,
then "(other causes)"), and merges with the tally of the results that follow it, so a report
rendered in parts, a ``-j`` run and ``nnvts merge`` all give the same causes.  The JSON report
carries them as ``causes``: ``[{"summary", "cases", "families", "example"}, ...]``, most cases first.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vts.report.sanitize import clean
from vts.results import CaseResult

#: Groups kept before further failures are pooled into one "(other causes)" group.
MAX_GROUPS = 2000
#: Distinct operations named in a cause's summary before "…".
NAMED_OPERATIONS = 8
#: A kind seen with this many operation subjects or more is a rule, not an operation's bug.
RULE_SUBJECTS = 3

#: The value a parameter has when it changes nothing: a kernel that ignores the parameter computes this.
NEUTRAL: dict[str, float | int | bool] = {
    "beta": 1.0, "stride_width": 1, "stride_height": 1, "dilation_width": 1, "dilation_height": 1,
    "depth_multiplier": 1, "activation": 0, "layout": False, "padding_left": 0, "padding_right": 0,
    "padding_top": 0, "padding_bottom": 0,
}
_SHOWN = {("activation", 0): "NONE", ("layout", False): "NHWC", ("layout", True): "NCHW"}

_CLAIM = re.compile(r"prepare_model failed with (?P<status>[A-Z_]+) although every operation was reported supported")
_TWIN = re.compile(r"the (?P<which>[a-z]+) twin was refused")
_LATE = re.compile(r"(?P<path>[a-z]+) execution succeeded [0-9.]+ ms after its deadline")
_OUTPUTS = re.compile(r"elements out of tolerance|\(expected: the oracle's answer\)")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


@dataclass(frozen=True, slots=True)
class Cause:
    """One root cause: a one-line summary, how many cases, which families, and a case to rerun."""

    summary: str
    cases: int
    families: tuple[str, ...]
    example: str

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "cases": self.cases, "families": list(self.families),
                "example": self.example}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cause:
        return cls(str(data["summary"]), int(data["cases"]), tuple(str(f) for f in data["families"]),
                   str(data["example"]))


@dataclass(frozen=True, slots=True)
class Finding:
    """What one failing result says about its cause."""

    kind: str  # "outputs wrong", "claimed supported, then refused by prepare_model (GENERAL_FAILURE)", ...
    rule: bool  # not about one operation: the operations are gathered, not keyed
    operation: str
    operand_type: str
    detail: str = ""  # part of the key beside the subject (a claim's rank)
    #: The parameters off their neutral value in this case: the decisive ones are among them.
    off_neutral: tuple[str, ...] = ()


def _operation(result: CaseResult) -> dict[str, Any]:
    found = result.extra.get("operation")
    return found if isinstance(found, dict) else {}


def _subject(result: CaseResult) -> tuple[str, str]:
    described = _operation(result)
    operation = described.get("operation")
    if not isinstance(operation, str):
        operation = ",".join(result.operations) or "-"
    operand_type = described.get("operand_type")
    if not isinstance(operand_type, str):
        operand_type = ",".join(result.operand_types) or "-"
    return operation, operand_type


def _off_neutral(result: CaseResult) -> tuple[str, ...]:
    parameters = _operation(result).get("parameters")
    found: set[str] = set()
    for entry in parameters if isinstance(parameters, list) else ():
        if not isinstance(entry, dict):
            continue
        name, value = entry.get("name"), entry.get("value")
        if isinstance(name, str) and name in NEUTRAL and isinstance(value, int | float | bool) \
                and value != NEUTRAL[name]:
            found.add(name)
    return tuple(sorted(found))


def stripped_reason(reason: str) -> str:
    """A reason without what differs from case to case: numbers, bracketed labels, quoted names."""
    text = _QUOTED.sub("…", clean(reason, 2000))
    for _ in range(3):  # nested brackets, innermost first
        text = _BRACKETED.sub("", text)
    text = _NUMBER.sub("N", text)
    return " ".join(text.split())[:160]


def classify(result: CaseResult) -> Finding:
    """The cause a failing result belongs to (the subject, the kind, the parameters that may decide it)."""
    operation, operand_type = _subject(result)
    reason = result.reason
    claim = _CLAIM.search(reason)
    if claim:
        rank = _operation(result).get("rank")
        return Finding(f"claimed supported, then refused by prepare_model ({claim['status']})", False, operation,
                       operand_type, f"input rank {rank}" if isinstance(rank, int) else "")
    twin = _TWIN.search(reason)
    if twin:
        return Finding(f"quantization coupling: the {twin['which']} twin refused while the other encoding prepared",
                       True, operation, operand_type)
    late = _LATE.search(reason)
    if late:
        return Finding(f"deadline ignored: {late['path']} execution succeeded long after its deadline", True,
                       operation, operand_type)
    if result.verdict.value == "failed" and ("comparison" in result.extra or _OUTPUTS.search(reason)):
        return Finding("outputs wrong", False, operation, operand_type, off_neutral=_off_neutral(result))
    return Finding(f"{result.verdict.value}: {stripped_reason(reason)}", False, operation, operand_type)


@dataclass
class _Group:
    """The failures of one finding key: a count, the families, the first case, the parameters seen off neutral."""

    cases: int = 0
    families: Counter[str] = field(default_factory=Counter)
    example: str = ""
    position: int = 0  # of the example, for merges
    off_neutral: tuple[str, ...] = ()  # the parameters off their neutral value in every case of the group
    #: Every operation of the first case's model, when it has several (a claim broken on a network).
    operations: frozenset[str] = frozenset()

    def take(self, other: _Group, offset: int) -> None:
        if not self.example or (other.example and other.position + offset < self.position):
            self.example, self.position = other.example, other.position + offset
        self.cases += other.cases
        self.families.update(other.families)


#: A group's key: kind, rule, operation (None for a rule), operand type (None for a rule), detail, off-neutral names.
_Key = tuple[str, bool, str | None, str | None, str, tuple[str, ...]]


@dataclass
class CauseTally:
    """Failing results, grouped by finding, in bounded memory; ``causes`` gathers the groups into causes."""

    groups: dict[_Key, _Group] = field(default_factory=dict)
    #: Operations and operand types seen per rule kind (the summary names them).
    subjects: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    seen: int = 0  # failing results added

    def add(self, result: CaseResult) -> _Key | None:
        """Count a failing result; returns the key of the group it joined (None: not a failure)."""
        if not result.verdict.is_failure:
            return None
        self.seen += 1
        finding = classify(result)
        key = self._key(finding)
        group = self.groups.get(key)
        if group is None:
            if len(self.groups) >= MAX_GROUPS:
                key = ("(other causes)", True, None, None, "", ())
                group = self.groups.setdefault(key, _Group())
            else:
                group = self.groups[key] = _Group(off_neutral=finding.off_neutral,
                                                  operations=frozenset(result.operations)
                                                  if len(result.operations) > 1 else frozenset())
        if not group.example:
            group.example, group.position = result.name, self.seen
        group.cases += 1
        group.families[result.family] += 1
        if key[0] == finding.kind:  # not pooled: a kind past the cap must not grow the subjects either
            self.subjects.setdefault(finding.kind, Counter())[(finding.operation, finding.operand_type)] += 1
        return key

    @staticmethod
    def _key(finding: Finding) -> _Key:
        if finding.rule:
            return (finding.kind, True, None, None, finding.detail, ())
        return (finding.kind, False, finding.operation, finding.operand_type, finding.detail, finding.off_neutral)

    def merge(self, later: CauseTally) -> None:
        """Add the tally of the failures that follow this one's, as if each had been added here."""
        offset = self.seen
        for key, group in later.groups.items():
            mine = self.groups.get(key)
            if mine is None:
                if len(self.groups) >= MAX_GROUPS:
                    mine = self.groups.setdefault(("(other causes)", True, None, None, "", ()), _Group())
                else:
                    mine = self.groups[key] = _Group(off_neutral=group.off_neutral, operations=group.operations)
            mine.take(group, offset)
        kinds = {key[0] for key in self.groups}
        for kind, subjects in later.subjects.items():
            if kind in kinds:  # a kind pooled here keeps no subjects
                self.subjects.setdefault(kind, Counter()).update(subjects)
        self.seen += later.seen

    def causes(self) -> list[Cause]:
        """The causes, most cases first (then by summary): every failing result in exactly one."""
        return [cause for cause, _ in self.causes_with_keys()]

    def causes_with_keys(self) -> list[tuple[Cause, frozenset[_Key]]]:
        """The causes as ``causes`` gives them, each with the keys (as ``add`` returned them) of its cases:
        ``nnvts expectations update`` writes one entry per cause from them."""
        gathered: dict[tuple[Any, ...], list[_Group]] = {}
        keys = {id(group): key for key, group in self.groups.items()}
        for key, group in self.groups.items():
            kind, rule, operation, operand_type, detail, _ = key
            if rule or self._is_rule(kind):
                gathered.setdefault((kind, detail), []).append(group)
            else:
                gathered.setdefault((kind, operation, operand_type, detail), []).append(group)
        joined = _claims_on_networks(gathered)
        causes: list[tuple[Cause, frozenset[_Key]]] = []
        for cause_key, groups in gathered.items():
            if len(cause_key) == 2:
                causes.append((_cause(self._rule_summary(*cause_key), groups, joined),
                               frozenset(keys[id(g)] for g in groups)))
                continue
            kind, operation, operand_type, detail = cause_key
            for decisive, part in _split_by_parameters(groups):
                labels = [operand_type or "-", *([detail] if detail else []), *decisive]
                causes.append((_cause(f"{operation} ({', '.join(labels)}): {kind}", part, joined),
                               frozenset(keys[id(g)] for g in part)))
        return sorted(causes, key=lambda pair: (-pair[0].cases, pair[0].summary))

    def _is_rule(self, kind: str) -> bool:
        """A kind of failure seen on several operations alike is a rule the driver breaks, not a kernel's bug
        (wrong outputs and broken claims stay per operation: each is a kernel's or a claim's own)."""
        if kind == "outputs wrong" or kind.startswith("claimed"):
            return False
        return len(self.subjects.get(kind, ())) >= RULE_SUBJECTS

    def _rule_summary(self, kind: str, detail: str) -> str:
        if kind == "(other causes)":
            return f"(other causes, past {MAX_GROUPS} groups)"
        subjects = self.subjects.get(kind, Counter())
        operations = sorted({operation for operation, _ in subjects})
        types = sorted({operand_type for _, operand_type in subjects})
        named = ", ".join(operations[:NAMED_OPERATIONS]) + (", …" if len(operations) > NAMED_OPERATIONS else "")
        typed = ", ".join(types[:4]) + (", …" if len(types) > 4 else "")
        plural = "s" if len(operations) != 1 else ""
        return f"{kind}{', ' + detail if detail else ''}: on {len(operations)} operation{plural} ({named}; {typed})"


def _claims_on_networks(gathered: dict[tuple[Any, ...], list[_Group]]) -> set[int]:
    """A claim broken on a model of several operations joins the claim broken on one of them alone.

    The cause of a network refused after being claimed (the caching family's MobileNet) is named after
    its first operation, which is rarely the one refused; where a single-operation model of one of its
    operations broke the same claim (same status, same operand type), that operation is the cause.
    Returns the ids of the groups joined so: their cases are the cause's example only if it has no other.
    """
    joined: set[int] = set()
    single = {key: groups for key, groups in gathered.items()
              if len(key) == 4 and key[0].startswith("claimed") and not any(g.operations for g in groups)}
    for key in [k for k in gathered if len(k) == 4 and k[0].startswith("claimed") and k not in single]:
        groups = gathered[key]
        operations = frozenset().union(*(g.operations for g in groups))
        targets = [k for k in single if k[0] == key[0] and k[2] == key[2] and k[1] in operations]
        if targets:
            target = max(targets, key=lambda k: (sum(g.cases for g in single[k]), k))
            joined.update(id(group) for group in groups)
            gathered[target].extend(gathered.pop(key))
    return joined


def _describe(name: str) -> str:
    """A decisive parameter as the summary names it: off its neutral value ("beta ≠ 1.0", "layout = NCHW")."""
    neutral = NEUTRAL[name]
    if isinstance(neutral, bool):
        return f"{name} = {_SHOWN.get((name, not neutral), not neutral)}"
    return f"{name} ≠ {_SHOWN.get((name, neutral), neutral)}"


def _split_by_parameters(groups: list[_Group]) -> list[tuple[list[str], list[_Group]]]:
    """The groups of one subject and kind, split where different parameters decide (decisive labels, part).

    Each group holds the cases with one set of parameters off neutral.  A parameter off neutral in every
    group is decisive for all; otherwise the parameter off neutral in the most cases takes its groups as
    one cause, and the rest are split again; groups with no parameter off neutral are a cause of their own.
    """
    parts: list[tuple[list[str], list[_Group]]] = []
    rest = list(groups)
    while rest:
        counts: Counter[str] = Counter()
        for group in rest:
            for name in group.off_neutral:
                counts[name] += group.cases
        if not counts:
            parts.append(([], rest))
            break
        common = [name for name in counts if all(name in g.off_neutral for g in rest)]
        if common:
            chosen, rest_after = rest, []
        else:
            best = max(counts, key=lambda n: (counts[n], n))
            chosen = [g for g in rest if best in g.off_neutral]
            rest_after = [g for g in rest if best not in g.off_neutral]
        shared = [name for name in NEUTRAL if all(name in g.off_neutral for g in chosen)]
        labels = [_describe(name) for name in shared]
        parts.append((labels, chosen))
        rest = rest_after
    return parts


def _cause(summary: str, groups: list[_Group], joined: set[int]) -> Cause:
    cases = sum(g.cases for g in groups)
    families: Counter[str] = Counter()
    for group in groups:
        families.update(group.families)
    example = min(groups, key=lambda g: (id(g) in joined, g.position)).example
    names = tuple(sorted(families, key=lambda f: (-families[f], f)))
    count = f"{cases:,} case{'s' if cases != 1 else ''}"
    spread = f"{len(names)} famil{'ies' if len(names) != 1 else 'y'}"
    return Cause(f"{summary} in {count} across {spread}", cases, names, example)
