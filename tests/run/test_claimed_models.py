"""``-j`` workers that claim models as they reach them (``vts.run.claims``).

Several workers are played in one process, interleaved case by case in a drawn order, over one shared
table: whatever the order, every case runs once, each worker's cases come in the order of the whole
selection, a model is one worker's, a worker that replaces a dead one goes on with the same cases, and
the parent's replay lists exactly what a slot claimed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tests.run.test_names_before_cases import _units, _written_sizes
from vts.model import casemodel
from vts.run.claims import ClaimingSlot, ModelClaims
from vts.run.runner import Selection, iter_cases
from vts.run.selection import Shard

SPECS = ["generated_tests"]


def _claims(capacity: int | None = None) -> ModelClaims:
    return ModelClaims() if capacity is None else ModelClaims(capacity)


def _worker(slot: int, jobs: int, claims: ModelClaims, replay: bool = False, **selection) -> Iterator[str]:
    partition = ClaimingSlot(slot, jobs, claims, replay)
    return (case.name for _, case in iter_cases(Selection(SPECS, partition=partition, **selection)))


def _interleaved(jobs: int, claims: ModelClaims, seed: int, **selection) -> list[list[str]]:
    """Each worker's cases when the workers take turns drawn at random, one case a turn."""
    draw = random.Random(seed)
    workers = {slot: _worker(slot, jobs, claims, **selection) for slot in range(jobs)}
    ran: list[list[str]] = [[] for _ in range(jobs)]
    while workers:
        slot = draw.choice(sorted(workers))
        name = next(workers[slot], None)
        if name is None:
            del workers[slot]
        else:
            ran[slot].append(name)
    return ran


@pytest.fixture(scope="module")
def every_name() -> list[str]:
    return [case.name for _, case in iter_cases(Selection(SPECS))]


@pytest.fixture(scope="module")
def unit_of() -> dict[str, str]:
    """Each case's unit (its model, or for a device-level case its name), worked out independently."""
    return _units(shard=False)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_workers_together_run_every_case_once_each_in_order(every_name, seed):
    ran = _interleaved(3, _claims(), seed)
    assert sorted(n for part in ran for n in part) == sorted(every_name)
    position = {name: i for i, name in enumerate(every_name)}
    for part in ran:
        assert part == sorted(part, key=position.__getitem__)
    assert all(part for part in ran)  # each got work


def test_a_model_is_one_workers(every_name, unit_of):
    ran = _interleaved(3, _claims(), 7)
    owners: dict[str, set[int]] = {}
    for slot, part in enumerate(ran):
        for name in part:
            owners.setdefault(unit_of[name], set()).add(slot)
    assert owners and all(len(slots) == 1 for slots in owners.values()), {
        s: o for s, o in owners.items() if len(o) > 1}


def test_a_free_worker_takes_what_a_busy_one_has_not_reached(every_name):
    """Worker 0 stops after its first case; worker 1 then runs every file worker 0 had not claimed."""
    claims = _claims()
    first = _worker(0, 2, claims)
    taken = [next(first)]
    rest = list(_worker(1, 2, claims))
    assert len(rest) > 0.8 * len(every_name)
    taken += list(first)
    assert sorted(taken + rest) == sorted(every_name)


def test_a_replacement_worker_goes_on_with_the_same_cases(every_name, unit_of):
    """A worker dies in its fourth model; the one that replaces it, skipping the cases the dead one ended,
    runs what the dead one would have run next, and every case still runs once."""
    claims = _claims()
    draw = random.Random(5)
    other, dead = _worker(1, 2, claims), _worker(0, 2, claims)
    ran0: list[str] = []
    ran1: list[str] = []
    while len({unit_of[n] for n in ran0 if unit_of[n] != n}) < 4:
        if draw.random() < 0.5:
            ran0.append(next(dead))
        else:
            ran1.append(next(other))
    replacement = _worker(0, 2, claims)
    again = [next(replacement) for _ in ran0]
    assert again == ran0  # the slot's first cases are the same ones, so the parent's count holds
    ran0 += list(replacement)
    ran1 += list(other)
    assert sorted(ran0 + ran1) == sorted(every_name)


