"""Driver options out of process: the Python host, the opening exchange, the C sample, a first-protocol driver."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading

import pytest

from tests.ipc.conftest import ROOT
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.clients import close_client, open_client
from vts.ipc.driver_options import DriverOption, DriverOptionError
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import DriverLost
from vts.ipc.host import DriverHost
from vts.ipc.host_calls import OpenedWith
from vts.ipc.process import HostProcess, HostStartError

OPTIONED = "tests.fakes.optioned:create_device"
SAMPLE = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
FIRST_PROTOCOL = f"exec:{sys.executable} -m tests.fakes.protocol_v1"


def _host(spec: str, options=()) -> HostProcess:
    # exec: drivers get the harness's environment; PYTHONPATH lets a Python fake import the tests.
    return HostProcess(DriverRef(spec, options), extra_env={"PYTHONPATH": ROOT})


@pytest.fixture(scope="module")
def sample() -> str:
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    result = subprocess.run(["make", "-C", SAMPLE], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return f"exec:{os.path.join(SAMPLE, 'sample_driver')}"


def test_the_first_hello_is_byte_for_byte_the_first_protocols():
    harness, driver = p.socket_pair()

    def say_hello() -> None:
        with contextlib.suppress(DriverLost):  # the test hangs up after reading HELLO
            connect(harness, timeout=5)

    opened = threading.Thread(target=say_hello, daemon=True)
    opened.start()
    message = p.Receiver(driver).receive()
    assert message is not None
    assert (message.code, message.status, message.fds) == (p.Method.HELLO, 0, [])
    assert bytes(message.body) == p.EMPTY_PREAMBLE + (1).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"nnvts"
    driver.close()
    opened.join(5)


def test_the_revision_is_the_highest_a_flag_names():
    assert p.advertised_revision(()) == 1
    assert p.advertised_revision(("priority_scheduling", "protocol:2")) == 2
    assert p.advertised_revision(("protocol:", "protocol:x", "protocol:-3", "protocol:9999999")) == 1
    assert p.advertised_revision(("protocol:3", "protocol:2")) == 3  # the harness then agrees on its own highest


def test_the_python_host_makes_its_driver_with_the_options():
    host = _host(OPTIONED, (("name", "blue"), ("revision", "7"), ("loud", "yes")))
    try:
        device = host.start()
        assert device.name == "nnvts-blue"
        assert device.get_version_string() == "optioned 7 x1.0!"
        assert device.connection.revision == p.PROTOCOL_REVISION
        assert device.accepted_options is not None
        assert [(o.name, o.default) for o in device.accepted_options] == [
            ("loud", "false"), ("name", "optioned"), ("revision", "1"), ("scale", "1.0")]
        client = open_client(device)  # a further client of the same driver, opened with the same options
        assert client.name == "nnvts-blue"
        close_client(client)
    finally:
        host.stop()


def test_the_python_host_without_options_and_a_driver_that_takes_none():
    host = _host("template")
    try:
        device = host.start()
        assert device.name == "nnvts-template"
        assert device.accepted_options == ()
    finally:
        host.stop()


def test_a_python_driver_refusing_a_value_does_not_start():
    host = _host(OPTIONED, (("revision", "seven"),))
    with pytest.raises(HostStartError, match="expected an integer"):
        host.start()
    host.stop()


def test_the_python_host_refuses_options_other_than_its_own_in_open():
    harness, served = p.socket_pair()
    device = DriverRef(OPTIONED, (("name", "blue"),)).load()
    opened = OpenedWith((("name", "blue"),), (DriverOption("name", "optioned"),))
    thread = threading.Thread(target=DriverHost(device, served, opened_with=opened).serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(DriverOptionError, match="refused its options: this driver host made its driver with "
                                                    "options name=blue, not name=red"):
            connect(harness, timeout=5, options=(("name", "red"),), driver="optioned")
    finally:
        harness.close()
        thread.join(5)


def test_nnvts_serve_style_host_takes_options_on_its_command_line():
    harness, theirs = p.socket_pair()
    command = [sys.executable, "-m", "vts.ipc.host", "--driver", OPTIONED, "--option", "name=green",
               "--option", "scale=0.5", "--fd", str(theirs.fileno())]
    process = subprocess.Popen(command, pass_fds=[theirs.fileno()], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    theirs.close()
    try:
        device = connect(harness, timeout=30, options=(("name", "green"), ("scale", "0.5")))
        assert (device.name, device.get_version_string()) == ("nnvts-green", "optioned 1 x0.5")
        device.connection.close()
    finally:
        assert process.wait(30) == 0


def test_the_c_sample_without_options_keeps_its_name(sample):
    host = HostProcess(DriverRef(sample))
    try:
        device = host.start()
        assert device.name == "nnvts-sample_c"
        assert device.connection.revision == p.PROTOCOL_REVISION == 3
        assert device.accepted_options == (
            DriverOption("name", "sample_c", "the device name after nnvts- (1 to 64 letters, digits, _ . -)"),)
    finally:
        host.stop()


def test_the_c_sample_takes_its_name_option(sample):
    host = HostProcess(DriverRef(sample, (("name", "renamed"),)))
    try:
        device = host.start()
        assert device.name == "nnvts-renamed"
        assert device.get_version_string() == "nnvts-sample-c/0.1"  # and still serves calls
    finally:
        host.stop()


@pytest.mark.parametrize(("option", "says"), [
    (("colour", "red"), r"unknown option 'colour' \(accepted: name=sample_c\)"),
    (("name", "two words"), "option name: expected"),
])
def test_the_c_sample_refuses_a_bad_option_cleanly(sample, option, says):
    host = HostProcess(DriverRef(sample, (option,)))
    with pytest.raises(DriverOptionError, match=says):
        host.start()
    assert not host.alive()
    host.stop()


def test_a_first_protocol_driver_still_works_without_options():
    host = _host(FIRST_PROTOCOL)
    try:
        device = host.start()
        assert device.name == "nnvts-reference"
        assert device.connection.revision == 1
        assert device.accepted_options == ()
        assert device.get_version_string()
    finally:
        host.stop()


def test_options_for_a_first_protocol_driver_are_a_clean_error():
    host = _host(FIRST_PROTOCOL, (("name", "blue"),))
    with pytest.raises(DriverOptionError, match=r"does not accept option 'name' \(it accepts no options: it speaks "
                                                "protocol revision 1"):
        host.start()
    assert not host.alive()
    host.stop()


def test_network_permission_is_a_parameter(monkeypatch):
    monkeypatch.setenv("NNVTS_ALLOW_NETWORK", "1")
    assert HostProcess(DriverRef("reference")).network is True  # None: the environment, as before
    assert HostProcess(DriverRef("reference"), allow_network=False).network is False
    monkeypatch.delenv("NNVTS_ALLOW_NETWORK")
    assert HostProcess(DriverRef("reference"), allow_network=True).network is True
    assert HostProcess(DriverRef("reference")).network is False


def test_the_python_host_command_carries_the_options():
    argv = HostProcess(DriverRef(OPTIONED, (("name", "a=b"),)))._command()
    assert argv[argv.index("--option") + 1] == "name=a=b"
