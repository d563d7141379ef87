"""Model mutations sent to an out-of-process driver before their cases run.

A model mutation is two calls (``get_supported_operations``, then
``prepare_model``), three to a driver of AIDL v4 (``prepare_model_with_config``
after them, as Android 13's VTS), whose answers are known refusals; one at a time, each
call is a round trip in which harness and driver host take turns sleeping.
``nnvts run`` judges a model's mutations one after the other, in the order
the family named them, so the family can send the next few before their
cases run (``Connection.send_ahead``) and the host answers them while the
harness judges and records the case before.  Measured on the validation
sweep this is about a fifth of a model mutation's CPU (bench/README.md).

What stays as it was, because the host answers in order:

* each case reads its own answers and is charged with what happens while it
  waits for them: a driver that dies or hangs on a mutation sent ahead is
  found by that mutation's case, under that case's deadline;
* nothing is sent that the run will not judge: only the cases the family
  named for this run (``Mutations``), and only when the runner promises to
  run them all in order (``RunOptions.send_ahead``; the pytest plugin,
  which may deselect cases after naming them, does not);
* the first case after a new driver host (a restart, so a case re-run alone
  after a crash) sends nothing ahead.

A call that cannot be sent ahead (a full socket, a pool to declare, a model
too large) stops the window; its case sends it in the ordinary way, and
nothing goes ahead of it until that case is judged: a preparation held back
while its query went ahead would otherwise be answered after later
mutations, and a driver dying of one of those would be charged to it.

A driver that granted the ``batch`` feature (protocol revision 3) gets the
mutations ahead ``BATCH`` at a time, each mutation's query and preparations
together, in one message (``send_batch``), and a case judged alone sends
its own calls in one message too (``send_pair``), the model encoded once for
all of them (``sent_unchanged``).  Each case still reads
its own answers; a driver that dies or hangs in the middle of a batch of
several mutations is lost while the first of them waits, so that case's
attempt does not count: it is re-run alone on a restarted driver and judged
on what it does alone (``vts.run.isolated``), and the mutation that kills
or hangs the driver is the one charged, as without batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vts.families._kit.executions import sent_unchanged
from vts.families._kit.with_config import WITH_CONFIG_VERSION
from vts.families.validation.mutations import Mutation
from vts.hal.config import PrepareModelConfig
from vts.hal.interfaces import Device, spoken_version
from vts.hal.types import Model
from vts.ipc.client import PendingCall

#: How many mutations may be in flight after the one being judged.
WINDOW = 8
#: How many mutations one ``BATCH`` message carries ahead (a driver that granted ``batch``): the window is
#: refilled a batch at a time, so between 4 and 8 mutations are in flight.
BATCH = 4


class Mutations:
    """The model mutations of one model that a run judges, in case order (shared by their cases)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[Mutation]) -> None:
        self.items = tuple(items)


def preparation_config(mutation: Mutation) -> PrepareModelConfig:
    """The ``PrepareModelConfig`` of a mutation's ``prepareModelWithConfig``: its preference and priority, nothing
    else (ValidateModel.cpp, validatePrepareModelWithConfig: no deadline, no cache, no hints)."""
    return PrepareModelConfig(mutation.preference, mutation.priority)


def sends_with_config(device: Device) -> bool:
    """Whether a mutation is also sent through the calls AIDL v4 added (a driver of AIDL v4 or later, the version
    of ``config_rule_lacking``; asked once a case, so without building its reason)."""
    return spoken_version(device) >= WITH_CONFIG_VERSION


@dataclass(slots=True)
class InFlight:
    """The calls of one mutation sent ahead; ``support`` is None for a mutation that skips the query,
    ``with_config`` for a driver below AIDL v4 (or one whose ``prepareModelWithConfig`` could not go ahead)."""

    support: PendingCall | None
    preparation: PendingCall | None
    with_config: PendingCall | None = None


