"""``nnvts serve`` under hostile clients: one process cannot lock the service, starve another client's
asynchronous calls, or keep the service busy with its work once it has hung up.

The hostile client is this test process; the well-behaved one is a process of its own (the service tells
clients apart by their peer process, ``SO_PEERCRED``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.ipc.conftest import ROOT, nnvts_env, serving
from vts import bounds
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.errors import RequestRejected
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.spec.loader import load_file

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED and /proc")

LOOP_SPEC = os.path.join(ROOT, "generated_tests", "while_infinite_loop.json")

#: The well-behaved client: connects, asks the capabilities, prepares the endless-loop model and launches
#: LAUNCHES asynchronous executions of it; prints how many launches were accepted.
GOOD_CLIENT = """
import socket, sys
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.errors import RequestRejected
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.spec.loader import load_file
path, launches = sys.argv[1], int(sys.argv[2])
sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
sock.connect(path)
device = connect(sock)
assert device.get_capabilities() is not None
model = parse_spec(load_file(sys.argv[3]).document)[0]
prepared = device.prepare_model(to_hal_model(model))
request = build_request(model, model.examples[0]).request
accepted = 0
for _ in range(launches):
    try:
        prepared.execute_async(request, loop_timeout=2_000_000_000)
        accepted += 1
    except RequestRejected as error:
        print("refused:", error, file=sys.stderr)
print(accepted)
"""


def _good_client(path: str, launches: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", GOOD_CLIENT, path, str(launches), LOOP_SPEC], cwd=ROOT,
                          env=nnvts_env(), capture_output=True, text=True, timeout=60)


def _raw(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
    sock.connect(path)
    return sock


def _loop_model():
    model = parse_spec(load_file(LOOP_SPEC).document)[0]
    return to_hal_model(model), build_request(model, model.examples[0]).request


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.hostile
def test_connections_that_never_say_hello_do_not_lock_out_a_good_client(tmp_path):
    with serving(tmp_path, "reference", "--handshake-timeout", "2") as (_server, path):
        silent = []
        try:
            for _ in range(bounds.SERVE_MAX_CONNECTIONS):
                with contextlib.suppress(OSError):
                    silent.append(_raw(path))
            good = _good_client(path)
            assert good.returncode == 0, good.stderr[-2000:]
            # And the silent ones are closed by the service once their handshake time is up.
            deadline = time.monotonic() + 30
            for sock in silent:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                with contextlib.suppress(ConnectionResetError):
                    assert sock.recv(1 << 16) == b"", "a silent connection was answered"
        finally:
            for sock in silent:
                sock.close()


#: A silent process: opens N connections to the service, never says HELLO, prints "ready" and waits.
SILENT_HOLDER = """
import socket, sys, time
from vts.ipc import protocol as p
held = []
for _ in range(int(sys.argv[2])):
    sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
    sock.connect(sys.argv[1])
    held.append(sock)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.hostile
