"""``-j N`` CPU pinning: each worker's driver host on cores of its own, unless ``--no-pin-cpus``."""

from __future__ import annotations

import os

import pytest

from tests.fakes.affinity import AFFINITY_DIR_ENV
from tests.scale.conftest import SLICE
from vts.run.affinity import worker_cpus


def test_cores_are_shared_out_evenly_and_disjointly():
    allowed = [0, 1, 2, 3, 4]
    shares = [worker_cpus(slot, 2, allowed) for slot in range(2)]
    assert shares == [{0, 1}, {2, 3}]  # the odd core stays with nobody: both workers get the same share
    assert [worker_cpus(slot, 5, allowed) for slot in range(5)] == [{c} for c in allowed]


@pytest.mark.parametrize("jobs", [1, 6])
def test_no_pinning_without_a_core_for_every_worker(jobs):
    assert worker_cpus(0, jobs, [0, 1, 2, 3, 4]) is None


def _host_cpus(directory) -> list[set[int]]:
    return [set(map(int, path.read_text().split())) for path in directory.iterdir()]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs at least 2 CPUs to pin 2 workers")
@pytest.mark.parametrize("pin", [True, False])
def test_driver_hosts_of_two_workers(nnvts, tmp_path, pin):
    allowed = os.sched_getaffinity(0)
    run = nnvts("run", "--driver", "tests.fakes.affinity:create_device", *SLICE, "-j", "2",
                *(() if pin else ("--no-pin-cpus",)), **{AFFINITY_DIR_ENV: str(tmp_path), "NNVTS_SANDBOX": "none"})
    assert run.returncode == 0, run.stderr
    hosts = _host_cpus(tmp_path)
    # Three hosts: the parent starts the driver once first (unpinned) so that one that does not start is a
    # usage error, then each worker's host.
    assert len(hosts) == 3
    if pin:
        pinned = [cpus for cpus in hosts if cpus != allowed]
        assert len(pinned) == 2, hosts
        assert pinned[0].isdisjoint(pinned[1]) and pinned[0] | pinned[1] <= allowed
        assert len(pinned[0]) == len(pinned[1]) == len(allowed) // 2
    else:
        assert hosts == [allowed, allowed, allowed]