def test_the_parent_replay_lists_exactly_a_slots_cases(every_name):
    claims = _claims()
    ran = _interleaved(2, claims, 11)
    for slot in range(2):
        assert list(_worker(slot, 2, claims, replay=True)) == ran[slot]


def test_files_beyond_the_table_are_hashed(every_name):
    """A table of 10 files: the rest of the files' units are split by the hash, and still every case runs once."""
    ran = _interleaved(2, _claims(capacity=10), 3)
    assert sorted(n for part in ran for n in part) == sorted(every_name)


def test_a_worker_parses_only_the_models_it_takes(monkeypatch, unit_of):
    """Without a family that sees whole spec files, a model is parsed by the worker that takes it alone:
    never twice, and a file whose models others took is not parsed at all."""
    parsed: list[tuple[str, str]] = []
    original = casemodel.parse_model

    def counting(spec_name, doc, *args, **kwargs):
        parsed.append((spec_name, doc["name"]))
        return original(spec_name, doc, *args, **kwargs)

    monkeypatch.setattr(casemodel, "parse_model", counting)
    ran = _interleaved(2, _claims(), 13, families=["validation", "generated"])
    assert ran[0] and ran[1]
    assert len(parsed) == len(set(parsed))
    assert {casemodel.model_case_name(spec, model) for spec, model in parsed} >= {
        unit_of[n] for part in ran for n in part if unit_of[n] != n}


def test_a_file_others_took_whole_is_not_loaded(monkeypatch):
    """With burst and concurrency a worker parses every model of a file it loads (they pair models of a
    file), but a file whose every model another worker took before it got there is not loaded."""
    from vts.spec import loader

    loaded: list[str] = []
    original = loader.load_file

    def counting(path, *args, **kwargs):
        loaded.append(path)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(loader, "load_file", counting)
    claims = _claims()
    first = list(_worker(0, 2, claims, families=["burst", "concurrency"]))
    files = len(loaded)
    rest = list(_worker(1, 2, claims, families=["burst", "concurrency"]))
    assert first and not rest and len(loaded) == files  # worker 1 found every model taken: it loaded nothing


def test_heavy_models_stay_shared_by_name_and_their_files_unclaimed(monkeypatch, every_name):
    from vts.run import runner

    monkeypatch.setattr(runner, "HEAVY_MODEL_SIZE", 14)
    ran = _interleaved(3, _claims(), 17)
    assert sorted(n for part in ran for n in part) == sorted(every_name)
    heavy = {m for m, size in _written_sizes(SPECS).items() if size >= 14}
    holders = {i for i, part in enumerate(ran) for n in part
               if n.startswith("validation/") and n.split("/", 1)[1].rsplit(".", 1)[0] in heavy}
    assert heavy and holders == {0, 1, 2}


def test_with_a_shard_the_workers_split_the_shards_cases(every_name):
    shard = Shard(2, 3)
    wanted = [case.name for _, case in iter_cases(Selection(SPECS, shard=shard))]
    ran = _interleaved(2, _claims(), 19, shard=shard)
    assert sorted(n for part in ran for n in part) == sorted(wanted)


def _claim_in_child(claims: ModelClaims, place: int, slot: int) -> None:
    claims.claim(place, slot)


def _die_holding_the_lock(claims: ModelClaims) -> None:
    import fcntl
    import os

    fcntl.lockf(claims.fd, fcntl.LOCK_EX)
    os._exit(3)


def test_the_table_is_shared_with_spawned_workers_and_outlives_a_dead_claimant():
    """A claim made in a spawned process is seen here; a process that dies holding the table's lock
    does not leave the next claim waiting (the kernel drops an fcntl lock with its holder)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    claims = _claims()
    try:
        child = context.Process(target=_claim_in_child, args=(claims, 3, 1))
        child.start()
        child.join(60)
        assert child.exitcode == 0 and claims.owner(3) == 1 and not claims.claim(3, 0)
        dying = context.Process(target=_die_holding_the_lock, args=(claims,))
        dying.start()
        dying.join(60)
        assert dying.exitcode == 3
        assert claims.claim(4, 0) and claims.owner(4) == 0
    finally:
        claims.close()
