"""Validation mutations of extension operations: nnvts cannot call a vendor's signature invalid.

Found by running the validation family through the LiteRT driver, which
does not declare ``com.example.fibonacci``: removing an input of that
extension's operation leaves a model the HAL's rules accept (an extension
operation's inputs are the vendor's to define), so a driver that does not
know the extension rightly answers NONE with the operation unsupported.
"""

from __future__ import annotations

from vts.families.validation.family import BUILTIN_REGISTRY
from vts.families.validation.mutations import enumerate_mutations
from vts.hal.enums import is_extension_type
from vts.model.casemodel import close_model, parse_spec, to_hal_model
from vts.spec.loader import load_file


def test_no_input_of_an_extension_operation_is_removed():
    (model, *_) = parse_spec(load_file("generated_tests/fibonacci.json").document)
    hal = to_hal_model(model, extensions=BUILTIN_REGISTRY)
    try:
        extension_ops = {k for k, op in enumerate(hal.main.operations) if is_extension_type(op.type)}
        removals = [m.args for m in enumerate_mutations(hal) if m.kind == "remove_operation_input"]
    finally:
        close_model(hal)
    assert extension_ops
    assert not [args for args in removals if args[0] in extension_ops]
