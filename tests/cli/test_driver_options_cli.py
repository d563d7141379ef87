"""``--driver-option KEY=VALUE`` end to end: every way a driver is named, every way a run goes, every report.

The fake ``tests.fakes.optioned`` names its device and versions it after its
options, so a test sees that the options reached the driver (not only the
reports), in the harness, in a driver host and in each ``-j`` worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT, nnvts_env, write_spec
from tests.ipc.conftest import nnvts as nnvts

OPTIONED = "tests.fakes.optioned:create_device"


@pytest.fixture
def spec(tmp_path) -> str:
    return write_spec(tmp_path, hand_add_float())


def _run(tmp_path, nnvts, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    result = nnvts("run", "--family", "generated", "--json", str(tmp_path / "r.json"), "--junit",
                   str(tmp_path / "r.xml"), "--html", str(tmp_path / "r.html"), "--jsonl", str(tmp_path / "r.jsonl"),
                   *args)
    report = json.loads((tmp_path / "r.json").read_text()) if (tmp_path / "r.json").exists() else {}
    return result, report


def _junit_options(path) -> list[str]:
    root = ET.parse(path).getroot()
    return [p.get("value") for p in root.iter("property") if p.get("name") == "nnvts.driver.options"]


@pytest.mark.parametrize("isolation", [(), ("--in-process",), ("-j", "2")], ids=["host", "in-process", "j2"])
def test_a_factory_gets_its_options_and_every_report_records_them(tmp_path, nnvts, spec, isolation):
    result, report = _run(tmp_path, nnvts, "--driver", OPTIONED, "--driver-option", "revision=7",
                          "--driver-option", "name=alpha", *isolation, spec)
    assert result.returncode == 0, result.stderr
    driver = report["driver"]
    assert driver["name"] == "nnvts-alpha" and driver["version"].startswith("optioned 7")  # reached the driver
    assert driver["options"] == {"name": "alpha", "revision": "7"}
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["driver"]["options"] == driver["options"]
    assert _junit_options(tmp_path / "r.xml") == ["name=alpha,revision=7"]
    assert "driver options" in (tmp_path / "r.html").read_text() and "revision=7" in (tmp_path / "r.html").read_text()


def test_a_run_without_options_records_none(tmp_path, nnvts, spec):
    result, report = _run(tmp_path, nnvts, "--driver", OPTIONED, spec)
    assert result.returncode == 0, result.stderr
    assert report["driver"]["name"] == "nnvts-optioned" and not report["driver"].get("options")
    assert _junit_options(tmp_path / "r.xml") == []


@pytest.mark.parametrize("option, expected", [
    ("colour=red", "does not accept option 'colour' (accepted: "),
    ("revision=seven", "revision"),
    ("novalue", "KEY=VALUE"),
    ("=1", "the name before"),
])
def test_a_bad_option_is_a_usage_error_naming_what_the_driver_accepts(tmp_path, nnvts, spec, option, expected):
    result, report = _run(tmp_path, nnvts, "--driver", OPTIONED, "--driver-option", option, spec)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr
    assert not report and not (tmp_path / "r.jsonl").exists()  # nothing ran, nothing was written


def test_an_unknown_option_lists_every_accepted_one_with_its_default(tmp_path, nnvts, spec):
    result, _ = _run(tmp_path, nnvts, "--driver", OPTIONED, "--driver-option", "colour=red", spec)
    assert "name=optioned" in result.stderr and "revision=1" in result.stderr and "loud=false" in result.stderr


def test_the_same_option_twice_is_a_usage_error(tmp_path, nnvts, spec):
    result, _ = _run(tmp_path, nnvts, "--driver", OPTIONED, "--driver-option", "name=a", "--driver-option", "name=b",
                     spec)
    assert result.returncode == 2 and "name" in result.stderr


def test_a_driver_that_takes_no_options_refuses_one(tmp_path, nnvts, spec):
    result, _ = _run(tmp_path, nnvts, "--driver", "template", "--driver-option", "threads=2", spec)
    assert result.returncode == 2 and "accepts no options" in result.stderr


def test_an_entry_point_driver_gets_its_options(tmp_path, nnvts, spec):
    """An installed driver (an entry point of ``nnvts.drivers``), found through a distribution on the path."""
    dist = tmp_path / "site" / "optioned_vendor-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: optioned-vendor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[nnvts.drivers]\noptioned = {OPTIONED}\n")
    site = str(tmp_path / "site")
    result = subprocess.run([sys.executable, "-m", "cli", "run", "--driver", "optioned", "--driver-option",
                             "name=beta", "--family", "generated", "--json", str(tmp_path / "r.json"), spec],
                            cwd=ROOT, env={**nnvts_env(), "PYTHONPATH": f"{ROOT}:{site}"}, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["driver"]["ref"] == "optioned" and report["driver"]["name"] == "nnvts-beta"
    assert report["driver"]["options"] == {"name": "beta"}


def test_info_lists_the_options_a_driver_accepts_and_those_given(nnvts):
    result = nnvts("info", "--driver", OPTIONED, "--driver-option", "loud=1", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    accepted = {o["name"]: o["default"] for o in data["driver_options"]["accepted"]}
    assert accepted == {"name": "optioned", "revision": "1", "loud": "false", "scale": "1.0"}
    assert data["driver_options"]["given"] == {"loud": "1"} and data["version"].endswith("!")
    table = nnvts("info", "--driver", OPTIONED)
    assert "driver options" in table.stdout and "revision=1" in table.stdout


def test_info_refuses_an_option_the_driver_does_not_accept(nnvts):
    result = nnvts("info", "--driver", OPTIONED, "--driver-option", "colour=red")
    assert result.returncode == 2 and "colour" in result.stderr


def test_the_pytest_plugin_takes_the_same_options(tmp_path, spec):
    report = tmp_path / "r.json"
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nnvts-specs", spec,
                             "--nnvts-family", "generated", "--nnvts-driver", OPTIONED, "--nnvts-driver-option",
                             "name=gamma", "--nnvts-json", str(report)],
                            cwd=tmp_path, env=nnvts_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert json.loads(report.read_text())["driver"]["options"] == {"name": "gamma"}
    bad = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nnvts-specs", spec,
                          "--nnvts-driver", OPTIONED, "--nnvts-driver-option", "colour=red"],
                         cwd=tmp_path, env=nnvts_env(), capture_output=True, text=True, timeout=300)
    assert bad.returncode == 4 and "colour" in bad.stderr  # pytest's usage error


@pytest.fixture(scope="module")
def sample_c() -> str:
    """The C driver (nnvts/drivers/sample_c), which speaks the protocol's revision 2 and accepts ``name``."""
    import os
    import shutil

    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    folder = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
    built = subprocess.run(["make", "-C", folder], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    return f"exec:{os.path.join(folder, 'sample_driver')}"


def test_an_exec_driver_gets_its_options_in_the_opening_exchange(tmp_path, nnvts, spec, sample_c):
    result, report = _run(tmp_path, nnvts, "--driver", sample_c, "--driver-option", "name=delta", spec)
    assert result.returncode == 0, result.stderr
    assert report["driver"]["name"] == "nnvts-delta" and report["driver"]["options"] == {"name": "delta"}
    refused, _ = _run(tmp_path, nnvts, "--driver", sample_c, "--driver-option", "colour=red", spec)
    assert refused.returncode == 2 and "colour" in refused.stderr and "name=sample_c" in refused.stderr
    info = nnvts("info", "--driver", sample_c, "--json")
    assert [o["name"] for o in json.loads(info.stdout)["driver_options"]["accepted"]] == ["name"]


def test_an_exec_driver_of_the_first_protocol_refuses_options_cleanly(tmp_path, nnvts, spec):
    first = f"exec:{sys.executable} -m tests.fakes.protocol_v1"
    result, report = _run(tmp_path, nnvts, "--driver", first, spec)
    assert result.returncode == 0, result.stderr  # a driver of the previous protocol still runs
    assert report["summary"]["passed"] and not report["driver"].get("options")
    refused, _ = _run(tmp_path, nnvts, "--driver", first, "--driver-option", "name=x", spec)
    assert refused.returncode == 2 and "accepts no options" in refused.stderr


def test_soak_takes_driver_options_too(tmp_path, nnvts, spec):
    report = tmp_path / "soak.json"
    result = nnvts("soak", "--driver", OPTIONED, "--driver-option", "name=soaky", "--iterations", "1",
                   "--specs", spec, "--json", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(report.read_text())["driver"]["options"] == {"name": "soaky"}
    refused = nnvts("soak", "--driver", OPTIONED, "--driver-option", "colour=red", "--iterations", "1")
    assert refused.returncode == 2 and "colour" in refused.stderr
    fuzz = nnvts("fuzz", "--driver", OPTIONED, "--driver-option", "colour=red", "--examples", "1")
    assert fuzz.returncode == 2 and "colour" in fuzz.stderr
