"""The protocol's encoding and framing: lossless round trips, descriptors, and refusal of malformed input."""

from __future__ import annotations

import os
import struct

import pytest

from vts.hal import memory
from vts.hal.types import (
    BufferDesc,
    BufferRole,
    Capabilities,
    DataLocation,
    ExecutionResult,
    Extension,
    ExtensionNameAndPrefix,
    MemoryToken,
    Model,
    Operand,
    OperandPerformance,
    OperandTypeInformation,
    Operation,
    OutputShape,
    PerformanceInfo,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    Timing,
)
from vts.ipc import protocol as p
from vts.ipc.errors import ProtocolError


def _pools_by_id(*pools):
    table = {i + 1: pool for i, pool in enumerate(pools)}
    ids = {id(pool): i for i, pool in table.items()}
    return (lambda pool: ids[id(pool)]), table.__getitem__


def _roundtrip(write, read):
    w = p.Writer()
    write(w)
    r = p.Reader(bytes(w.buf), w.fds)
    value = read(r)
    r.end()
    return value


def test_model_roundtrip_keeps_every_field_including_invalid_values():
    pool = memory.allocate(memory.ASHMEM, 64)
    try:
        main = Subgraph(
            operands=[
                # Values a validation mutation stores: beyond uint32, negative, a non-float32 scale.
                Operand(3, [2, 0, 2**33], 1, 0.1, -7, 1),
                Operand(11, [4, 3], 1, 0.0, 0, 4, DataLocation(0, 8, 12),
                        SymmPerChannelQuantParams([0.5, 0.25, 0.125], 1)),
                Operand(0x10002, [], 0, 0.0, 0, 3, DataLocation(0, 0, 4), b"\x01\x02"),
                Operand(15, [], 1, 0.0, 0, 6, DataLocation(0, 0, 0)),
                Operand(3, [2], 0, 0.0, 0, 2),
            ],
            operations=[Operation(96, [3, 0, 1], [4]), Operation(-1, [], [2**40])],
            input_indexes=[0],
            output_indexes=[4, -3],
        )
        model = Model(main, [Subgraph([], [], [], [])], b"\x00\x01\x02\x03", [pool], True,
                      [ExtensionNameAndPrefix("com.example.ext", 1)])
        memory_id, pool_of = _pools_by_id(pool)
        back = _roundtrip(lambda w: p.write_model(w, model, memory_id), lambda r: p.read_model(r, pool_of))
        assert back == model
        assert back.main.operands[0].scale == 0.1  # f64 on the wire: a float32 would round it
    finally:
        pool.close()


def test_request_roundtrip_with_token_pool_and_omitted_argument():
    pool = memory.allocate(memory.MMAP_FD, 16)
    try:
        request = Request(
            inputs=[RequestArgument(False, DataLocation(0, 4, 8), [2, 1]), RequestArgument(True)],
            outputs=[RequestArgument(False, DataLocation(1, 0, 0), [])],
            pools=[pool, MemoryToken(7)],
        )
        memory_id, pool_of = _pools_by_id(pool)
        back = _roundtrip(lambda w: p.write_request(w, request, memory_id), lambda r: p.read_request(r, pool_of))
        assert back == request
    finally:
        pool.close()


def test_answers_roundtrip():
    perf = PerformanceInfo(0.5, 2.0)
    caps = Capabilities(perf, perf, (OperandPerformance(3, PerformanceInfo(1.0, 1.0)),), perf, perf)
    assert _roundtrip(lambda w: p.write_capabilities(w, caps), p.read_capabilities) == caps
    exts = [Extension("com.example.x", (OperandTypeInformation(1, True, 4),))]
    assert _roundtrip(lambda w: p.write_extensions(w, exts), p.read_extensions) == exts
    result = ExecutionResult((OutputShape((2, 3), True), OutputShape((), False)), Timing(5, 2**64 - 1))
    assert _roundtrip(lambda w: p.write_execution_result(w, result), p.read_execution_result) == result
    error = ("too small", (OutputShape((4,), False),), None)
    assert _roundtrip(lambda w: p.write_error(w, *error), p.read_error) == error
    roles = [BufferRole(0, 1, 0.5)]
    assert _roundtrip(lambda w: p.write_roles(w, roles), p.read_roles) == roles
    desc = BufferDesc([0, 4])
    assert _roundtrip(lambda w: p.write_buffer_desc(w, desc), p.read_buffer_desc) == desc


def test_preamble_roundtrip():
    preamble = p.Preamble([p.PoolDeclaration(3, "ashmem", 2**40, 0), p.PoolDeclaration(4, "mmap_fd", 0, -1)],
                          [1, 2], [9])
    w = p.Writer()
    p.write_preamble(w, preamble)
    assert p.read_preamble(p.Reader(bytes(w.buf), [5])) == preamble


