"""VTS MemoryDomainExecutionTest (7 tests, MemoryDomainTests.cpp), plus one nnvts addition.

Driver-allocated buffers used in requests: shared-memory arguments are
``{pool p, offset 0, length = data size}``, buffer arguments ``{pool p}``
with offset and length 0 (the HAL's rule for token pools).  Each test runs
on one path (sync, async or fenced); ``MemoryContext.execute`` checks the
status and that no timing and, on error, no shapes come back.

``StateTransitions`` and ``FailedExecutionUninitializes`` are not in VTS
either: they walk every initialisation state the HAL names (after
allocation, copy_from, failed copy_from, execution output, failed
execution) and check each through copy_to and use as an input.

``ReleasedToken`` is not in VTS: a token whose buffer the client released
must be refused (INVALID_ARGUMENT, as for an unknown token).  The HAL makes
tokens unique among *live* buffers and requires every use to be validated
at execution time; a driver that keeps serving a released buffer lets a
client reach memory it no longer owns.
"""

from __future__ import annotations

import gc

from vts.families.memory_domain.allocate_checks import MemoryTest
from vts.families.memory_domain.context import GF, IA, NONE, MemoryContext, device_arg, shared_arg, token_pool
from vts.hal.types import Request


def invalid_token(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    size = ctx.spec.data_size
    shared = ctx.shared(size)
    for token, why in ((0, "token 0 (invalid)"), (100, "token 100 (never allocated)")):
        pools = [shared, token_pool(token)]
        ctx.execute(prepared, Request([device_arg(1)], [shared_arg(0, size)], pools), IA, f"{why} as input")
        ctx.execute(prepared, Request([shared_arg(0, size)], [device_arg(1)], pools), IA, f"{why} as output")


def invalid_prepared_model(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    buffer, token = ctx.allocate_buffer(prepared, [0], [0])
    other = ctx.conv()  # an identical model prepared again: a different prepared model
    size = ctx.spec.data_size
    pools = [ctx.shared(size), token_pool(token)]
    ctx.initialize(buffer)
    ctx.execute(other, Request([device_arg(1)], [shared_arg(0, size)], pools), IA,
                "a buffer allocated for another prepared model, as input")
    ctx.execute(other, Request([shared_arg(0, size)], [device_arg(1)], pools), IA,
                "a buffer allocated for another prepared model, as output")


def invalid_io_index(ctx: MemoryContext) -> None:
    prepared = ctx.conv(copies=2)
    buffer, token = ctx.allocate_buffer(prepared, [0], [])
    size = ctx.spec.data_size
    pools = [ctx.shared(size), ctx.shared(size), ctx.shared(size), token_pool(token)]
    ctx.initialize(buffer)
    ctx.execute(prepared, Request([shared_arg(0, size), device_arg(3)], [shared_arg(1, size), shared_arg(2, size)],
                                  pools), IA, "a buffer allocated for input 0, used as input 1")
    ctx.execute(prepared, Request([shared_arg(0, size), shared_arg(1, size)], [shared_arg(2, size), device_arg(3)],
                                  pools), IA, "a buffer allocated for input 0, used as output 1")


def invalid_io_type(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    input_buffer, input_token = ctx.allocate_buffer(prepared, [0], [])
    output_buffer, output_token = ctx.allocate_buffer(prepared, [], [0])
    size = ctx.spec.data_size
    shared = ctx.shared(size)
    ctx.execute(prepared, Request([shared_arg(0, size)], [device_arg(1)], [shared, token_pool(input_token)]), IA,
                "an input-only buffer used as output")
    ctx.initialize(output_buffer)
    ctx.execute(prepared, Request([device_arg(1)], [shared_arg(0, size)], [shared, token_pool(output_token)]), IA,
                "an output-only buffer (initialised) used as input")
    del input_buffer


def uninitialized_memory(ctx: MemoryContext) -> None:
    prepared = ctx.conv()
    buffer, token = ctx.allocate_buffer(prepared, [0], [0])
    size = ctx.spec.data_size
    pools = [ctx.shared(size), token_pool(token)]
    as_input = Request([device_arg(1)], [shared_arg(0, size)], pools)
    ctx.execute(prepared, as_input, GF, "an uninitialised buffer as input")
    ctx.execute(prepared, Request([shared_arg(0, size)], [device_arg(1)], pools), NONE,
                "the buffer as output (initialising it)")
    ctx.execute(prepared, as_input, NONE, "the now initialised buffer as input")
    del buffer


def same_request_multiple_roles(ctx: MemoryContext) -> None:
    prepared = ctx.conv(copies=2)
    buffer, token = ctx.allocate_buffer(prepared, [0, 1], [0, 1])
    size = ctx.spec.data_size
    pools = [ctx.shared(size), ctx.shared(size), token_pool(token)]
    ctx.initialize(buffer)
    ctx.execute(prepared, Request([device_arg(2), shared_arg(0, size)], [device_arg(2), shared_arg(1, size)],
                                  pools), IA, "one buffer as input 0 and output 0")
    ctx.execute(prepared, Request([shared_arg(0, size), shared_arg(1, size)], [device_arg(2), device_arg(2)],
                                  pools), IA, "one buffer as both outputs")
    ctx.initialize(buffer)
    ctx.execute(prepared, Request([device_arg(2), device_arg(2)], [shared_arg(0, size), shared_arg(1, size)],
                                  pools), NONE, "one buffer as both inputs")


def invalid_dimensions(ctx: MemoryContext) -> None:
    """Batch-0 model, buffer fixed to batch 1 by its descriptor; batch-2 uses must fail (not on FENCED)."""
    full = ctx.spec.dims
    prepared = ctx.conv(ctx.spec.replace(dims=(0, *full[1:])))
    buffer, token = ctx.allocate_buffer(prepared, [0], [0], dims=full)
    bad = (2, *full[1:])
    bad_size = ctx.spec.data_size * 2
    pools = [ctx.shared(bad_size), token_pool(token)]
    ctx.initialize(buffer)
    ctx.execute(prepared, Request([device_arg(1, bad)], [shared_arg(0, bad_size, bad)], pools), IA,
                "a batch-1 buffer as input declared batch 2")
    ctx.execute(prepared, Request([shared_arg(0, bad_size, bad)], [device_arg(1, bad)], pools), IA,
                "a batch-1 buffer as output declared batch 2")
    ctx.execute(prepared, Request([shared_arg(0, bad_size, bad)], [device_arg(1)], pools), GF,
                "a batch-2 input computing a batch-2 output into a batch-1 buffer")


def released_token(ctx: MemoryContext) -> None:
    """nnvts: the token of a released buffer must be refused like an unknown one."""
    prepared = ctx.conv()
    buffer, token = ctx.allocate_buffer(prepared, [0], [0])
    ctx.initialize(buffer)
    del buffer
    gc.collect()
    size = ctx.spec.data_size
    pools = [ctx.shared(size), token_pool(token)]
    ctx.execute(prepared, Request([device_arg(1)], [shared_arg(0, size)], pools), IA,
                "the token of a released buffer as input")
    ctx.execute(prepared, Request([shared_arg(0, size)], [device_arg(1)], pools), IA,
                "the token of a released buffer as output")


def state_transitions(ctx: MemoryContext) -> None:
    """nnvts: every initialisation state transition the HAL names, observed through executions.

    IDevice::allocate / IBuffer: a buffer is uninitialised after allocation,
    initialised by a successful copy_from or by being the output of a
    successful execution, and uninitialised again after a failed copy_from;
    an uninitialised buffer used as an input is GENERAL_FAILURE and copy_to
    from it is GENERAL_FAILURE.  VTS checks only the first two steps
    (UninitializedMemory); a driver that keeps a buffer usable after a
    failed copy_from passes VTS and fails here.
    """
    prepared = ctx.conv()
    buffer, token = ctx.allocate_buffer(prepared, [0], [0])
    size = ctx.spec.data_size
    shared = ctx.shared(size)
    pools = [shared, token_pool(token)]
    as_input = Request([device_arg(1)], [shared_arg(0, size)], pools)
    as_output = Request([shared_arg(0, size)], [device_arg(1)], pools)
    ctx.copy_to(buffer, ctx.shared(size), GF, "from a fresh buffer (uninitialised after allocation)")
    ctx.initialize(buffer)
    ctx.execute(prepared, as_input, NONE, "a buffer initialised by copy_from, as input")
    ctx.copy_from(buffer, ctx.shared(size // 2), (), IA, "from half-size memory")
    ctx.execute(prepared, as_input, GF, "a buffer whose last copy_from failed (uninitialised), as input")
    ctx.copy_to(buffer, ctx.shared(size), GF, "from a buffer whose last copy_from failed")
    ctx.execute(prepared, as_output, NONE, "the buffer as output (initialising it)")
    ctx.copy_to(buffer, ctx.shared(size), NONE, "from a buffer initialised as an execution output")
    ctx.execute(prepared, as_input, NONE, "a buffer initialised as an execution output, as input")


def failed_execution_uninitializes(ctx: MemoryContext) -> None:
    """nnvts: a failed execution writing a buffer as output leaves it uninitialised (IDevice::allocate).

    The failure is the suite's InvalidDimensions run-time conflict: a
    batch-0 model computes a batch-2 output into a buffer fixed to batch 1
    (GENERAL_FAILURE).  Afterwards the buffer, initialised before, must be
    uninitialised: as input GENERAL_FAILURE, copy_to GENERAL_FAILURE.  Not
    on the fenced path, which cannot take the unknown batch.
    """
    full = ctx.spec.dims
    prepared = ctx.conv(ctx.spec.replace(dims=(0, *full[1:])))
    buffer, token = ctx.allocate_buffer(prepared, [0], [0], dims=full)
    size = ctx.spec.data_size
    bad = (2, *full[1:])
    pools = [ctx.shared(size * 2), token_pool(token), ctx.shared(size)]
    ctx.initialize(buffer)
    ctx.execute(prepared, Request([device_arg(1, full)], [shared_arg(2, size, full)], pools), NONE,
                "the initialised buffer as a batch-1 input (sanity check of the request)")
    ctx.execute(prepared, Request([shared_arg(0, size * 2, bad)], [device_arg(1)], pools), GF,
                "a batch-2 input computing a batch-2 output into a batch-1 buffer")
    ctx.execute(prepared, Request([device_arg(1, full)], [shared_arg(2, size, full)], pools), GF,
                "the buffer after a failed execution wrote it (uninitialised), as input")
    ctx.copy_to(buffer, ctx.shared(size), GF, "from a buffer a failed execution wrote")


#: name -> (test, runs on the fenced path)
EXECUTION_TESTS: dict[str, tuple[MemoryTest, bool]] = {
    "InvalidToken": (invalid_token, True),
    "InvalidPreparedModel": (invalid_prepared_model, True),
    "InvalidIOIndex": (invalid_io_index, True),
    "InvalidIOType": (invalid_io_type, True),
    "UninitializedMemory": (uninitialized_memory, True),
    "SameRequestMultipleRoles": (same_request_multiple_roles, True),
    "InvalidDimensions": (invalid_dimensions, False),  # fenced execution cannot take dynamic shapes
    "ReleasedToken": (released_token, True),
    "StateTransitions": (state_transitions, True),
    "FailedExecutionUninitializes": (failed_execution_uninitializes, False),  # dynamic batch: not fenced
}
