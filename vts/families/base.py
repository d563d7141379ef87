"""Cases and families: how test families turn models into cases and judge answers.

A ``Case`` is plain, picklable data: its name, its family, the test model it
exercises (with goldens) and a small configuration.  A family yields cases
lazily from each loaded model (and, for device-level families, from nothing
at all), and judges one case against a driver, returning an ``Outcome``.

Driver misbehaviour never escapes a family as an exception the runner has to
interpret: expected statuses are checked explicitly ("either X or Y", with
the HAL rule cited next to the check), and anything unexpected becomes a
failed outcome with a reason.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from vts.hal.enums import HalVersion, OperandType, OperationType, enum_name
from vts.hal.interfaces import Device
from vts.ipc.drivers import DriverRef
from vts.model.casemodel import CaseModel
from vts.results import Verdict


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    family: str
    model: CaseModel | None = None
    example: int | None = None
    spec_path: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)

    def labels(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(operation names, operand type names) of the model, for summaries."""
        if self.model is None:
            return (), ()
        return model_labels(self.model)


_LABELS: dict[int, tuple[CaseModel, tuple[tuple[str, ...], tuple[str, ...]]]] = {}


def model_labels(model: CaseModel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Cached by identity: every case of a model shares them, and a sweep has hundreds per model."""
    hit = _LABELS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    ops = sorted({_type_name(OperationType, op.type) for g in model.subgraphs() for op in g.operations})
    main_inputs = [model.main.operands[i] for i in model.main.inputs] or list(model.main.operands[:1])
    labels = (tuple(ops), tuple(sorted({_type_name(OperandType, o.type) for o in main_inputs})))
    if len(_LABELS) > 64:
        _LABELS.clear()
    _LABELS[id(model)] = (model, labels)
    return labels


def _type_name(enum_cls: type, value: int | str) -> str:
    return value if isinstance(value, str) else enum_name(enum_cls, value)


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: Verdict
    reason: str = ""
    details: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


def passed(reason: str = "", details: tuple[str, ...] = (), **extra: Any) -> Outcome:
    return Outcome(Verdict.PASSED, reason, details, extra)


def failed(reason: str, details: tuple[str, ...] = (), **extra: Any) -> Outcome:
    return Outcome(Verdict.FAILED, reason, details, extra)


def skipped(reason: str) -> Outcome:
    return Outcome(Verdict.SKIPPED, reason)


class HarnessError(Exception):
    """The harness cannot run a case (bad model conversion, missing resource): verdict ERROR."""


class CaseFailure(Exception):
    """Raised inside a family to end a case as failed; the runner turns it into an Outcome."""

    def __init__(self, reason: str, details: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """What families may ask of the device before generating cases."""

    name: str
    hal_version: HalVersion = HalVersion.V1_3


@dataclass(slots=True)
class RunOptions:
    """Settings that change how cases run (not which exist)."""

    pool_kind: str = "ashmem"
    case_timeout: float = 60.0
    extensions: Any = None
    #: The differential family's oracle: any driver spec ``nnvts run --driver`` accepts.
    oracle: DriverRef | str = "reference"
    #: Seconds the differential family may spend on its realistic-size cases (0: skip them).
    large_budget: float = 120.0
    #: Drivers may reach the network (``--allow-network``): an oracle run as a program is a driver too.
    allow_network: bool = False
    #: The runner runs every case a family names, in the order named (``nnvts run``; not the pytest plugin,
    #: which may deselect cases after naming them): a family may send a case's calls before it runs
    #: (``vts.families.validation.ahead``).
    send_ahead: bool = False


class Family(abc.ABC):
    """One test family (generated, validation, deadline, ...)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: Whether ``nnvts run`` selects this family when no ``--family`` is given.
    default: ClassVar[bool] = True
    #: A family whose cases of one model depend on the models of the same spec file before it (pairs,
    #: sibling examples), and on nothing else it saw: it is shown every model of a spec file in which a
    #: shard or a ``-j`` slot takes some model, even those whose cases it leaves out (it then names them
    #: and builds none), so every shard and a whole run agree on each case.  Its state must start afresh
    #: with each file: a spec file with no model in the shard is not shown at all.
    sees_whole_spec: ClassVar[bool] = False
    #: A family whose cases of one model are independent of each other, each small, and many: the ``-j``
    #: slots share a heavy model's cases of it by name (``vts.run.runner.HEAVY_MODEL_SIZE``) instead of one
    #: slot running them all, so one large model does not leave the other workers idle at the end.
    shares_heavy_models: ClassVar[bool] = False

    def applicable(self, device: DeviceInfo) -> bool:
        return True

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        """Cases derived from one loaded model."""
        return iter(())

    def device_cases(self) -> Iterator[Case]:
        """Cases that need no model (discovery, capabilities, ...)."""
        return iter(())

    # Names before cases: a shard, a -j worker or a progress count keeps a small part of the names, so
    # a family whose cases cost something to build (validation mutations, built-in models with goldens)
    # overrides these two to decide each name first and build only the cases ``selects`` keeps.  The
    # names and their order are those of ``model_cases`` and ``device_cases``, whatever ``selects`` is.

    def selected_model_cases(self, model: CaseModel, spec_path: str,
                             selects: Callable[[str], bool]) -> Iterator[Case]:
        """The cases of ``model_cases`` whose name ``selects`` keeps (called once per name, in order)."""
        return (case for case in self.model_cases(model, spec_path) if selects(case.name))

    def selected_device_cases(self, selects: Callable[[str], bool]) -> Iterator[Case]:
        """The cases of ``device_cases`` whose name ``selects`` keeps (called once per name, in order)."""
        return (case for case in self.device_cases() if selects(case.name))

    @abc.abstractmethod
    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome: ...
