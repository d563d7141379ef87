"""The wheel works without the clone: built, installed into a fresh venv, run from an empty folder.

A vendor installs nnvts from a wheel (``pip wheel``/``python -m build``) or a
git URL, not with ``-e`` from a checkout: the bundled cases must come with
it (package data, ``vts/spec/bundled.py``) and ``nnvts run --driver
reference`` must find its driver by entry point.  The fresh venv gets the
wheel alone (``--no-deps``); its dependencies are this environment's, added
as a plain path (so this environment's editable nnvts is not seen: its
``.pth`` files are not read from a directory added that way).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: What the build needs of the clone (copied, so the build's own build/ and egg-info stay out of it).
SOURCES = ("pyproject.toml", "README.md", "vts", "nnvts", "generated_tests")

pytestmark = pytest.mark.wheel


def _copy_sources(target: str) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "sample_driver")
    for name in SOURCES:
        source = os.path.join(ROOT, name)
        if not os.path.exists(source):
            continue
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(target, name), symlinks=True, ignore=ignore)
        else:
            shutil.copy2(source, target)


def _run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, f"{' '.join(command)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    source, dist = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    _copy_sources(str(source))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)], timeout=300)
    (built,) = [os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".whl")]
    return built


def test_the_wheel_carries_the_bundled_cases_and_no_top_level_drivers_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    cases = {n.rsplit("/", 1)[1] for n in names if n.startswith("nnvts/generated_tests/") and n.endswith(".json")}
    assert cases == {n for n in os.listdir(os.path.join(ROOT, "generated_tests")) if n.endswith(".json")}
    top_level = {n.split("/", 1)[0] for n in names if "/" in n and ".dist-info/" not in n}
    assert top_level == {"vts", "nnvts"}, top_level  # a top-level "drivers" would shadow a vendor's package
    assert "reference = nnvts.drivers.reference:create_device" in entry_points


def test_installed_from_the_wheel_nnvts_runs_the_bundled_cases_from_an_empty_folder(wheel, tmp_path):
    env_dir, empty = tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel],
         timeout=120)
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 30).stdout.strip()
    with open(os.path.join(purelib, "nnvts-test-dependencies.pth"), "w") as pth:
        pth.write(sysconfig.get_paths()["purelib"] + "\n")  # click, numpy, ...: a path, its .pth files unread
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    where = _run([python, "-c", "import vts, nnvts; print(vts.__file__); print(nnvts.__file__)"], 30,
                 cwd=empty, env=env).stdout
    assert ROOT not in where and str(env_dir) in where  # the wheel's nnvts, not the clone's
    result = subprocess.run([str(env_dir / "bin" / "nnvts"), "run", "--driver", "reference", "--family", "generated",
                             "-q"], cwd=empty, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and " cases in " in result.stdout
    assert os.listdir(empty) == []  # nothing written where it ran but what was asked (nothing)
