"""Request mutations as plain data, and how one is applied to a request.

In the kit because two families send malformed requests: ``validation`` on
the synchronous, asynchronous and fenced paths, and ``burst`` through a
burst (the suite's removed input and removed output, VTS ValidateRequest.cpp
``removeInputTest`` / ``removeOutputTest``).  Keeping the mutation a value
(``kind`` and ``args``) lets a case carry it to a worker process and be
re-run alone by its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from vts.hal.types import DataLocation, Request
from vts.model.casemodel import BuiltRequest


@dataclass(frozen=True, slots=True)
class RequestMutation:
    """One request mutation as plain data: ``kind`` names the change, ``args`` parameterise it."""

    slug: str
    description: str
    kind: str
    args: tuple[int, ...] = ()


def apply_request_mutation(request: Request, built: BuiltRequest, mutation: RequestMutation) -> None:
    kind, args = mutation.kind, mutation.args
    if kind == "remove_input":
        request.inputs.pop(args[0])
        return
    if kind == "remove_output":
        request.outputs.pop(args[0])
        return
    if kind in ("input_dims_rank", "input_dims_conflict"):
        request.inputs[0].dimensions = list(args)
        return
    side = "inputs" if kind.startswith("input_") else "outputs"
    argument = next(a for a in getattr(request, side) if not a.has_no_value)
    pool_size = (built.input_pool if side == "inputs" else built.output_pool).size
    loc = argument.location
    if kind.endswith("pool_index"):
        argument.location = DataLocation(len(request.pools) + 5, loc.offset, loc.length)
    elif kind.endswith("offset"):
        argument.location = DataLocation(loc.pool_index, pool_size + 4, loc.length)
    elif kind.endswith("length"):
        argument.location = DataLocation(loc.pool_index, loc.offset, pool_size - loc.offset + 1)
    else:
        raise ValueError(f"unknown request mutation {kind!r}")
