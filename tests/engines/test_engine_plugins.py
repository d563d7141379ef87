"""Engine plugins as driver options: ONNX Runtime execution providers (QNN's HTP), LiteRT delegates, the compile cache.

Skipped per extra: ``nnvts[onnxruntime]`` for the provider options,
``nnvts[qnn]`` (onnxruntime-qnn) for the HTP itself, ``nnvts[litert]`` for
delegates.  The cache's authentication is tested without any provider
(``SessionCache.store``/``load`` on bytes), and once end to end on the HTP.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.conftest import hand_add_float, hand_add_quant8
from vts.hal.enums import DeviceType
from vts.model.casemodel import close_model, parse_spec, to_hal_model
from vts.results import Verdict


def _need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed (pip install 'nnvts[{extra}]')")


@pytest.fixture
def ort_driver():
    _need("onnxruntime", "onnxruntime")
    _need("onnx", "onnxruntime")
    import nnvts.drivers.onnxruntime as module

    return module


@pytest.fixture
def htp(ort_driver, tmp_path):
    _need("onnxruntime_qnn", "qnn")
    return ort_driver.create_device(ep="qnn", cache=str(tmp_path / "cache"))


# ------------------------------------------------------------------------------------------- bad configurations


@pytest.mark.parametrize(("options", "named"), [
    ({"ep": "nosuch"}, "CPUExecutionProvider"),
    ({"ep": "/nonexistent/libprovider.so"}, "no such provider library"),
    ({"ep": "cpu", "colour": "red"}, "colour"),
    ({"ep": "cpu", "ep.threads": "2"}, "other than the CPU one"),
])
def test_unusable_provider_configuration_is_refused_naming_what_exists(ort_driver, options, named):
    from nnvts.drivers.engine.options import EngineConfigError

    with pytest.raises(EngineConfigError, match=named):
        ort_driver.create_device(**options)


def test_an_option_qnn_does_not_have_is_refused_with_its_options(ort_driver):
    """QNN ignores unknown option names silently, so the driver refuses them itself."""
    _need("onnxruntime_qnn", "qnn")
    from nnvts.drivers.engine.options import EngineConfigError

    with pytest.raises(EngineConfigError, match=r"backend_type.*htp_performance_mode"):
        ort_driver.create_device(ep="qnn", **{"ep.htp_performance_mod": "burst"})


def test_bad_provider_is_exit_status_2_before_anything_runs(ort_driver, tmp_path):
    command = [sys.executable, "-m", "vts.cli.main", "run", "--driver", "onnxruntime", "--driver-option",
               "ep=nosuch", "--specs", "generated_tests/add_binary.json", "--json", str(tmp_path / "r.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "available: cpu, qnn" in done.stderr
    assert not (tmp_path / "r.json").exists()


# ------------------------------------------------------------------------------------------- the HTP


def test_htp_is_an_accelerator_named_vendor_device(htp):
    assert htp.get_type() == DeviceType.ACCELERATOR
    assert htp.name == "qualcomm-htp"
    assert "onnxruntime-qnn/" in htp.get_version_string() and "backend_type=htp" in htp.get_version_string()


@pytest.mark.parametrize("document", [hand_add_float(), hand_add_quant8()], ids=["float32", "quant8-qdq"])
def test_hand_computed_add_passes_on_the_htp(htp, run_generated, document):
    assert [r.verdict for r in run_generated(document, htp)] == [Verdict.PASSED]


def test_fp16_precision_is_asked_only_for_relaxed_models(ort_driver):
    from nnvts.drivers.onnxruntime.providers import FP16_OPTION, Provider

    qnn = Provider("qnn", "QNN", (("backend_type", "htp"),), plugin=True)
    assert qnn.provider_options(relaxed=False)[FP16_OPTION] == "0"
    assert qnn.provider_options(relaxed=True)[FP16_OPTION] == "1"
    fixed = Provider("qnn", "QNN", ((FP16_OPTION, "1"),), plugin=True, fixed=frozenset({FP16_OPTION}))
    assert fixed.provider_options(relaxed=False)[FP16_OPTION] == "1"  # the user's explicit choice stands


def test_quantized_models_are_built_in_qdq_form_for_a_provider(ort_driver):
    """No contrib QLinear operator reaches a provider: the standard DequantizeLinear/op/QuantizeLinear form."""
    import onnx

    from nnvts.drivers.engine.nnapi import ModelView
    from nnvts.drivers.onnxruntime.translator import translate

    (parsed,) = parse_spec(hand_add_quant8())
    hal = to_hal_model(parsed)
    try:
        contrib = translate(ModelView(hal))
        qdq = translate(ModelView(hal), qdq=True)
    finally:
        close_model(hal)
    assert "QLinearAdd" in {n.op_type for n in contrib.graph.node}
    kinds = [n.op_type for n in qdq.graph.node]
    assert "QLinearAdd" not in kinds and {"DequantizeLinear", "Add", "QuantizeLinear"} <= set(kinds)
    onnx.checker.check_model(qdq)


# ------------------------------------------------------------------------------------------- the compile cache


def _cache(ort_driver, directory):
    from nnvts.drivers.onnxruntime.cache import SessionCache
    from nnvts.drivers.onnxruntime.providers import Provider

    return SessionCache(Provider("test", "TestProvider"), directory)


def test_cache_gives_back_only_what_it_stored_under_that_key(ort_driver, tmp_path):
    cache = _cache(ort_driver, tmp_path / "c")
    assert cache.active
    cache.store("k1", b"compiled")
    assert cache.load("k1") == b"compiled"
    assert cache.load("k2") is None
    path = tmp_path / "c" / "k1.ctx"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert cache.load("k1") is None  # tampered: never handed to the engine
    os.rename(tmp_path / "c" / "secret", tmp_path / "c" / "old")
    cache.store("k1", b"compiled")
    assert _cache(ort_driver, tmp_path / "c").load("k1") is None  # another secret, another machine's files


def test_cache_is_off_when_its_secret_is_readable_by_others(ort_driver, tmp_path):
    _cache(ort_driver, tmp_path / "c")
    os.chmod(tmp_path / "c" / "secret", 0o644)
    cache = _cache(ort_driver, tmp_path / "c")
    assert not cache.active and "open to other users" in cache.note


def test_cache_key_covers_model_and_options(ort_driver, tmp_path):
    cache = _cache(ort_driver, tmp_path / "c")
    assert cache.key(b"model", False) != cache.key(b"model2", False)
    qnn = _cache(ort_driver, tmp_path / "c")
    from nnvts.drivers.onnxruntime.providers import Provider

    qnn.provider = Provider("qnn", "QNN", (("backend_type", "htp"),), plugin=True)
    assert qnn.key(b"model", False) != qnn.key(b"model", True)  # fp16 precision differs


def test_htp_compiles_once_then_loads_from_the_authenticated_cache(ort_driver, htp, tmp_path):
    from nnvts.drivers.engine.nnapi import ModelView

    (parsed,) = parse_spec(hand_add_float())
    hal = to_hal_model(parsed)
    try:
        htp.translator.compile(ModelView(hal))
        assert (htp.cache.misses, htp.cache.hits) == (1, 0)
        again = ort_driver.create_device(ep="qnn", cache=str(tmp_path / "cache"))
        again.translator.compile(ModelView(hal))
        assert (again.cache.misses, again.cache.hits) == (0, 1)
        for path in (tmp_path / "cache").glob("*.ctx"):
            path.write_bytes(path.read_bytes()[:-1] + b"x")
        third = ort_driver.create_device(ep="qnn", cache=str(tmp_path / "cache"))
        third.translator.compile(ModelView(hal))
        assert (third.cache.misses, third.cache.hits) == (1, 0)  # forged: compiled again, not loaded
    finally:
        close_model(hal)


# ------------------------------------------------------------------------------------------- LiteRT delegates


@pytest.fixture
def litert_driver():
    _need("ai_edge_litert", "litert")
    import nnvts.drivers.litert as module

    return module


@pytest.mark.parametrize(("options", "named"), [
    ({"delegate": "nosuch"}, "available: none, xnnpack"),
    ({"delegate": "/nonexistent/libdelegate.so"}, "no such delegate library"),
    ({"delegate": "xnnpack", "delegate.num_threads": "2"}, "external delegate"),
    ({"delegate": "xnnpack", "colour": "red"}, "colour"),
    ({"delegate": "xnnpack", "cpu_fallback": "maybe"}, "cpu_fallback"),
])
def test_unusable_delegate_configuration_is_refused_naming_what_exists(litert_driver, options, named):
    from nnvts.drivers.engine.options import EngineConfigError

    with pytest.raises(EngineConfigError, match=named):
        litert_driver.create_device(**options)


def test_xnnpack_device_runs_the_hand_computed_add(litert_driver, run_generated):
    device = litert_driver.create_device(delegate="xnnpack")
    assert device.name == "litert-xnnpack"
    assert [r.verdict for r in run_generated(hand_add_float(), device)] == [Verdict.PASSED]


def test_an_operation_xnnpack_leaves_to_the_cpu_is_unsupported_unless_cpu_fallback(litert_driver):
    """XNNPACK has no uint8 EQUAL: the delegate leaves it to TFLite's kernels (the model runs, but not on it)."""
    document = hand_add_quant8()
    main = document["models"][0]["main"]
    main["operations"][0]["type"] = "EQUAL"
    main["operations"][0]["inputs"] = main["operations"][0]["inputs"][:2]
    main["operands"][-1] = {k: v for k, v in main["operands"][-1].items() if k not in ("scale", "zero_point")}
    main["operands"][-1]["type"] = "TENSOR_BOOL8"
    document["models"][0]["examples"][0]["outputs"]["out"] = [False, False, False, False]
    (parsed,) = parse_spec(document)
    hal = to_hal_model(parsed)
    try:
        strict = litert_driver.create_device(delegate="xnnpack").unsupported_reasons(hal)
        mixed = litert_driver.create_device(delegate="xnnpack", cpu_fallback="1").unsupported_reasons(hal)
    finally:
        close_model(hal)
    assert strict[0] is not None and "leaves part of it to LiteRT's CPU kernels (operators: EQUAL" in strict[0]
    assert mixed == [None]


