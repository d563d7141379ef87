"""The XLA driver (nnvts/drivers/xla): translations against goldens and the reference driver, precision, identity.

Skipped without the xla extra (``pip install nnvts[xla]``).  Nothing here
needs a GPU: the driver runs on JAX's CPU backend.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from nnvts.drivers.reference import create_device as create_reference
from nnvts.drivers.xla import cpu, cpu_default_precision
from nnvts.drivers.xla.backend import BackendUnavailable, select_backend
from tests.conftest import hand_add_float, hand_add_quant8
from vts.hal.enums import NUMPY_DTYPE, DeviceType, OperandType
from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model
from vts.results import Verdict
from vts.spec.loader import load_file

#: Bundled specs over the operations the driver translates: float32, float16, relaxed and quant8 variations.
SELECTION = ("add_binary", "mul_binary", "conv_2d_hand", "depthwise_conv_2d_hand", "average_pool_2d_hand",
             "max_pool_2d_hand", "fully_connected_hand", "relu6_clamp", "logistic_sigmoid", "softmax_beta_axis",
             "reshape_basic", "concatenation_basic", "transpose_basic")
CLAIMED_THEN_REFUSED = "although every operation was reported supported"


@pytest.fixture(scope="module")
def device():
    return cpu()


@pytest.fixture(scope="module")
def reference():
    return create_reference()


def test_identity_names_backend_and_jax(device):
    import jax

    assert device.name == "xla-cpu"
    assert device.get_type() == DeviceType.CPU
    version = device.get_version_string()
    assert "cpu backend" in version and jax.__version__ in version and "precision highest" in version


def test_missing_backend_is_one_clear_import_error():
    with pytest.raises(BackendUnavailable) as error:
        select_backend("no-such-backend")
    assert isinstance(error.value, ImportError)
    assert "available: cpu" in str(error.value)


@pytest.mark.parametrize("name", SELECTION)
def test_bundled_selection_passes_or_is_cleanly_unsupported(device, run_generated, name):
    results = run_generated(load_file(f"generated_tests/{name}.json").document, device)
    bad = [(r.name, r.verdict, r.reason) for r in results
           if r.verdict not in (Verdict.PASSED, Verdict.SKIPPED) or CLAIMED_THEN_REFUSED in r.reason]
    assert not bad
    assert any(r.verdict is Verdict.PASSED for r in results)


@pytest.mark.parametrize("document", [hand_add_float(), hand_add_quant8()], ids=["float", "quant8"])
def test_hand_computed_add_passes(device, run_generated, document):
    assert [r.verdict for r in run_generated(document, device)] == [Verdict.PASSED]


def _outputs(device, model, example) -> list[np.ndarray]:
    hal = to_hal_model(model)
    try:
        prepared = device.prepare_model(hal)
    finally:
        close_model(hal)
    built = build_request(model, example)
    try:
        result = prepared.execute(built.request)
        values = []
        for position, index in enumerate(model.main.outputs):
            dtype = np.dtype(NUMPY_DTYPE[OperandType(model.main.operands[index].type)])
            dims = result.output_shapes[position].dimensions
            values.append(built.read_output(position, dtype, int(np.prod(dims))).reshape(dims))
        return values
    finally:
        built.close()


QUANT_SPECS = ("conv_2d_hand", "depthwise_conv_2d_hand", "fully_connected_hand", "average_pool_2d_hand",
               "add_binary", "mul_binary")


@pytest.mark.parametrize("name", QUANT_SPECS)
def test_quantized_results_equal_the_reference_bit_for_bit(device, reference, name):
    """Every quantized model of the spec the driver supports gives the reference's integers exactly."""
    compared = 0
    for model in parse_spec(load_file(f"generated_tests/{name}.json").document):
        kinds = {OperandType(model.main.operands[i].type) for i in model.main.outputs}
        if not kinds & {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED}:
            continue
        hal = to_hal_model(model)
        try:
            if not all(device.get_supported_operations(hal)) or not all(reference.get_supported_operations(hal)):
                continue
        finally:
            close_model(hal)
        for example in model.examples:
            ours, theirs = _outputs(device, model, example), _outputs(reference, model, example)
            for a, b in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(a, b)
            compared += 1
    assert compared, f"no quantized model of {name} was compared"


def _supported(device, model) -> bool:
    hal = to_hal_model(model)
    try:
        return all(device.get_supported_operations(hal))
    finally:
        close_model(hal)


