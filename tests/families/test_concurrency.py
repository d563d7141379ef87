"""The concurrency family: the reference passes in and out of process, and drivers broken in the
real execution pattern (a shared scratch buffer, a release that reclaims every model) are caught."""

from __future__ import annotations

import copy
import os
import threading

import numpy as np
import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import CORPUS, hand_add_float, hand_add_quant8
from tests.fakes import broken_concurrency
from tests.ipc.conftest import hand_mul_float
from vts.families._kit.concurrent_calls import run_concurrently
from vts.families._kit.request_variants import SiblingExamples, request_variants, rolled, shared_dims, with_examples
from vts.families.base import CaseFailure, RunOptions
from vts.families.concurrency import ConcurrencyFamily
from vts.ipc.process import HostProcess
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner
from vts.run.runner import Runner

#: Corpus specs: elementwise (rolled variants), convolution (one golden), dynamic shapes, several inputs.
CORPUS_SAMPLES = ("V1_0/add.json.gz", "V1_0/conv_float.json.gz", "V1_2/box_with_nms_limit_hard.json.gz",
                  "V1_2/sub_v1_2.json.gz", "V1_1/mean.json.gz")


def run_cases(runner, documents, kind: str | None = None) -> dict:
    family = ConcurrencyFamily()
    results = {}
    for document in documents:
        for model in parse_spec(document):
            for case in family.model_cases(model, "<inline>"):
                if kind is None or case.config["kind"] == kind:
                    results[case.name] = runner.run_case(family, case)
    return results


def not_passed(results: dict) -> dict:
    return {name: (r.verdict.name, r.reason) for name, r in results.items() if r.verdict is not Verdict.PASSED}


def isolated(driver: str) -> IsolatedRunner:
    host = HostProcess(driver)
    return IsolatedRunner(host.start(), RunOptions(case_timeout=30), host=host)


def corpus_documents() -> list:
    from vts.spec.loader import load_paths

    paths = [os.path.join(CORPUS, p) for p in CORPUS_SAMPLES if os.path.exists(os.path.join(CORPUS, p))]
    return [f.document for f in load_paths(paths)] if paths else []


# -- request variants --------------------------------------------------------------------------------


def test_rolled_variants_of_an_elementwise_model_have_their_own_goldens():
    model = parse_spec(hand_add_float())[0]
    assert shared_dims(model, model.examples[0]) == (2, 2)
    variants = request_variants(model, 4)
    assert len(variants) == 4
    one = rolled(model, model.examples[0], 1)
    # Rolling the inputs by one element rolls the hand-computed sums by one: 0.5 moves to the front.
    np.testing.assert_array_equal(one.outputs[0].value.reshape(-1), [0.5, 1.75, 2.0, 0.25])
    np.testing.assert_array_equal(one.inputs[0].value.reshape(-1), [100.0, 1.5, -2.0, 0.125])


def test_models_without_an_exact_identity_keep_their_own_examples():
    documents = corpus_documents()
    conv = [m for d in documents for m in parse_spec(d) if m.spec.startswith("conv_float")]
    if not conv:
        pytest.skip("corpus not available")
    assert all(shared_dims(m, m.examples[0]) is None for m in conv)
    assert all(len(request_variants(m, 8)) == len(m.examples) for m in conv)


def test_per_channel_quantization_is_not_rolled():
    """A per-channel scale belongs to a position: rolled inputs would change the answer (found on the corpus)."""
    from vts.spec.loader import load_paths

    path = os.path.join(CORPUS, "V1_2/dequantize_v1_2.json.gz")
    if not os.path.exists(path):
        pytest.skip("corpus not available")
    models = [m for f in load_paths([path]) for m in parse_spec(f.document)]
    per_channel = [m for m in models if any(o.channel_quant is not None for o in m.main.operands)]
    assert per_channel and all(shared_dims(m, m.examples[0]) is None for m in per_channel)
    assert any(shared_dims(m, m.examples[0]) is not None for m in models)  # the per-tensor ones still roll


