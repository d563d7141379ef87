"""Several clients of one driver: the reference passes in and out of process; a driver sharing
compilations between clients, one serialising every execution behind a fence wait, and a service
sharing its tables between connections are each caught."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from nnvts.drivers.reference import create_device
from tests.fakes import broken_concurrency
from tests.families.test_concurrency import isolated, not_passed
from tests.ipc.conftest import ROOT
from vts.families import multi_client
from vts.families.base import RunOptions
from vts.families.multi_client import MultiClientFamily
from vts.ipc import host as host_module
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.clients import close_client, open_client, set_concurrency
from vts.results import Verdict
from vts.run.runner import Runner


def run_cases(runner, tests: tuple[str, ...] = multi_client.TESTS) -> dict:
    family = MultiClientFamily()
    return {case.name: runner.run_case(family, case) for case in family.device_cases()
            if case.config["test"] in tests}


def test_reference_passes_in_process():
    results = run_cases(Runner(create_device(), RunOptions(case_timeout=60)))
    assert len(results) == len(multi_client.TESTS) and not not_passed(results)


def test_reference_passes_out_of_process():
    runner = isolated("reference")
    try:
        results = run_cases(runner)
        assert runner.host is not None and runner.host.starts == 1  # no case lost the host
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert len(results) == len(multi_client.TESTS) and not not_passed(results)


def test_clients_of_one_instance_have_tables_of_their_own():
    device = create_device()
    a, b = open_client(device), open_client(device)
    try:
        assert a.get_version_string() == b.get_version_string() == device.get_version_string()
        assert a.connection is not b.connection
    finally:
        close_client(a)
        close_client(b)


def test_shared_compilations_are_caught_in_and_out_of_process():
    results = run_cases(Runner(broken_concurrency.shared_compilations(), RunOptions(case_timeout=60)), ("Tokens",))
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)
    assert "client A's token" in next(iter(results.values())).reason
    runner = isolated("tests.fakes.broken_concurrency:shared_compilations")
    try:
        results = run_cases(runner, ("Tokens",))
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)


def test_a_driver_serialised_behind_a_fence_wait_is_caught(monkeypatch):
    # The broken driver blocks client B until client A's fence is signalled; any budget ends the wait.
    monkeypatch.setattr(multi_client, "HUNG_BUDGET", 1.0)
    results = run_cases(Runner(broken_concurrency.serialized(), RunOptions(case_timeout=60)), ("HungClient",))
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)
    assert "did not return" in next(iter(results.values())).reason


def test_a_service_sharing_its_tables_between_connections_is_caught(monkeypatch):
    """A host whose pool and handle tables are process-wide lets one client reach another's objects."""
    shared_pools: dict = {}
    shared_objects: dict = {}
    original = host_module.DriverHost.__init__

    def leaky_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.pools, self.objects = shared_pools, shared_objects

    monkeypatch.setattr(host_module.DriverHost, "__init__", leaky_init)
    results = run_cases(Runner(create_device(), RunOptions(case_timeout=60)), ("Handles",))
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)
    assert "client A" in next(iter(results.values())).reason


def test_set_concurrency_answers_the_previous_setting():
    runner = isolated("reference")
    try:
        device = runner.host.device  # type: ignore[union-attr]
        assert set_concurrency(device, 5) == 1
        assert set_concurrency(device, 1) == 5
        assert set_concurrency(create_device(), 3) is None  # in process: nothing to ask
    finally:
        runner.host.stop()  # type: ignore[union-attr]


def test_serve_on_a_path_serves_several_clients_at_once(tmp_path):
    path = str(tmp_path / "driver.sock")
    server = subprocess.Popen([sys.executable, "-m", "vts.ipc.host", "--driver", "reference", "--socket", path],
                              cwd=ROOT, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": ROOT})
    try:
        for _ in range(200):
            if os.path.exists(path):
                break
            time.sleep(0.05)
        clients = []
        for _ in range(2):
            sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
            sock.connect(path)
            clients.append(connect(sock))
        # Both connections are open at once and both are answered.
        assert [c.get_version_string() for c in clients] == [clients[0].get_version_string()] * 2
        for client in clients:
            client.connection.close()
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize("driver", ["reference"])
def test_open_connection_out_of_process(driver):
    runner = isolated(driver)
    try:
        device = runner.host.device  # type: ignore[union-attr]
        client = open_client(device)
        try:
            assert client.get_version_string() == device.get_version_string()
        finally:
            close_client(client)
        assert device.get_version_string()  # the run's own connection is unaffected
    finally:
        runner.host.stop()  # type: ignore[union-attr]
