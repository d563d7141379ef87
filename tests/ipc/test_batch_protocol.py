"""Protocol revision 3: features negotiated in OPEN, BATCH messages, and drivers of revisions 1 and 2 unchanged.

The exchanges are spoken byte by byte to both hosts (the Python host serving
the reference, the C sample), so each end is checked against the wire
format of docs/protocol.md §5.3-5.4, not against the other end's code.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT
from vts.families.base import RunOptions
from vts.families.validation.family import ValidationFamily
from vts.hal.enums import ErrorStatus, HalVersion
from vts.ipc import protocol as p
from vts.ipc.call_batch import CallBatch, batch_of
from vts.ipc.client import connect
from vts.ipc.connection import Connection
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import DriverLost, RequestRejected
from vts.ipc.host import DriverHost
from vts.ipc.process import HostProcess
from vts.ipc.protocol import Method, Reader, Writer
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner

SAMPLE = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
SECOND_REVISION = f"exec:{sys.executable} -m tests.fakes.protocol_v2"


@pytest.fixture(scope="module")
def sample() -> str:
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    result = subprocess.run(["make", "-C", SAMPLE], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return os.path.join(SAMPLE, "sample_driver")


@contextlib.contextmanager
def _raw(kind: str, sample_path: str = "") -> Iterator[socket.socket]:
    """The harness's end of a socket whose other end a driver serves (``python``: the reference's host)."""
    harness, driver = p.socket_pair()
    try:
        if kind == "python":
            from nnvts.drivers.reference.device import create_device

            thread = threading.Thread(target=DriverHost(create_device(), driver).serve, daemon=True)
            thread.start()
            yield harness
            harness.close()
            thread.join(5)
        else:
            process = subprocess.Popen([sample_path], pass_fds=(driver.fileno(),), stdin=subprocess.DEVNULL,
                                       env={**os.environ, "NNVTS_SOCKET_FD": str(driver.fileno())})
            driver.close()
            yield harness
            harness.close()
            assert process.wait(5) == 0
    finally:
        with contextlib.suppress(OSError):
            driver.close()


def _exchange(sock, seq: int, method: Method, args: bytes | bytearray = b"") -> p.Message:
    p.send_message(sock, seq, method, 0, p.EMPTY_PREAMBLE + bytes(args))
    message = p.Receiver(sock).receive()
    assert message is not None and message.seq == seq and message.code == method | p.REPLY
    return message


def _open(sock, revision: int, features: tuple[str, ...]) -> p.OpenReply:
    w = Writer()
    w.u32(1)
    w.string("nnvts")
    hello = _exchange(sock, 1, Method.HELLO, w.buf)
    r = Reader(hello.body)
    r.u32(), r.text()
    flags = [r.text() for _ in range(r.count(4))]
    assert p.advertised_revision(flags) == 3
    w = Writer()
    p.write_open_request(w, revision, (), features)
    reply = _exchange(sock, 2, Method.OPEN, w.buf)
    assert reply.status == 0, reply
    r = Reader(reply.body)
    opened = p.read_open_reply(r)
    r.end()
    return opened


@pytest.mark.parametrize("kind", ["python", "c"])
def test_a_revision_3_driver_grants_the_features_it_serves_and_answers_a_batch_in_order(kind, request):
    sample_path = request.getfixturevalue("sample") if kind == "c" else ""
    with _raw(kind, sample_path) as sock:
        opened = _open(sock, 3, ("batch", "not-a-feature"))
        assert opened.revision == 3 and opened.features == ("batch",)
        w = Writer()
        w.u32(5)
        p.write_batch_item(w, Method.GET_TYPE, b"")
        p.write_batch_item(w, Method.HELLO, b"")  # not batchable: that call alone is refused
        p.write_batch_item(w, Method.GET_STATUS, b"\x00")  # a trailing byte: that call alone is undecodable
        p.write_batch_item(w, Method.GET_VERSION_STRING, b"")
        p.write_batch_item(w, Method.EXECUTE, b"\x07\x00\x00\x00")  # a truncated request: refused alone
        reply = _exchange(sock, 3, Method.BATCH, w.buf)
        assert reply.status == 0 and reply.fds == []
        answers = p.read_batch_reply(Reader(reply.body), 5)
        statuses = [status for status, _ in answers]
        assert statuses == [0, p.WireStatus.PROTOCOL_ERROR, p.WireStatus.PROTOCOL_ERROR, 0,
                            p.WireStatus.PROTOCOL_ERROR]
        assert Reader(answers[0][1]).i64() in (2, 4)  # CPU (the reference), ACCELERATOR (the sample)
        assert Reader(answers[3][1]).text()
        # A malformed batch (a call's length beyond the body) is refused whole, nothing served.
        w = Writer()
        w.u32(1)
        w.u32(Method.GET_TYPE)
        w.u32(100)
        reply = _exchange(sock, 4, Method.BATCH, w.buf)
        assert reply.status == p.WireStatus.PROTOCOL_ERROR


@pytest.mark.parametrize("kind", ["python", "c"])
def test_a_revision_3_driver_still_opens_at_revision_2(kind, request):
    sample_path = request.getfixturevalue("sample") if kind == "c" else ""
    with _raw(kind, sample_path) as sock:
        opened = _open(sock, 2, ())
        assert opened.revision == 2 and opened.features == ()


@pytest.mark.parametrize("kind", ["python", "c"])
def test_aidl_4_is_granted_when_asked_and_reusable_executions_need_it(kind, request):
    sample_path = request.getfixturevalue("sample") if kind == "c" else ""
    with _raw(kind, sample_path) as sock:
        opened = _open(sock, 3, ("batch", "aidl:1", "aidl:2", "aidl:3", "aidl:4"))
        assert opened.features == ("batch", "aidl:4")
    with _raw(kind, sample_path) as sock:
        assert _open(sock, 3, ("batch",)).features == ("batch",)  # not asked: HAL 1.3, no REUSABLE_* kinds
        w = Writer()
        w.u32(1)
        w.optional_i64(None)
        refused = _exchange(sock, 3, Method.REUSABLE_EXECUTE, w.buf)
        assert refused.status == p.WireStatus.PROTOCOL_ERROR
        assert "aidl:4" in Reader(refused.body).text()


def _hosted(spec: str) -> HostProcess:
    return HostProcess(DriverRef(spec), extra_env={"PYTHONPATH": ROOT})


def _validation_sweep(host: HostProcess) -> dict[str, Verdict]:
    family = ValidationFamily()
    runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0, send_ahead=True), host=host)
    (model,) = parse_spec(hand_add_float())
    return {case.name: runner.run_case(family, case).verdict for case in family.model_cases(model, "<inline>")}


def test_a_driver_of_batchs_first_text_is_never_sent_prepare_model_with_config_in_a_batch():
    """It grants batch and aidl:4 but not batch_config, and answers PREPARE_MODEL_WITH_CONFIG inside a BATCH with
    PROTOCOL_ERROR (§5.4): the sweep sends it that call outside the batch, and every case passes."""
    host = _hosted(f"exec:{sys.executable} -m tests.fakes.protocol_aidl first_batch")
    try:
        device = host.start()
        assert device.connection.features == {p.BATCH_FEATURE, "aidl:4", p.ASYNC_FEATURE}
        verdicts = _validation_sweep(host)
    finally:
        host.stop()
    assert verdicts and set(verdicts.values()) <= {Verdict.PASSED, Verdict.SKIPPED}
    assert Verdict.PASSED in set(verdicts.values())


@pytest.mark.parametrize("spec", ["reference", SECOND_REVISION, "sample"])
def test_drivers_of_each_revision_pass_the_validation_sweep(spec, request):
    if spec == "sample":
        spec = f"exec:{request.getfixturevalue('sample')}"
    host = _hosted(spec)
    try:
        device = host.start()
        second = spec == SECOND_REVISION
        assert device.connection.revision == (2 if second else 3)
        granted = {"reference": {p.BATCH_FEATURE, "batch_config", "aidl:4", p.ASYNC_FEATURE},
                   SECOND_REVISION: frozenset()}
        # The C sample: no execute_async (it is an AIDL v4 driver).
        assert device.connection.features == granted.get(spec, {p.BATCH_FEATURE, "batch_config", "aidl:4"})
        assert (device.batch_ahead() is None) == second
        verdicts = _validation_sweep(host)
    finally:
        host.stop()
    assert set(verdicts.values()) <= {Verdict.PASSED, Verdict.SKIPPED}, verdicts
    assert sum(v is Verdict.PASSED for v in verdicts.values()) > 100


def test_a_batch_answer_names_each_calls_own_status():
    host = _hosted("reference")
    try:
        device = host.start()
        batch = device.batch_ahead()
        assert isinstance(batch, CallBatch)
        typed = batch.add(Method.GET_TYPE, lambda w: None, lambda r, taken: r.i64())
        status = batch.add(Method.GET_STATUS, lambda w: w.u8(0), lambda r, taken: r.i64())  # undecodable
        version = batch.add(Method.GET_VERSION_STRING, lambda w: None, lambda r, taken: r.text())
        assert batch.add(Method.HELLO, lambda w: None, None) is None  # never batched
        assert batch.send()
        assert typed.result() == 2
        with pytest.raises(RequestRejected, match="could not decode the get_status request"):
            status.result()
        assert version.result() == device.get_version_string()
    finally:
        host.stop()


def test_a_batch_reply_with_the_wrong_number_of_answers_is_a_protocol_violation():
    harness, driver = p.socket_pair()
    connection = Connection(harness)
    connection.deadline = None
    connection.call_timeout = 5.0
    connection.features = frozenset({p.BATCH_FEATURE})
    batch = batch_of(connection)
    assert batch is not None
    first = batch.add(Method.GET_TYPE, lambda w: None, lambda r, taken: r.i64())
    assert first is not None and batch.send()
    message = p.Receiver(driver).receive()
    assert message is not None and message.code == Method.BATCH
    w = Writer()
    w.u32(2)
    p.write_batch_answer(w, 0, b"\x02" + bytes(7))
    p.write_batch_answer(w, 0, b"\x02" + bytes(7))
    p.send_message(driver, message.seq, Method.BATCH | p.REPLY, 0, w.buf)
    with pytest.raises(DriverLost, match="protocol violation: malformed answer to a batch: 2 answers to a batch of 1"):
        first.result()
    driver.close()
    connection.close()


def _scripted_driver(sock: socket.socket, granted: tuple[str, ...]) -> None:
    """Answer HELLO (``protocol:3``) and OPEN (granting ``granted``), then wait for the hang-up."""
    receiver = p.Receiver(sock)
    hello = receiver.receive()
    w = Writer()
    w.u32(1)
    w.string("nnvts-scripted")
    w.u32(1)
    w.string(p.revision_flag(3))
    p.send_message(sock, hello.seq, Method.HELLO | p.REPLY, 0, w.buf)
    opened = receiver.receive()
    r = Reader(opened.body)
    p.read_preamble(r)
    revision, _, asked = p.read_open_request(r)
    assert (revision, asked) == (3, (p.BATCH_FEATURE, "aidl:1", "aidl:2", "aidl:3", "aidl:4", p.ASYNC_FEATURE,
                                     "batch_config"))
    w = Writer()
    p.write_open_reply(w, p.OpenReply(3, "nnvts-scripted", (), granted))
    p.send_message(sock, opened.seq, Method.OPEN | p.REPLY, 0, w.buf)
    receiver.receive()


@pytest.mark.parametrize("granted", [(), ("batch",), ("batch", "aidl:2"), ("aidl:4",), ("batch", "aidl:5"),
                                     ("aidl:1", "aidl:4"), ("aidl:9000",)])
def test_the_harness_uses_only_the_features_it_asked_for_and_was_granted(granted):
    harness, driver = p.socket_pair()
    thread = threading.Thread(target=_scripted_driver, args=(driver, granted), daemon=True)
    thread.start()
    try:
        if "aidl:5" in granted or "aidl:9000" in granted:
            with pytest.raises(p.ProtocolError, match="granted features the harness did not ask for: aidl:"):
                connect(harness, timeout=5)
            return
        if len([f for f in granted if f.startswith("aidl:")]) > 1:
            with pytest.raises(p.ProtocolError, match=r"2 AIDL versions \(aidl:1, aidl:4\): a driver speaks one"):
                connect(harness, timeout=5)
            return
        device = connect(harness, timeout=5)
        assert device.connection.revision == 3
        assert device.connection.features == frozenset(granted)
        assert (device.batch_ahead() is None) == ("batch" not in granted)
        aidl = {("batch", "aidl:2"): HalVersion.FL6, ("aidl:4",): HalVersion.FL8}.get(granted, HalVersion.V1_3)
        assert device.hal_version is aidl
    finally:
        harness.close()
        thread.join(5)
        driver.close()


def test_feature_names_are_bounded_and_plain():
    assert p.check_feature("aidl:4") == "aidl:4"
    for bad in ("", "Batch", "x" * 65, "batch!", "é"):
        with pytest.raises(p.ProtocolError, match="malformed feature name"):
            p.check_feature(bad)


def test_nnvts_info_names_the_revision_and_the_features(nnvts, sample):
    for spec, expected in ((f"exec:{sample}", {"revision": 3, "features": ["aidl:4", "batch", "batch_config"]}),
                           (SECOND_REVISION, {"revision": 2, "features": []})):
        shown = nnvts("info", "--driver", spec, "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["protocol"] == expected


@pytest.mark.parametrize("spec", ["reference", "sample"])
def test_a_harness_asking_for_no_aidl_feature_gets_a_hal_1_3_driver(spec, request, monkeypatch):
    """An older harness (``batch`` only): the same drivers are judged, and validate, as HAL 1.3 (numberOfConsumers)."""
    from vts.ipc import opening

    if spec == "sample":
        spec = f"exec:{request.getfixturevalue('sample')}"
    monkeypatch.setattr(opening, "WANTED_FEATURES", (p.BATCH_FEATURE,))
    host = _hosted(spec)
    try:
        device = host.start()
        assert device.hal_version is HalVersion.V1_3 and device.connection.features == {p.BATCH_FEATURE}
        verdicts = _validation_sweep(host)
    finally:
        host.stop()
    assert set(verdicts.values()) <= {Verdict.PASSED, Verdict.SKIPPED}, verdicts
    consumers = [name for name in verdicts if "consumers" in name]
    assert consumers and all(verdicts[name] is Verdict.PASSED for name in consumers)


@pytest.mark.parametrize("kind", ["python", "c"])
@pytest.mark.parametrize("method", [Method.PREPARE_MODEL_WITH_CONFIG, Method.EXECUTE_WITH_CONFIG,
                                    Method.EXECUTE_FENCED_WITH_CONFIG])
def test_the_with_config_kinds_need_aidl_4(kind, method, request):
    """docs/protocol.md §5.5: a connection that did not grant aidl:4 refuses the *_WITH_CONFIG kinds."""
    sample_path = request.getfixturevalue("sample") if kind == "c" else ""
    with _raw(kind, sample_path) as sock:
        assert _open(sock, 3, ("batch",)).features == ("batch",)
        w = Writer()
        w.u32(1)
        refused = _exchange(sock, 3, method, w.buf)
        assert refused.status == p.WireStatus.PROTOCOL_ERROR
        assert "aidl:4" in Reader(refused.body).text()


def _prepare_with_config_arguments(preference: int) -> bytes:
    """``PREPARE_MODEL_WITH_CONFIG``'s arguments (§5.5): the hand ADD model, ``preference``, no hints."""
    from vts.model.casemodel import close_model, to_hal_model

    (case_model,) = parse_spec(hand_add_float())
    model = to_hal_model(case_model)
    try:
        assert not model.pools  # constants inline: no pool to declare
        w = Writer()
        p.write_model(w, model, lambda pool: 0)
        w.i64(preference)
        w.i64(1)  # MEDIUM
        w.optional_i64(None)
        w.fd_list([])
        w.fd_list([])
        w.raw(bytes(32))
        p.write_hints(w, (), ())
        return bytes(w.buf)
    finally:
        close_model(model)


