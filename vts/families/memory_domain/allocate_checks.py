"""VTS MemoryDomainAllocateTest (15 tests) and MemoryDomainCopyTest (7 tests), in MemoryDomainTests.cpp.

Each test is a function of a ``MemoryContext``; statuses the suite requires
are checked next to the call.  Every allocation in the Allocate tests is
invalid and must be refused (``validate_allocate``: INVALID_ARGUMENT or
GENERAL_FAILURE, no buffer).  The Copy tests allocate a buffer for conv
input 0 and output 0 and check ``IBuffer::copyFrom`` / ``copyTo`` against
the IBuffer.hal rules; a driver answering GENERAL_FAILURE to the allocation
(no memory domains, or no dynamic-shape buffers) skips them.
"""

from __future__ import annotations

from collections.abc import Callable

from vts.families.memory_domain.context import GF, IA, NONE, HarnessPreparedModel, MemoryContext, role
from vts.hal.interfaces import PreparedModel
from vts.model.builtin.memory_models import CONFLICT_TYPE

MemoryTest = Callable[[MemoryContext], None]


def _both_sides(ctx: MemoryContext, what: str, models: list[PreparedModel | None], io_index: int = 0,
                model_index: int = 0, dims: tuple[int, ...] = ()) -> None:
    """The same invalid role once as an input role, once as an output role."""
    roles = [role(io_index, model_index)]
    ctx.validate_allocate(f"{what} (input role)", models, inputs=roles, dims=dims)
    ctx.validate_allocate(f"{what} (output role)", models, outputs=roles, dims=dims)


def _conflicting(ctx: MemoryContext, what: str, first: PreparedModel, second: PreparedModel) -> None:
    """testConflictOperands: roles of two models whose operands disagree, in three combinations."""
    models: list[PreparedModel | None] = [first, second]
    ctx.validate_allocate(f"{what}: two input roles", models, inputs=[role(0, 0), role(0, 1)])
    ctx.validate_allocate(f"{what}: an input and an output role", models, inputs=[role(0, 0)],
                          outputs=[role(0, 1)])
    ctx.validate_allocate(f"{what}: two output roles", models, outputs=[role(0, 0), role(0, 1)])


# -- MemoryDomainAllocateTest --------------------------------------------------


def empty_role(ctx: MemoryContext) -> None:
    ctx.validate_allocate("no prepared models and no roles", [])
    prepared = ctx.conv()
    ctx.validate_allocate("a prepared model but no roles", [prepared])


def nullptr_prepared_model(ctx: MemoryContext) -> None:
    _both_sides(ctx, "a null prepared model", [None])


def invalid_prepared_model(ctx: MemoryContext) -> None:
    _both_sides(ctx, "a prepared model the harness implemented (not the driver's)", [HarnessPreparedModel()])


def invalid_model_index(ctx: MemoryContext) -> None:
    _both_sides(ctx, "model index 1 of 1 prepared model", [ctx.conv()], model_index=1)


def invalid_io_index(ctx: MemoryContext) -> None:
    _both_sides(ctx, "io index 1 of a one-input, one-output model", [ctx.conv()], io_index=1)