def test_cache_is_off_unless_asked(ort_driver, tmp_path, monkeypatch):
    """Off by default: on the emulated HTP loading a context was measured slower than compiling (bench/README.md)."""
    monkeypatch.delenv("NNVTS_ENGINE_CACHE", raising=False)
    assert ort_driver.create_device().cache.directory is None
    assert ort_driver.create_device(cache=str(tmp_path)).cache.directory == tmp_path
    monkeypatch.setenv("NNVTS_ENGINE_CACHE", str(tmp_path / "env"))
    assert ort_driver.create_device().cache.directory == tmp_path / "env"
    assert ort_driver.create_device(cache="off").cache.directory is None


@pytest.mark.parametrize("spec", ["conv_2d_hand", "depthwise_conv_2d_hand", "add_binary"])
def test_qdq_form_passes_the_hand_computed_goldens_on_the_cpu_provider(ort_driver, run_generated, spec):
    """The QDQ translation itself, judged where no accelerator can blur it: CPU kernels, hand-computed goldens
    (per-channel filters, int32 biases, fused activations in the float domain included)."""
    from vts.spec.loader import load_file

    device = ort_driver.create_device()
    device.translator.forms = lambda view: [(True, False)]  # what a provider gets, on the CPU provider
    document = load_file(f"generated_tests/{spec}.json").document
    results = [r for r in run_generated(document, device) if r.verdict is not Verdict.SKIPPED]
    quantized = [r for r in results if "quant8" in r.name]
    assert quantized, "no quantized case ran"
    assert [(r.name, r.reason) for r in results if r.verdict is not Verdict.PASSED] == []
