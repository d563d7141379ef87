"""The nnvts driver protocol: message framing and the binary encoding of HAL structures.

docs/protocol.md is the normative description; this package is its Python
implementation, used by both ends (``vts.ipc.client`` in the harness,
``vts.ipc.host`` serving a Python driver).  The encoding is deliberately small and fixed so a
driver in C needs only a cursor over little-endian integers:

* a 16-byte header (body length, sequence number, code, status, number of
  file descriptors, flags) followed by the body;
* file descriptors (memory pools, cache files, fences) travel with
  SCM_RIGHTS on the header's first byte and are named in the body by their
  index in the message's descriptor list;
* every HAL integer field is an ``i64`` (validation mutations store values
  outside the HAL's uint32 range and the driver must see exactly them), every
  float an ``f64`` (a float32 would round a quantization scale and change
  results between in-process and out-of-process runs), timings ``u64``.

Three modules, each on the one below: ``framing`` (header, descriptors, message
kinds), ``primitives`` (``Writer`` and ``Reader``) and ``codec`` (HAL structures).
Everything is named here too, so ``from vts.ipc import protocol as p`` reaches it all.
"""

from vts.ipc.errors import ProtocolError  # what a reader raises, named with the protocol
from vts.ipc.protocol.codec import (
    EMPTY_PREAMBLE,
    PoolDeclaration,
    PoolRefReader,
    PoolRefWriter,
    Preamble,
    SubgraphBytes,
    read_buffer_desc,
    read_capabilities,
    read_error,
    read_execution_result,
    read_extensions,
    read_location,
    read_model,
    read_operand,
    read_output_shapes,
    read_pool_ref,
    read_preamble,
    read_request,
    read_roles,
    read_subgraph,
    read_timing,
    write_buffer_desc,
    write_capabilities,
    write_error,
    write_execution_result,
    write_extensions,
    write_location,
    write_model,
    write_operand,
    write_operation,
    write_output_shapes,
    write_pool_ref,
    write_preamble,
    write_request,
    write_roles,
    write_subgraph,
    write_timing,
)
from vts.ipc.protocol.framing import (
    BODY_IN_FD,
    DEVICE_FLAGS,
    FOREIGN_HANDLE,
    HEADER,
    MAX_BODY,
    MAX_FDS,
    MAX_INLINE_BODY,
    NOTIFY,
    NULL_HANDLE,
    PROTOCOL_VERSION,
    REPLY,
    SOCKET_TYPE,
    ExtraTag,
    FenceTag,
    Message,
    Method,
    PoolTag,
    Receiver,
    Refused,
    WireStatus,
    close_fds,
    send_message,
    socket_pair,
)
from vts.ipc.protocol.primitives import (
    Reader,
    Writer,
)

__all__ = [
    "BODY_IN_FD",
    "DEVICE_FLAGS",
    "EMPTY_PREAMBLE",
    "FOREIGN_HANDLE",
    "HEADER",
    "MAX_BODY",
    "MAX_FDS",
    "MAX_INLINE_BODY",
    "NOTIFY",
    "NULL_HANDLE",
    "PROTOCOL_VERSION",
    "REPLY",
    "SOCKET_TYPE",
    "ExtraTag",
    "FenceTag",
    "Message",
    "Method",
    "PoolDeclaration",
    "PoolRefReader",
    "PoolRefWriter",
    "PoolTag",
    "Preamble",
    "ProtocolError",
    "Reader",
    "Receiver",
    "Refused",
    "SubgraphBytes",
    "WireStatus",
    "Writer",
    "close_fds",
    "read_buffer_desc",
    "read_capabilities",
    "read_error",
    "read_execution_result",
    "read_extensions",
    "read_location",
    "read_model",
    "read_operand",
    "read_output_shapes",
    "read_pool_ref",
    "read_preamble",
    "read_request",
    "read_roles",
    "read_subgraph",
    "read_timing",
    "send_message",
    "socket_pair",
    "write_buffer_desc",
    "write_capabilities",
    "write_error",
    "write_execution_result",
    "write_extensions",
    "write_location",
    "write_model",
    "write_operand",
    "write_operation",
    "write_output_shapes",
    "write_pool_ref",
    "write_preamble",
    "write_request",
    "write_roles",
    "write_subgraph",
    "write_timing",
]