class SentAhead:
    """The mutations of the current model in flight to the current device."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self._mutations: Mutations | None = None
        self._device: Device | None = None
        self._sent: dict[int, InFlight] = {}
        self._next = 0  # the first position not sent ahead (or judged) yet
        self._fresh_device = False
        #: A mutation whose query went ahead but whose preparation could not: its case sends the preparation
        #: itself, so nothing after it may go before that case is judged (the host answers in order).
        self._hole: int | None = None
        #: Whether the current device takes ``BATCH`` messages (its driver granted ``batch``).
        self._batching = False
        #: Whether the current device is sent each mutation's ``prepareModelWithConfig`` too (AIDL v4).
        self._with_config = False

    def take(self, mutations: Mutations, position: int, device: Device) -> InFlight | None:
        """The calls of the case at ``position``, if they were sent ahead to ``device``; forgets them."""
        if mutations is not self._mutations or device is not self._device:
            self._fresh_device = device is not self._device and self._device is not None
            self._mutations, self._device = mutations, device
            self._sent.clear()
            self._next = 0
            self._hole = None
            batch_ahead = getattr(device, "batch_ahead", None)
            self._batching = callable(batch_ahead) and batch_ahead() is not None
            self._with_config = sends_with_config(device)
        return self._sent.pop(position, None)

    def top_up(self, position: int, mutated: Callable[[Mutation], Model], made_from: Model | None = None) -> None:
        """Send the mutations after ``position`` until ``window`` are in flight, or one cannot go.

        ``mutated`` makes a mutation's model, from ``made_from`` where given (``sent_unchanged``).
        Called once the case at ``position`` is judged.  The first case on a new driver host sends
        nothing: after a crash, that is the crashed case re-run alone.
        """
        mutations, device = self._mutations, self._device
        if mutations is None or device is None:
            return
        if self._fresh_device:
            self._fresh_device = False
            self._next = position + 1
            return
        if self._hole is not None:
            if position < self._hole:
                return  # a later call would overtake the preparation that case still has to send
            self._hole = None
        start = max(self._next, position + 1)
        end = min(len(mutations.items), position + 1 + self.window)
        if self._batching:
            self._top_up_batched(mutations, device, start, end, mutated, made_from)
            return
        support_ahead = getattr(device, "get_supported_operations_ahead", None)
        prepare_ahead = getattr(device, "prepare_model_ahead", None)
        config_ahead = getattr(device, "prepare_model_with_config_ahead", None) if self._with_config else None
        if support_ahead is None or prepare_ahead is None or (self._with_config and config_ahead is None):
            return
        for index in range(start, end):
            mutation = mutations.items[index]
            try:
                model = mutated(mutation)
            except Exception:
                return  # the case will build it again and be charged with what goes wrong
            with sent_unchanged(device, model, made_from):
                support = support_ahead(model) if mutation.query_support else None
                if mutation.query_support and support is None:
                    return
                preparation = prepare_ahead(model, mutation.preference, mutation.priority)
                with_config = None
                if preparation is not None and config_ahead is not None:
                    with_config = config_ahead(model, preparation_config(mutation))
            self._sent[index] = InFlight(support, preparation, with_config)
            self._next = index + 1
            if preparation is None or (config_ahead is not None and with_config is None):
                self._hole = index
                return

    def _top_up_batched(self, mutations: Mutations, device: Device, start: int, end: int,
                        mutated: Callable[[Mutation], Model], made_from: Model | None) -> None:
        """Send the mutations ``start`` to ``end`` ahead, ``BATCH`` to a message (fewer only at the model's end)."""
        while start < end:
            if end - start < BATCH and end < len(mutations.items):
                return  # the window has room for less than a batch: wait for a whole one
            batch = device.batch_ahead()  # type: ignore[attr-defined]
            if batch is None:
                return
            sent = send_batch(device, batch, mutations.items, range(start, min(end, start + BATCH)), mutated,
                              made_from, self._with_config)
            if not sent:
                return
            self._sent.update(sent)
            self._next = max(sent) + 1
            if len(sent) < min(end - start, BATCH):
                return  # one could not go: its case sends it
            start = self._next


def send_batch(device: Device, batch: Any, items: Sequence[Mutation], indexes: Iterable[int],
               mutated: Callable[[Mutation], Model], made_from: Model | None,
               with_config: bool = False) -> dict[int, InFlight]:
    """Add the mutations at ``indexes`` to ``batch`` (until one cannot go) and send it: what was sent, by index.
    ``with_config``: each mutation's ``prepareModelWithConfig`` goes with its other calls."""
    sent: dict[int, InFlight] = {}
    for index in indexes:
        mutation = items[index]
        try:
            model = mutated(mutation)
        except Exception:
            break  # the case will build it again and be charged with what goes wrong
        in_flight = _add_calls(device, batch, model, mutation, made_from, with_config)
        if in_flight is None:
            break
        sent[index] = in_flight
    return sent if sent and batch.send(shared=len(sent) > 1) else {}


def send_pair(device: Device, model: Model, mutation: Mutation, made_from: Model | None,
              with_config: bool = False) -> InFlight | None:
    """A mutation's query and preparation (and ``prepareModelWithConfig`` where ``with_config``) sent together in
    one ``BATCH`` (one exchange), for its own case to read now; None when the device takes no batches or they
    cannot go (then they are sent one by one)."""
    batch_ahead = getattr(device, "batch_ahead", None)
    batch = batch_ahead() if callable(batch_ahead) else None
    if batch is None:
        return None
    in_flight = _add_calls(device, batch, model, mutation, made_from, with_config)
    return in_flight if in_flight is not None and batch.send() else None


def _add_calls(device: Device, batch: Any, model: Model, mutation: Mutation, made_from: Model | None,
               with_config: bool) -> InFlight | None:
    """Add one mutation's calls to ``batch``: the query (not for a preference or priority mutation), the
    preparation and, ``with_config``, ``prepareModelWithConfig``; None, and nothing added, if any cannot go."""
    mark = batch.mark()
    with sent_unchanged(device, model, made_from):
        support = device.get_supported_operations_ahead(model, batch) if mutation.query_support else None  # type: ignore[attr-defined]
        preparation = config = None
        if support is not None or not mutation.query_support:
            if not with_config:
                preparation = device.prepare_model_ahead(model, mutation.preference, mutation.priority, batch)  # type: ignore[attr-defined]
            else:  # the second preparation's arguments copied from the first's (the proxy's own pair)
                both = getattr(device, "prepare_model_both_ways_ahead", None)
                pair = both(model, mutation.preference, mutation.priority, batch) if callable(both) else None
                preparation, config = pair if pair is not None else (None, None)
    if preparation is None:
        batch.rollback(mark)
        return None
    return InFlight(support, preparation, config)