def test_silent_connections_from_many_processes_do_not_lock_out_a_good_client(tmp_path):
    with serving(tmp_path) as (_server, path):  # the default handshake time (10 s): longer than this takes
        per = bounds.SERVE_MAX_CONNECTIONS_PER_CLIENT
        holders = [subprocess.Popen([sys.executable, "-c", SILENT_HOLDER, path, str(per)], cwd=ROOT, env=nnvts_env(),
                                    stdout=subprocess.PIPE, text=True)
                   for _ in range(bounds.SERVE_MAX_CONNECTIONS // per)]
        try:
            for holder in holders:
                assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            started = time.monotonic()
            good = _good_client(path)
            assert good.returncode == 0, good.stderr[-2000:]
            assert time.monotonic() - started < bounds.SERVE_HANDSHAKE_TIMEOUT  # not by waiting for them to go
        finally:
            for holder in holders:
                holder.kill()
                holder.wait()


@pytest.mark.hostile
def test_one_client_with_four_connections_cannot_starve_anothers_asynchronous_calls(tmp_path):
    model, request = _loop_model()
    with serving(tmp_path) as (_server, path):
        socks = [_raw(path) for _ in range(4)]
        try:
            taken = 0
            for sock in socks:
                prepared = connect(sock).prepare_model(model)
                for _ in range(bounds.SERVE_MAX_EXECUTIONS_PER_CONNECTION):
                    try:
                        prepared.execute_async(request, loop_timeout=2_000_000_000)
                        taken += 1
                    except RequestRejected:
                        break
            assert taken <= bounds.SERVE_MAX_EXECUTIONS_PER_CLIENT
            good = _good_client(path, 8)
            assert good.returncode == 0, good.stderr[-2000:]
            assert good.stdout.split()[-1] == "8", good.stderr[-2000:]
        finally:
            for sock in socks:
                sock.close()


@pytest.mark.hostile
def test_a_departed_clients_loops_stop_within_a_second(tmp_path):
    model, request = _loop_model()
    with serving(tmp_path) as (server, path):
        sock = _raw(path)
        prepared = connect(sock).prepare_model(model)
        for _ in range(30):  # 15 s of loops for the driver's one execution worker, 0.5 s each
            prepared.execute_async(request, loop_timeout=500_000_000)
        sock.close()
        time.sleep(1.5)  # the one running may take its 0.5 s; the queued ones must be let go
        before = _cpu_seconds(server.pid)
        time.sleep(1.0)
        spent = _cpu_seconds(server.pid) - before
        assert spent < 0.5, f"the service spent {spent:.2f} s of CPU in 1 s after the client left"


def test_the_service_bound_holds_over_many_peers_and_each_keeps_its_guaranteed_share():
    from vts.ipc.errors import ProtocolError
    from vts.ipc.host_limits import ServiceLimits

    service = ServiceLimits(pool_budget=16)
    opened = [service.open(peer=(0, 1000 + i)) for i in range(bounds.SERVE_MAX_CONNECTIONS)]
    for connection in opened[1:]:
        service.greeted(connection)
    hung_up = []
    opened[0].on_evict = lambda: hung_up.append(True)
    newcomer = service.open(peer=(0, 98))  # the one silent connection makes room
    assert hung_up and service.connections == bounds.SERVE_MAX_CONNECTIONS
    service.greeted(newcomer)
    with pytest.raises(ProtocolError, match="connections open"):  # every one has spoken: the bound holds
        service.open(peer=(0, 99))
    opened[0] = newcomer
    # One greedy client takes all it may; every other still gets its guaranteed share, and no more is left.
    greedy, others = opened[0], opened[1:]
    taken = 0
    with contextlib.suppress(ProtocolError):
        while True:
            greedy.begin_execution()
            taken += 1
    assert taken <= bounds.SERVE_MAX_EXECUTIONS_PER_CLIENT
    for connection in others:
        for _ in range(bounds.SERVE_EXECUTIONS_GUARANTEED):
            connection.begin_execution()
    assert service.executions <= bounds.SERVE_MAX_EXECUTIONS
    for connection in opened:
        connection.close()
    assert service.connections == 0 and not service.clients


#: A LOW-priority client: launches one endless loop (0.3 s loop timeout) and prints how long it waited for it.
LOW_CLIENT = """
import socket, sys, time
from vts.hal.enums import Priority
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.spec.loader import load_file
sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
sock.connect(sys.argv[1])
model = parse_spec(load_file(sys.argv[2]).document)[0]
prepared = connect(sock).prepare_model(to_hal_model(model), priority=Priority.LOW)
request = build_request(model, model.examples[0]).request
print("ready", flush=True)
sys.stdin.readline()  # the HIGH client has queued its loops
started = time.monotonic()
future = prepared.execute_async(request, loop_timeout=300_000_000)
try:
    future.result(60)
except Exception:
    pass  # the loop timeout's MISSED_DEADLINE: the answer is not the point, when it came is
print(f"{time.monotonic() - started:.3f}")
"""


@pytest.mark.hostile
def test_priorities_are_compared_only_within_one_client(tmp_path):
    """One client's HIGH executions queued first must not make another client's LOW one wait them all out
    (NNAPI compares priorities within one application): the driver takes the clients' queues in turn."""
    from vts.hal.enums import Priority

    model, request = _loop_model()
    queued = 12  # 12 loops of 0.3 s: 3.6 s of the driver's one execution worker
    with serving(tmp_path) as (_server, path):
        sock = _raw(path)
        low = subprocess.Popen([sys.executable, "-c", LOW_CLIENT, path, LOOP_SPEC], cwd=ROOT, env=nnvts_env(),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            prepared = connect(sock).prepare_model(model, priority=Priority.HIGH)
            assert low.stdout is not None and low.stdout.readline().strip() == "ready"
            futures = [prepared.execute_async(request, loop_timeout=300_000_000) for _ in range(queued)]
            out, err = low.communicate("go\n", timeout=120)
            assert low.returncode == 0, err[-2000:]
            waited = float(out.split()[-1])
            still_queued = sum(not f.done() for f in futures)
            # Served in turn: after the HIGH loop running and at most one more, not after all twelve.
            assert still_queued > queued // 2, f"the LOW execution waited {waited:.2f} s, {still_queued} still queued"
        finally:
            if low.poll() is None:
                low.kill()
                low.wait()
            sock.close()