def test_float_results_match_the_reference(device, reference):
    compared = 0
    for name in ("conv_2d_hand", "depthwise_conv_2d_hand", "fully_connected_hand"):
        for model in parse_spec(load_file(f"generated_tests/{name}.json").document):
            kinds = {OperandType(model.main.operands[i].type) for i in model.main.outputs}
            if kinds != {OperandType.TENSOR_FLOAT32} or not _supported(device, model):
                continue
            compared += 1
            for a, b in zip(_outputs(device, model, model.examples[0]), _outputs(reference, model, model.examples[0]),
                            strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert compared


def _conv_program_text(device, relaxed: bool = False) -> str:
    document = load_file("generated_tests/conv_2d_hand.json").document
    for model in parse_spec(document):
        if {OperandType(o.type) for o in model.main.operands} >= {OperandType.TENSOR_FLOAT32}:
            hal = to_hal_model(model)
            hal.relax_computation_float32_to_float16 = relaxed
            try:
                prepared = device.prepare_model(hal)
            finally:
                close_model(hal)
            return prepared.program.compiled.as_text()
    raise AssertionError("no float32 conv model")


def test_float32_convolutions_compile_at_highest_precision(device):
    import jax

    assert jax.config.jax_default_matmul_precision == "highest"
    assert "precision_config" in _conv_program_text(device) or "HIGHEST" in _conv_program_text(device).upper()


def test_precision_in_the_lowered_program():
    """HIGHEST is asked for on float32 convolutions; the self-test variant leaves XLA's default."""
    from nnvts.drivers.engine.nnapi import ModelView
    from nnvts.drivers.xla.translator import lower

    document = load_file("generated_tests/conv_2d_hand.json").document
    model = next(m for m in parse_spec(document)
                 if OperandType(m.main.operands[m.main.outputs[0]].type) == OperandType.TENSOR_FLOAT32)
    hal = to_hal_model(model)
    try:
        view = ModelView(hal)
        graph = hal.main
        import jax

        texts = {}
        for name, backend in (("highest", select_backend("cpu", "highest")),
                              ("default", select_backend("cpu", "default"))):
            function = lower(view, graph.operations, graph.input_indexes, graph.output_indexes,
                             backend.lax_precision(False))
            shapes = [jax.ShapeDtypeStruct(tuple(view.dims(i)), np.float32) for i in graph.input_indexes]
            texts[name] = jax.jit(function).lower(*shapes).as_text()
        relaxed = select_backend("cpu", "highest").lax_precision(True)
    finally:
        select_backend("cpu", "highest")  # the process-wide default back to highest
        close_model(hal)
    assert "HIGHEST" in texts["highest"]
    assert "HIGHEST" not in texts["default"]
    assert relaxed == jax.lax.Precision.DEFAULT  # relaxed models may use reduced precision


def test_default_precision_variant_exists_and_says_so():
    device = cpu_default_precision()
    try:
        assert "precision default" in device.get_version_string()
    finally:
        select_backend("cpu", "highest")


def test_unsupported_operations_carry_the_reason(device):
    document = load_file("generated_tests/conv_2d_rank3.json").document
    (model,) = parse_spec(document)
    hal = to_hal_model(model)
    try:
        assert device.get_supported_operations(hal) == [False]
        (reason,) = device.unsupported_reasons(hal)
        assert "rank 3" in reason
    finally:
        close_model(hal)


def test_quantized_softmax_is_unsupported_not_approximated(device):
    for model in parse_spec(load_file("generated_tests/softmax_beta_axis.json").document):
        if OperandType(model.main.operands[model.main.inputs[0]].type) == OperandType.TENSOR_QUANT8_ASYMM:
            hal = to_hal_model(model)
            try:
                (reason,) = device.unsupported_reasons(hal)
            finally:
                close_model(hal)
            assert reason is not None and "SOFTMAX" in reason
            return
    pytest.skip("no quantized softmax model in the bundled spec")


def test_preparing_the_same_model_again_compiles_nothing(device):
    (model,) = parse_spec(hand_add_float())
    hal = to_hal_model(model)
    try:
        device.prepare_model(hal)
        before = device.translator.compilations
        device.prepare_model(hal)
        device.get_supported_operations(hal)
        assert device.translator.compilations == before
    finally:
        close_model(hal)


def test_single_operation_model_is_compiled_once_for_probe_and_preparation():
    device = cpu()
    (model,) = parse_spec(hand_add_float())
    hal = to_hal_model(model)
    try:
        device.get_supported_operations(hal)
        assert device.translator.compilations == 1
        device.prepare_model(hal)
        assert device.translator.compilations == 1
    finally:
        close_model(hal)
