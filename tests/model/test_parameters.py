"""The operation under test and its named scalar parameters, for a failure's detail in a report."""

from __future__ import annotations

from tests.spec.test_authoring import conv, expand
from vts.model.casemodel import parse_model
from vts.model.parameters import operation_parameters


def _model(variations, name):
    return parse_model("conv", expand(conv(variations))[name])


def test_conv_parameters_are_named_by_the_nnapi_signature():
    found = operation_parameters(_model(None, "conv"))
    assert found is not None and found["operation"] == "CONV_2D"
    by_name = {p["name"]: p["value"] for p in found["parameters"]}
    assert by_name == {"padding_left": 0, "padding_right": 0, "padding_top": 0, "padding_bottom": 0,
                       "stride_width": 1, "stride_height": 1, "activation": 0, "layout": False}


def test_the_helper_adds_of_all_inputs_as_internal_are_not_the_operation_under_test():
    model = _model([["all_inputs_as_internal"]], "conv_all_inputs_as_internal")
    assert model.main.operations[0].type != model.main.operations[-1].type  # ADD, then CONV_2D
    found = operation_parameters(model)
    assert found is not None and found["operation"] == "CONV_2D"
    assert any(p["name"] == "stride_width" for p in found["parameters"])


def test_android_specs_scalars_are_named_by_the_signature_and_their_helper_adds_skipped():
    """Android's generated specs (the corpus) name scalars "param", "param1", ... and the lifetime
    variation's constant "placeholder": the causes of a report need "beta", and SOFTMAX, not ADD."""
    import gzip
    import json
    import os

    import pytest

    from tests.conftest import CORPUS
    from vts.model.casemodel import parse_spec

    path = os.path.join(CORPUS, "V1_2", "softmax_v1_2.json.gz")
    if not os.path.exists(path):
        pytest.skip("the corpus is not here")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        models = {m.name: m for m in parse_spec(json.load(handle))}
    relaxed = operation_parameters(models["relaxed_2"])
    assert relaxed is not None and relaxed["operation"] == "SOFTMAX" and relaxed["rank"] == 4
    assert [p["name"] for p in relaxed["parameters"]] == ["beta"]
    for name in ("all_inputs_as_internal", "dim1_axis0_all_inputs_as_internal_2"):  # "placeholder", "placeholder13"
        internal = operation_parameters(models[name])
        assert internal is not None and internal["operation"] == "SOFTMAX"
    assert operation_parameters(models["axis_dim4_axis0_neg"])["parameters"][1]["name"] == "axis"
