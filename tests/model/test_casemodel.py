"""A CaseModel carries typed criteria, whichever way it is made: no mapping reaches the comparison."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.spec.helpers import base_document
from vts.model.builtin.synthetic import add_chain
from vts.model.casemodel import parse_spec
from vts.model.compare import Tolerance, ToleranceError


def test_a_document_that_skipped_the_loader_cannot_carry_a_misspelt_key() -> None:
    document = base_document()
    document["models"][0]["tolerance"] = {"qaunt": 3}
    with pytest.raises(ToleranceError, match="qaunt"):
        parse_spec(document)


def test_a_programmatic_model_refuses_a_mapping_tolerance() -> None:
    model = add_chain("add", 1, 2)
    assert replace(model, tolerance=Tolerance(quant=2)).tolerance.quant == 2
    with pytest.raises(TypeError, match="Tolerance"):
        replace(model, tolerance={"quant": 2})