@pytest.mark.parametrize("kind", ["python", "c"])
def test_prepare_model_with_config_may_be_batched_where_aidl_4_is_granted(kind, request):
    """§5.4: the validation sweep sends a mutation's PREPARE_MODEL_WITH_CONFIG in the batch of its other calls;
    served there as alone (an invalid preference refused), and refused alone where aidl:4 was not granted."""
    sample_path = request.getfixturevalue("sample") if kind == "c" else ""
    for features, expected in ((("batch", "aidl:4"), ErrorStatus.INVALID_ARGUMENT),
                               (("batch",), p.WireStatus.PROTOCOL_ERROR)):
        with _raw(kind, sample_path) as sock:
            assert _open(sock, 3, features).features == features
            w = Writer()
            w.u32(2)
            p.write_batch_item(w, Method.PREPARE_MODEL_WITH_CONFIG, _prepare_with_config_arguments(3))
            p.write_batch_item(w, Method.GET_TYPE, b"")
            reply = _exchange(sock, 3, Method.BATCH, w.buf)
            assert reply.status == 0 and reply.fds == []
            (status, body), (after, _) = p.read_batch_reply(Reader(reply.body), 2)
            assert (status, after) == (expected, 0), Reader(body).text()


@pytest.mark.parametrize("hal", ["aidl", "1.3"])
def test_the_sweeps_two_preparations_go_in_one_batch_the_second_copying_the_firsts_arguments(hal):
    """``prepare_model_both_ways_ahead``: PREPARE_MODEL_WITH_CONFIG's arguments are PREPARE_MODEL's and an empty
    hints trailer, copied, not encoded again; both answered as if alone.  Without aidl:4 nothing is added."""
    from nnvts.drivers.reference.device import create_device
    from vts.hal.errors import DriverError
    from vts.model.casemodel import close_model, to_hal_model

    harness, driver = p.socket_pair()
    thread = threading.Thread(target=DriverHost(create_device(**({"hal": "1.3"} if hal == "1.3" else {})),
                                                driver).serve, daemon=True)
    thread.start()
    (case_model,) = parse_spec(hand_add_float())
    model = to_hal_model(case_model)
    try:
        device = connect(harness, timeout=5)
        batch = device.batch_ahead()
        pair = device.prepare_model_both_ways_ahead(model, 3, 1, batch)  # preference 3: no such preference
        if hal == "1.3":
            assert pair is None and len(batch) == 0
            return
        assert pair is not None and batch.send()
        (first, prepared), (second, with_config) = p.read_batch_request(
            Reader(bytes(batch.body.buf[len(p.EMPTY_PREAMBLE):]), []))
        assert (first, second) == (Method.PREPARE_MODEL, Method.PREPARE_MODEL_WITH_CONFIG)
        trailer = Writer()
        p.write_hints(trailer, (), ())
        assert with_config == prepared + bytes(trailer.buf)
        for call in pair:
            with pytest.raises(DriverError) as refused:
                call.result()
            assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    finally:
        close_model(model)
        harness.close()
        thread.join(5)
        driver.close()