def invalid_frequency(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    for frequency in (10.0, 0.0, -0.5):
        roles = [role(0, 0, frequency)]
        ctx.validate_allocate(f"frequency {frequency} (input role)", [prepared], inputs=roles)
        ctx.validate_allocate(f"frequency {frequency} (output role)", [prepared], outputs=roles)


def same_role_specified_twice(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    ctx.validate_allocate("input role 0 twice", [prepared], inputs=[role(0), role(0)])
    ctx.validate_allocate("output role 0 twice", [prepared], outputs=[role(0), role(0)])
    twice: list[PreparedModel | None] = [prepared, prepared]
    ctx.validate_allocate("input 0 of one model named through two model indices", twice,
                          inputs=[role(0, 0), role(0, 1)])
    ctx.validate_allocate("output 0 of one model named through two model indices", twice,
                          outputs=[role(0, 0), role(0, 1)])


def conflict_operand_type(ctx: MemoryContext) -> None:
    other = ctx.spec.replace(operand_type=CONFLICT_TYPE[ctx.spec.type])  # F32<->F16, QA8<->QAS8
    _conflicting(ctx, f"operand types {ctx.spec.type.name} and {other.type.name}", ctx.conv(), ctx.conv(other))


def conflict_scale(ctx: MemoryContext) -> None:
    _conflicting(ctx, "scales 0.5 and 1.0", ctx.conv(), ctx.conv(ctx.spec.replace(scale=1.0)))


def conflict_zero_point(ctx: MemoryContext) -> None:
    _conflicting(ctx, "zero points 0 and 10", ctx.conv(), ctx.conv(ctx.spec.replace(zero_point=10)))


def conflict_rank_between_roles(ctx: MemoryContext) -> None:
    _conflicting(ctx, "ranks 4 and 3", ctx.add(), ctx.add(ctx.spec.replace(dims=ctx.spec.dims[:-1])))


def conflict_dimensions_between_roles(ctx: MemoryContext) -> None:
    other = ctx.spec.replace(dims=(4, *ctx.spec.dims[1:]))
    _conflicting(ctx, "batch 1 and batch 4", ctx.conv(), ctx.conv(other))


def conflict_rank_between_role_and_desc(ctx: MemoryContext) -> None:
    _both_sides(ctx, "descriptor rank 3 for a rank-4 operand", [ctx.conv()], dims=ctx.spec.dims[:-1])


def conflict_dimensions_between_role_and_desc(ctx: MemoryContext) -> None:
    _both_sides(ctx, "descriptor batch 4 for a batch-1 operand", [ctx.conv()], dims=(4, *ctx.spec.dims[1:]))


def conflict_rank_with_scalar_role(ctx: MemoryContext) -> None:
    ctx.validate_allocate("descriptor dimensions [1] for the INT32 scalar input", [ctx.add()], inputs=[role(2)],
                          dims=(1,))


#: name -> (test, quantized types only)
ALLOCATE_TESTS: dict[str, tuple[MemoryTest, bool]] = {
    "EmptyRole": (empty_role, False),
    "NullptrPreparedModel": (nullptr_prepared_model, False),
    "InvalidPreparedModel": (invalid_prepared_model, False),
    "InvalidModelIndex": (invalid_model_index, False),
    "InvalidIOIndex": (invalid_io_index, False),
    "InvalidFrequency": (invalid_frequency, False),
    "SameRoleSpecifiedTwice": (same_role_specified_twice, False),
    "ConflictOperandType": (conflict_operand_type, False),
    "ConflictScale": (conflict_scale, True),
    "ConflictZeroPoint": (conflict_zero_point, True),
    "ConflictRankBetweenRoles": (conflict_rank_between_roles, False),
    "ConflictDimensionsBetweenRoles": (conflict_dimensions_between_roles, False),
    "ConflictRankBetweenRoleAndDesc": (conflict_rank_between_role_and_desc, False),
    "ConflictDimensionsBetweenRoleAndDesc": (conflict_dimensions_between_role_and_desc, False),
    "ConflictRankWithScalarRole": (conflict_rank_with_scalar_role, False),
}


# -- MemoryDomainCopyTest ------------------------------------------------------


def _dynamic(ctx: MemoryContext) -> MemoryContext:
    """The batch-0 variant: the conv model's input and output have an unknown batch."""
    ctx.spec = ctx.spec.replace(dims=(0, *ctx.spec.dims[1:]))
    return ctx


def _full(ctx: MemoryContext) -> tuple[int, ...]:
    return tuple(d or 1 for d in ctx.spec.dims)


def copy_from_invalid_memory_size(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(ctx.conv(), [0], [0])
    size = ctx.spec.data_size
    ctx.copy_from(buffer, ctx.shared(size // 2), (), IA, "from half-size memory")
    ctx.copy_from(buffer, ctx.shared(size * 2), (), IA, "from double-size memory")


def copy_from_invalid_memory_size_dynamic(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(_dynamic(ctx).conv(), [0], [0])
    size, full = ctx.spec.data_size, _full(ctx)
    good = ctx.shared(size)
    ctx.copy_from(buffer, ctx.shared(size // 2), full, IA, "from half-size memory")
    ctx.copy_from(buffer, ctx.shared(size * 2), full, IA, "from double-size memory")
    ctx.copy_from(buffer, good, full, NONE, "from right-size memory")
    ctx.copy_from(buffer, good, (2, *full[1:]), IA, "with batch 2 from batch-1-size memory")


def copy_from_invalid_dimensions(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(ctx.conv(), [0], [0])
    full = _full(ctx)
    memory = ctx.shared(ctx.spec.data_size)
    ctx.copy_from(buffer, memory, full[:-1], IA, "with rank 3")
    ctx.copy_from(buffer, memory, (2, *full[1:]), IA, "with batch 2")
    ctx.copy_from(buffer, memory, (0, *full[1:]), IA, "with an unspecified batch")
    ctx.copy_from(buffer, memory, (), NONE, "with no dimensions (the buffer's)")
    ctx.copy_from(buffer, memory, full, NONE, "with the full dimensions")


def copy_from_invalid_dimensions_dynamic(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(_dynamic(ctx).conv(), [0], [0])
    full = _full(ctx)
    memory = ctx.shared(ctx.spec.data_size)
    ctx.copy_from(buffer, memory, full[:-1], IA, "with rank 3")
    ctx.copy_from(buffer, memory, (2, *full[1:3], 4), IA, "with 4 channels instead of 8 (same byte size)")
    ctx.copy_from(buffer, memory, (*full[:3], 0), IA, "with an unspecified channel axis")
    ctx.copy_from(buffer, memory, (), IA, "with no dimensions while the buffer's shape is unknown")
    ctx.copy_from(buffer, memory, full, NONE, "with the full dimensions")


def copy_to_uninitialized_memory(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(ctx.conv(), [0], [0])
    ctx.copy_to(buffer, ctx.shared(ctx.spec.data_size), GF, "from a fresh (uninitialised) buffer")


def _copy_to_sizes(ctx: MemoryContext) -> None:
    buffer, _ = ctx.allocate_buffer(ctx.conv(), [0], [0])
    ctx.initialize(buffer)
    size = ctx.spec.data_size
    ctx.copy_to(buffer, ctx.shared(size // 2), IA, "into half-size memory")
    ctx.copy_to(buffer, ctx.shared(size * 2), IA, "into double-size memory")
    ctx.copy_to(buffer, ctx.shared(size), NONE, "into right-size memory")


def copy_to_invalid_memory_size(ctx: MemoryContext) -> None:
    _copy_to_sizes(ctx)


def copy_to_invalid_memory_size_dynamic(ctx: MemoryContext) -> None:
    _copy_to_sizes(_dynamic(ctx))


def copy_from_failure_uninitializes(ctx: MemoryContext) -> None:
    """nnvts: a failed copy_from leaves the buffer uninitialised, whatever it held (IBuffer::copyFrom).

    The HAL: "if the copy fails, the buffer's contents are uninitialised".
    A driver that keeps the old contents lets a later copy_to (or use as an
    input) read data the client was told is gone; each failure kind the
    suite produces (wrong memory size, wrong dimensions) is tried on a
    freshly initialised buffer.
    """
    buffer, _ = ctx.allocate_buffer(ctx.conv(), [0], [0])
    size, full = ctx.spec.data_size, _full(ctx)
    for bad, dims, what in ((ctx.shared(size // 2), (), "from half-size memory"),
                            (ctx.shared(size), (2, *full[1:]), "with batch 2")):
        ctx.initialize(buffer)
        ctx.copy_from(buffer, bad, dims, IA, f"{what} (after a successful one)")
        ctx.copy_to(buffer, ctx.shared(size), GF, f"after a failed copy_from {what} (must be uninitialised)")


COPY_TESTS: dict[str, MemoryTest] = {
    "CopyFrom_InvalidMemorySize": copy_from_invalid_memory_size,
    "CopyFrom_InvalidMemorySize_DynamicShape": copy_from_invalid_memory_size_dynamic,
    "CopyFrom_InvalidDimensions": copy_from_invalid_dimensions,
    "CopyFrom_InvalidDimensions_DynamicShape": copy_from_invalid_dimensions_dynamic,
    "CopyTo_UninitializedMemory": copy_to_uninitialized_memory,
    "CopyTo_InvalidMemorySize": copy_to_invalid_memory_size,
    "CopyTo_InvalidMemorySize_DynamicShape": copy_to_invalid_memory_size_dynamic,
    "CopyFrom_FailureUninitializes": copy_from_failure_uninitializes,
}
