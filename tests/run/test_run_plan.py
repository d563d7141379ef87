"""The run plan is one immutable value, and the CI features are extensions applied in one place."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from vts.ipc.drivers import DriverRef
from vts.results import CaseResult, Verdict
from vts.run.extensions import BaselineGate, DurationStore, FlakyGate, RunExtension, exit_status, wrap_sinks
from vts.run.plan import Isolation, Limits, ReportPlan, RunPlan, SelectionPlan, driver_ref
from vts.run.selection import SelectionError


def _plan(**changes) -> RunPlan:
    plan = RunPlan(driver=DriverRef("reference"), selection=SelectionPlan(("generated_tests",), ("generated",),
                                                                         "add and not quant8", "2/5"))
    return plan.with_(**changes) if changes else plan


def test_a_plan_cannot_be_changed_and_travels_whole():
    plan = _plan(reports=ReportPlan(json="r.json"), isolation=Isolation(jobs=2), limits=Limits(case_timeout=3.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.pool_kind = "mmap_fd"  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(plan))
    assert copy == plan
    assert copy.limits.memory_limit_bytes == 4096 << 20
    assert plan.with_(pool_kind="mmap_fd").pool_kind == "mmap_fd" and plan.pool_kind == "ashmem"


def test_each_process_builds_its_own_selection_from_the_plan():
    plan = _plan()
    first, second = plan.selection.build(), plan.selection.build()
    assert first.keyword is not second.keyword  # each counts its own -k hits
    assert first.families == ["generated"] and first.shard is not None
    assert first.keyword("add_float") and not first.keyword("add_quant8")
    narrowed = plan.selection.build(shard=lambda name: False)
    assert not narrowed.shard("anything")
    assert plan.selection.header() == {"specs": ["generated_tests"], "families": ["generated"],
                                       "keyword": "add and not quant8", "shard": "2/5"}


def test_a_bad_shard_text_is_refused_when_the_selection_is_built():
    with pytest.raises(SelectionError):
        SelectionPlan(("x",), shard="9/2").build()


def test_the_families_see_the_plan_as_run_options():
    options = _plan(pool_kind="mmap_fd", limits=Limits(case_timeout=7.5), large_budget=3.0).run_options()
    assert (options.pool_kind, options.case_timeout, options.large_budget) == ("mmap_fd", 7.5, 3.0)
    assert options.oracle == DriverRef("reference") and options.send_ahead
    assert not _plan(send_ahead=False).run_options().send_ahead
    assert not options.allow_network and _plan(isolation=Isolation(allow_network=True)).run_options().allow_network


def test_driver_options_are_added_to_the_reference():
    ref = driver_ref("reference", [("b", "2"), ("a", "1")])
    assert ref.spec == "reference" and dict(ref.options) == {"a": "1", "b": "2"}
    assert driver_ref(ref) is ref


class _Collect:
    def __init__(self) -> None:
        self.results: list[CaseResult] = []
        self.finished = False

    def add(self, result: CaseResult) -> None:
        self.results.append(result)

    def finish(self, interrupted: bool) -> None:
        self.finished = True


class _Marks(RunExtension):
    """An extension whose sink tags each result with its name: shows the order the sinks see it in."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def wrap(self, sinks):
        mark = self.mark

        class Sink:
            def add(self, result):
                result = dataclasses.replace(result, reason=result.reason + mark)
                for sink in sinks:
                    sink.add(result)

            def finish(self, interrupted):
                for sink in sinks:
                    sink.finish(interrupted)
        return [Sink()]


def test_the_first_extension_sees_each_result_first():
    inner = _Collect()
    sinks = wrap_sinks([_Marks("a"), _Marks("b")], [inner])
    for sink in sinks:
        sink.add(CaseResult("x", "generated", Verdict.PASSED, ""))
        sink.finish(False)
    assert [r.reason for r in inner.results] == ["ab"] and inner.finished


def test_flaky_gate_fails_a_run_only_with_a_flaky_case():
    gate, inner = FlakyGate(), _Collect()
    (sink,) = gate.wrap([inner])
    sink.add(CaseResult("x", "generated", Verdict.PASSED, ""))
    assert exit_status([gate], 0) == 0
    sink.add(CaseResult("y", "generated", Verdict.FLAKY, ""))
    assert exit_status([gate], 0) == 1
    assert exit_status([gate], 130) == 130  # an interrupted run keeps its status
    assert len(inner.results) == 2


def test_duration_store_writes_every_duration_at_the_end(tmp_path):
    from vts.run.durations import load_durations

    path = tmp_path / "durations.json"
    store = DurationStore(str(path))
    (sink,) = store.wrap([_Collect()])
    sink.add(CaseResult("x", "generated", Verdict.PASSED, "", duration=1.5))
    sink.finish(False)
    assert load_durations(str(path)) == {"x": 1.5}


def test_baseline_gate_with_fail_on_new_passes_a_run_whose_failures_are_old():
    from vts.report.baseline import Baseline

    gate = BaselineGate(Baseline({"x": Verdict.FAILED}, "old.jsonl"), fail_on="new")
    inner = _Collect()
    (sink,) = gate.wrap([inner])
    sink.add(CaseResult("x", "generated", Verdict.FAILED, "still"))
    assert exit_status([gate], 1) == 0
    assert "baseline" in inner.results[0].extra
    sink.add(CaseResult("y", "generated", Verdict.FAILED, "new"))
    assert exit_status([gate], 1) == 1
