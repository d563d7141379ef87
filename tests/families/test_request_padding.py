"""The request_padding family: the reference (AIDL v4) passes; a driver taking an output's padding for output
space fails ``padded`` and ``insufficient`` and nothing else; a HAL 1.3 driver is skipped, the rule named."""

from __future__ import annotations

import json
import os

from nnvts.drivers.reference import create_device
from tests.fakes import broken_padding
from vts.families.base import RunOptions
from vts.families.generated import GeneratedFamily
from vts.families.request_padding import KINDS, RequestPaddingFamily, pad_request, padding_problems
from vts.hal.types import DataLocation
from vts.hal.validation import validate_request
from vts.hal.validation_error import ValidationError
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.runner import Runner

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "add_binary.json")


def _model():
    with open(SPEC, encoding="utf-8") as file:
        return next(m for m in parse_spec(json.load(file)) if m.name == "relu")


def _results(device, family=None) -> dict:
    family = family or RequestPaddingFamily()
    runner = Runner(device, RunOptions())
    return {case.config.get("kind", case.name): runner.run_case(family, case)
            for case in family.model_cases(_model(), SPEC)}


def test_the_reference_passes_every_case():
    assert {k: r.verdict for k, r in _results(create_device()).items()} == dict.fromkeys(KINDS, Verdict.PASSED)


def test_a_driver_using_the_output_padding_fails_padded_and_insufficient_only():
    results = _results(broken_padding.writes_output_padding())
    assert {k: r.verdict for k, r in results.items()} == {
        "padded": Verdict.FAILED, "insufficient": Verdict.FAILED,
        "input_past_pool": Verdict.PASSED, "output_past_pool": Verdict.PASSED,
        "negative_padding": Verdict.PASSED}
    assert "padding byte(s) changed" in results["padded"].reason
    assert "held output data in the padding" in results["insufficient"].reason


def test_a_driver_validating_without_the_padding_fails_the_wrong_padding_cases_only():
    verdicts = {k: r.verdict for k, r in _results(broken_padding.ignores_padding()).items()}
    assert verdicts == {"padded": Verdict.PASSED, "insufficient": Verdict.PASSED, "input_past_pool": Verdict.FAILED,
                        "output_past_pool": Verdict.FAILED, "negative_padding": Verdict.FAILED}


def test_the_same_driver_passes_a_family_that_sends_no_padding():
    results = _results(broken_padding.writes_output_padding(), GeneratedFamily())
    assert results and {r.verdict for r in results.values()} == {Verdict.PASSED}


def test_a_hal_1_3_driver_skips_every_case_naming_the_rule():
    results = _results(create_device(hal="1.3"))
    assert {r.verdict for r in results.values()} == {Verdict.SKIPPED}
    assert all("DataLocation.padding is AIDL's" in r.reason for r in results.values())


def test_padding_is_the_gap_to_64_bytes_and_a_changed_padding_byte_is_named():
    model = _model()
    built = build_request(model, model.examples[0])
    try:
        pad_request(built)
        locations = [a.location for a in built.request.inputs + built.request.outputs]
        assert all((loc.offset + loc.length + loc.padding) % 64 == 0 for loc in locations)
        assert all(loc.padding > 0 for loc in locations)  # add_binary's float32 tensors are shorter than 64 bytes
        assert padding_problems(built) == []
        out = built.request.outputs[0].location
        built.output_pool.write(out.offset + out.length + 3, b"\x00")
        assert padding_problems(built)[0].startswith("output 0: 1 of its")
    finally:
        built.close()


def test_validation_counts_the_padding_against_the_pool_and_refuses_it_on_omitted_arguments():
    model = _model()
    hal = to_hal_model(model)
    built = build_request(model, model.examples[0])
    try:
        request = built.request
        loc = request.inputs[0].location
        room = built.input_pool.size - loc.offset - loc.length
        request.inputs[0].location = DataLocation(loc.pool_index, loc.offset, loc.length, room)
        validate_request(request, hal)
        for bad in (room + 1, -1):
            request.inputs[0].location = DataLocation(loc.pool_index, loc.offset, loc.length, bad)
            try:
                validate_request(request, hal)
            except ValidationError as error:
                assert "padding" in str(error)
            else:
                raise AssertionError(f"padding {bad} accepted")
    finally:
        built.close()
