"""Model mutations sent to an out-of-process driver before their cases run.

A model mutation is two calls (``get_supported_operations``, then
``prepare_model``) whose answers are known refusals; one at a time, each
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
too large) stops the window; its case sends it in the ordinary way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vts.families._kit.executions import sent_unchanged
from vts.families.validation.mutations import Mutation
from vts.hal.interfaces import Device
from vts.hal.types import Model
from vts.ipc.client import PendingCall

#: How many mutations may be in flight after the one being judged.
WINDOW = 8


class Mutations:
    """The model mutations of one model that a run judges, in case order (shared by their cases)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[Mutation]) -> None:
        self.items = tuple(items)


@dataclass(slots=True)
class InFlight:
    """The calls of one mutation sent ahead; ``support`` is None for a mutation that skips the query."""

    support: PendingCall | None
    preparation: PendingCall | None


class SentAhead:
    """The mutations of the current model in flight to the current device."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self._mutations: Mutations | None = None
        self._device: Device | None = None
        self._sent: dict[int, InFlight] = {}
        self._next = 0  # the first position not sent ahead (or judged) yet
        self._fresh_device = False

    def take(self, mutations: Mutations, position: int, device: Device) -> InFlight | None:
        """The calls of the case at ``position``, if they were sent ahead to ``device``; forgets them."""
        if mutations is not self._mutations or device is not self._device:
            self._fresh_device = device is not self._device and self._device is not None
            self._mutations, self._device = mutations, device
            self._sent.clear()
            self._next = 0
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
        support_ahead = getattr(device, "get_supported_operations_ahead", None)
        prepare_ahead = getattr(device, "prepare_model_ahead", None)
        if support_ahead is None or prepare_ahead is None:
            return
        start = max(self._next, position + 1)
        end = min(len(mutations.items), position + 1 + self.window)
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
            self._sent[index] = InFlight(support, preparation)
            self._next = index + 1
            if preparation is None:
                return