def test_a_preparation_after_its_query_in_a_batch_copies_the_querys_arguments():
    """PREPARE_MODEL's arguments begin with the model, the query's whole arguments: after the query of the same
    model in a batch they are copied and extended, the model encoded once (byte for byte what the ordinary
    encoding gives); after another model's query, or alone, the model is encoded as usual."""
    from nnvts.drivers.reference.device import create_device
    from vts.model.casemodel import close_model, to_hal_model

    harness, driver = p.socket_pair()
    thread = threading.Thread(target=DriverHost(create_device(), driver).serve, daemon=True)
    thread.start()
    (case_model,) = parse_spec(hand_add_float())
    model, other = to_hal_model(case_model), to_hal_model(case_model)
    try:
        device = connect(harness, timeout=5)
        written = []
        write_model = device.connection.write_model
        device.connection.write_model = lambda w, m: written.append(m) or write_model(w, m)  # type: ignore[method-assign]
        batch = device.batch_ahead()
        query = device.get_supported_operations_ahead(model, batch)
        preparation = device.prepare_model_ahead(model, 1, 2, batch)
        assert written == [model]
        device.get_supported_operations_ahead(model, batch)
        device.prepare_model_ahead(other, 1, 2, batch)  # another model (equal, not the same): encoded
        assert written == [model, model, other]
        assert query is not None and preparation is not None and batch.send()
        items = p.read_batch_request(Reader(bytes(batch.body.buf[len(p.EMPTY_PREAMBLE):]), []))
        assert [code for code, _ in items] == [Method.GET_SUPPORTED_OPERATIONS, Method.PREPARE_MODEL] * 2
        (_, query_args), (_, copied), _, (_, encoded) = items
        assert copied.startswith(query_args) and copied == encoded
        assert query.result() == [True]
        assert preparation.result() is not None
    finally:
        close_model(model)
        close_model(other)
        harness.close()
        thread.join(5)
        driver.close()
