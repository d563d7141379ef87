"""Model mutations of the HAL validation suite (VTS ValidateModel.cpp), one small mutator each.

Every mutator has two halves: ``enumerate`` lists the mutations it can make
to a model as plain ``Mutation`` records (so a case is data, re-runnable by
name), and ``apply`` makes one of them on a fresh copy of the model.  The
copy shares the original's operands and operations until a mutator changes
one (``own_operand``, ``own_operation``): copying a model of a hundred
operands for a mutation that changes one was a quarter of the harness's
time in the sweep, and an out-of-process driver's proxy sends the operands
still shared as the original's bytes (``Connection.model_sent_unchanged``).  Each
mutation describes in words what it broke; that sentence is what a vendor
reads in the failure message.

The set, order and skips follow the 1.3 suite, so the single-operation ADD
model yields exactly the suite's 126 preparation cases (122 with a support
query).  The suite's operand removal does not renumber the surviving
references (they end up pointing one operand further along); that quirk is
kept on purpose, because renumbering correctly turns some removals into
valid models (drop one of two CONCATENATION inputs and the model is a legal
one-input concatenation), which would no longer test anything.

The mutators live by what they break: one operand's field
(``operand_mutations``), an operand's type against its operation's signature
(``operand_substitution``), the graph's wiring (``operation_mutations``), on
what they all share (``mutator_base``).  This module puts them in the suite's
order, adds the preference and priority mutations, and is what callers import.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families.validation import operand_mutations, operand_substitution, operation_mutations
from vts.families.validation.mutator_base import Mutation, MutatorApply, MutatorEnumerate, Mutators, clone_model
from vts.hal.enums import ExecutionPreference, Priority
from vts.hal.types import Model

__all__ = ["MUTATORS", "Mutation", "MutatorApply", "MutatorEnumerate", "apply_mutation", "clone_model",
           "enumerate_mutations"]


def _execution_preference(model: Model) -> Iterator[Mutation]:
    for value in (ExecutionPreference.LOW_POWER - 1, ExecutionPreference.SUSTAINED_SPEED + 1):
        yield Mutation("execution_preference", (value,), f"execution_preference_{value}",
                       f"execution preference {value} (valid: 0..2)", query_support=False, preference=value)


def _execution_priority(model: Model) -> Iterator[Mutation]:
    for value in (Priority.LOW - 1, Priority.HIGH + 1):
        yield Mutation("execution_priority", (value,), f"execution_priority_{value}",
                       f"priority {value} (valid: 0..2)", query_support=False, priority=value)


def _no_change(model: Model, m: Mutation) -> None:
    """Preference and priority mutations leave the model intact."""


_BY_KIND: Mutators = {
    **operand_mutations.MUTATORS,
    **operand_substitution.MUTATORS,
    **operation_mutations.MUTATORS,
    "execution_preference": (_execution_preference, _no_change),
    "execution_priority": (_execution_priority, _no_change),
}

#: In the suite's order (ValidateModel.cpp's validateModel).
MUTATORS: Mutators = {kind: _BY_KIND[kind] for kind in (
    "execution_order",
    "operand_type",
    "operand_rank",
    "operand_scale",
    "operand_zero_point",
    "operand_lifetime",
    "operand_input_output",
    "operand_consumers",
    "add_writer",
    "operation_operand_type",
    "operation_type",
    "operation_input_index",
    "operation_output_index",
    "remove_write",
    "remove_operand",
    "remove_operation",
    "remove_operation_input",
    "remove_operation_output",
    "add_operation_input",
    "add_operation_output",
    "execution_preference",
    "execution_priority",
)}


def enumerate_mutations(model: Model) -> Iterator[Mutation]:
    for enumerate_fn, _ in MUTATORS.values():
        yield from enumerate_fn(model)


def apply_mutation(model: Model, mutation: Mutation) -> Model:
    """A mutated copy of ``model`` (the original is untouched; what the mutation did not change is shared)."""
    mutated = clone_model(model)
    MUTATORS[mutation.kind][1](mutated, mutation)
    return mutated
