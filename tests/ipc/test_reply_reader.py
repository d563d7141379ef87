"""The harness's reader of a driver host's answers, when the host dies with requests of ours unread.

On a ``SOCK_SEQPACKET`` socket Linux reports such a death as a reset, once, before the answers the host
did send: the calls those answer must get them, and only the first call left unanswered is charged with
the death (a validation case was once blamed for the mutation sent ahead after it).
"""

from __future__ import annotations

import pytest

from vts.ipc import protocol as p
from vts.ipc.errors import DriverCrashed
from vts.ipc.protocol import Method
from vts.ipc.reply_reader import ReplyReader, Slot


def test_answers_sent_before_a_death_with_requests_unread_reach_their_calls():
    harness, host = p.socket_pair()
    try:
        reader = ReplyReader(harness, lambda: DriverCrashed("exited with status 70"))
        answered, ahead = Slot(Method.PREPARE_MODEL), Slot(Method.GET_SUPPORTED_OPERATIONS)
        reader.expect(1, answered)
        reader.expect(2, ahead)
        p.send_message(harness, 1, Method.PREPARE_MODEL, 0, b"")
        p.send_message(harness, 2, Method.GET_SUPPORTED_OPERATIONS, 0, b"")  # sent ahead, never read
        assert p.Receiver(host).receive() is not None  # the host reads the first request only
        p.send_message(host, 1, Method.PREPARE_MODEL | p.REPLY, 4, b"")  # answers it, then dies
        host.close()

        reader.wait(lambda: answered.message is not None, deadline=None, what="prepare_model")
        assert answered.message is not None and answered.message.status == 4
        assert reader.failure is None
        with pytest.raises(DriverCrashed) as lost:
            reader.wait(lambda: ahead.message is not None, deadline=None, what="get_supported_operations")
        assert "during get_supported_operations" in lost.value.reason
    finally:
        harness.close()