@pytest.mark.parametrize(("body", "why"), [
    (b"\x01\x00", "body ends early"),
    (struct.pack("<I", 10**6), "overruns the body"),
    (struct.pack("<I", 0) + b"x", "unexpected bytes"),
])
def test_reader_refuses_malformed_bodies(body, why):
    r = p.Reader(body)
    with pytest.raises(ProtocolError, match=why):
        r.i64_list()
        r.end()


def _pair():
    return p.socket_pair()


def test_framing_carries_descriptors_and_shares_memory():
    a, b = _pair()
    pool = memory.allocate(memory.ASHMEM, 4096)
    try:
        pool.write(0, b"shared")
        p.send_message(a, 7, p.Method.EXECUTE, 0, b"body", [pool.fd])
        message = p.Receiver(b).receive()
        assert message is not None
        assert (message.seq, message.code, message.body) == (7, p.Method.EXECUTE, b"body")
        (fd,) = message.fds
        seen = memory.from_fd("ashmem", 4096, fd)
        assert seen.read(0, 6) == b"shared"
        seen.write(0, b"SHARED")  # a write on one side is visible on the other: no copy was made
        assert pool.read(0, 6) == b"SHARED"
        seen.close()
    finally:
        pool.close()
        a.close()
        b.close()


def test_large_bodies_travel_in_a_memfd():
    a, b = _pair()
    try:
        body = os.urandom(3 * p.MAX_INLINE_BODY + 5)
        p.send_message(a, 1, p.Method.PREPARE_MODEL, 0, body)
        message = p.Receiver(b).receive()
        assert message is not None and message.body == body and message.fds == []
    finally:
        a.close()
        b.close()


def test_end_of_stream_and_torn_records():
    a, b = _pair()
    receiver = p.Receiver(b)
    a.send(p.HEADER.pack(10, 1, 1, 0, 0, 0) + b"short")  # declares 10 body bytes, carries 5
    with pytest.raises(ProtocolError, match="declares a 10-byte body"):
        receiver.receive()
    a.send(p.HEADER.pack(0, 2, 1, 0, 1, 0))  # declares a descriptor it does not carry
    with pytest.raises(ProtocolError, match="declares 1 file descriptors"):
        receiver.receive()
    a.close()
    assert receiver.receive() is None
    b.close()


def test_truncated_requests_are_refused_at_every_length():
    pool = memory.allocate(memory.ASHMEM, 16)
    try:
        request = Request([RequestArgument(False, DataLocation(0, 0, 8), [2])], [RequestArgument()],
                          [pool, MemoryToken(3)])
        memory_id, pool_of = _pools_by_id(pool)
        w = p.Writer()
        p.write_request(w, request, memory_id)
        body = bytes(w.buf)
        assert p.read_request(p.Reader(body), pool_of) == request
        for cut in range(len(body)):
            with pytest.raises(ProtocolError):
                r = p.Reader(body[:cut])
                p.read_request(r, pool_of)
                r.end()
    finally:
        pool.close()


def test_fused_operand_codec_writes_and_reads_the_field_by_field_bytes():
    """Operands of up to eight dimensions travel through one struct each (issue 23): same bytes, same values."""
    from vts.hal.types import DataLocation, Operand, SymmPerChannelQuantParams
    from vts.ipc.protocol import Reader, Writer, codec

    operands = [
        Operand(3, [], 0, 0.0, 0, 0, DataLocation(0, 0, 0), None),
        Operand(0, [1, 2, 3, 4], 2, 0.5, -3, 2, DataLocation(1, 64, 128), None),
        Operand(2, list(range(1, 9)), 1, 1.0, 0, 1, DataLocation(0, 0, 0), SymmPerChannelQuantParams([0.5, 0.25], 0)),
        Operand(2, list(range(1, 10)), 1, 1.0, 0, 1, DataLocation(0, 0, 0), None),  # nine: field by field
        Operand(0x10000, [7], 1, 0.0, 0, 0, DataLocation(0, 0, 0), b"\x01\x02"),
    ]
    for operand in operands:
        fused, fields = Writer(), Writer()
        codec.write_operand(fused, operand)
        codec._write_operand_fields(fields, operand)
        assert bytes(fused.buf) == bytes(fields.buf)
        tail = b"\xaa"
        reader = Reader(bytes(fused.buf) + tail, [])
        assert codec.read_operand(reader) == operand
        assert reader.data[reader.pos:] == tail
        # A body cut short anywhere reads as the field-by-field form says, never as a wrong operand.
        for cut in range(len(fused.buf)):
            with pytest.raises(ProtocolError):
                codec.read_operand(Reader(bytes(fused.buf[:cut]), []))