def test_identical_sibling_models_lend_their_examples():
    """The corpus splits a multi-example Android model into models of one example each."""
    first = hand_add_float()
    second = copy.deepcopy(first)
    second["models"][0]["name"] = "add_2"
    # 1 + 1 = 2; 2 + 2 = 4; 3 + 3 = 6; 4 + 4 = 8
    second["models"][0]["examples"] = [{"inputs": {"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0]},
                                        "outputs": {"out": [2.0, 4.0, 6.0, 8.0]}}]
    other = copy.deepcopy(second)
    other["models"][0]["main"]["operations"][0]["type"] = "MUL"  # another graph: no sibling
    siblings = SiblingExamples()
    models = [parse_spec(d)[0] for d in (first, second, other)]
    assert siblings.remember(models[0], "s") == ()
    assert siblings.remember(models[1], "s") == models[0].examples
    assert siblings.remember(models[2], "s") == ()
    assert siblings.remember(models[1], "another spec file") == ()
    lent = with_examples(models[1], models[0].examples)
    assert [e.name for e in lent.examples] == ["", "sibling1"]


def test_shared_scratch_is_caught_on_a_convolution_through_its_sibling():
    path = os.path.join(CORPUS, "V1_0/conv_1_h3_w2_SAME.json.gz")
    if not os.path.exists(path):
        pytest.skip("corpus not available")
    from vts.spec.loader import load_paths

    documents = [f.document for f in load_paths([path])]
    results = run_cases(Runner(broken_concurrency.shared_scratch(), RunOptions(case_timeout=60)), documents,
                        kind="in_flight")
    failed = [name for name, r in results.items() if r.verdict is Verdict.FAILED]
    assert "concurrency/conv_1_h3_w2_SAME.2" in failed, not_passed(results)


def test_concurrent_calls_keep_results_in_order_and_report_a_hang():
    results = run_concurrently([lambda i=i: i * i for i in range(10)], 3, 10.0)
    assert [r.value for r in results] == [i * i for i in range(10)]
    never = threading.Event()
    with pytest.raises(CaseFailure, match="1 of 2 concurrent calls"):
        run_concurrently([lambda: 1, never.wait], 2, 0.2)
    never.set()


# -- the reference -----------------------------------------------------------------------------------


def test_reference_passes_in_process():
    documents = [hand_add_float(), hand_add_quant8(), hand_mul_float(), *corpus_documents()]
    results = run_cases(Runner(create_device(), RunOptions(case_timeout=60)), documents)
    assert results and not not_passed(results)


def test_reference_passes_out_of_process():
    runner = isolated("reference")
    try:
        results = run_cases(runner, [hand_add_float(), hand_mul_float()])
    finally:
        assert runner.host is not None
        runner.host.stop()
    # add: in flight and interleaved with itself; mul: in flight (it pairs with a third model, absent here)
    assert len(results) == 3 and not not_passed(results)


# -- broken drivers --------------------------------------------------------------------------------


def test_shared_scratch_is_caught_in_process():
    results = run_cases(Runner(broken_concurrency.shared_scratch(), RunOptions(case_timeout=60)),
                        [hand_add_float(), hand_add_quant8()], kind="in_flight")
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("out of tolerance" in r.reason for r in results.values())


def test_shared_scratch_is_caught_out_of_process():
    runner = isolated("tests.fakes.broken_concurrency:shared_scratch")
    try:
        results = run_cases(runner, [hand_add_float()], kind="in_flight")
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)


def test_shared_scratch_passes_one_request_at_a_time(run_generated):
    """The fault is invisible to the generated family: only concurrency exposes it."""
    results = run_generated(hand_add_float(), broken_concurrency.shared_scratch())
    assert all(r.verdict is Verdict.PASSED for r in results)


def test_reclaim_on_release_is_caught_by_the_interleaved_case():
    device = broken_concurrency.reclaim_all()
    results = run_cases(Runner(device, RunOptions(case_timeout=60)), [hand_mul_float()], kind="interleaved")
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)
    assert "reclaimed" in next(iter(results.values())).reason


def test_reclaim_on_release_is_caught_out_of_process():
    runner = isolated("tests.fakes.broken_concurrency:reclaim_all")
    try:
        results = run_cases(runner, [hand_mul_float()], kind="interleaved")
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)


def test_release_frees_m1_without_a_collection_and_collects_a_cycle():
    """``_release`` collects only when dropping the reference did not free m1 (a reference cycle)."""
    import gc
    import weakref

    from vts.families.concurrency import _release

    class Prepared:
        pass

    plain, cyclic = [Prepared()], [Prepared()]
    cyclic[0].me = cyclic[0]
    refs = [weakref.ref(plain[0]), weakref.ref(cyclic[0])]
    collections = gc.get_stats()[2]["collections"]
    _release(plain)()  # the list held the only reference: freed at once, no full collection
    assert refs[0]() is None and gc.get_stats()[2]["collections"] == collections
    _release(cyclic)()  # alive after the list let go (its own cycle): collected
    assert refs[1]() is None and gc.get_stats()[2]["collections"] > collections


def test_an_interleaved_case_names_the_model_that_failed_and_describes_its_operation():
    """Issue 45: a case failed by its partner ("m2") named the partner neither in its reason nor in its
    operation, so the report blamed the model the driver computes right."""
    import json

    from tests.fakes.beta import create_device as beta
    from vts.families.base import Case

    with open(os.path.join("generated_tests", "softmax_beta_axis.json"), encoding="utf-8") as handle:
        models = {m.name: m for m in parse_spec(json.load(handle))}
    right, wrong = models["float32"], models["float32_axis0"]  # beta 1.0 (beta ignored: right), beta 0.5
    case = Case("concurrency/interleaved/softmax_beta_axis.float32", "concurrency", right, None, "",
                {"kind": "interleaved", "partner": wrong, "requests": 4, "threads": 2})
    result = Runner(beta(), RunOptions()).run_case(ConcurrencyFamily(), case)
    assert result.verdict is Verdict.FAILED
    assert f"(m2 {wrong.case_name()}," in result.reason
    described = result.extra["operation"]
    assert described["operation"] == "SOFTMAX"
    assert {"input": 1, "name": "beta", "value": 0.5} in described["parameters"]
