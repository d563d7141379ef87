"""Rolled request variants exclude per-channel quantized models (found by the LiteRT driver in burst/concurrency).

``f(roll(x)) = roll(f(x))`` holds for elementwise operations only while an
element's meaning does not depend on its position; a per-channel scale does
(DEQUANTIZE of TENSOR_QUANT8_SYMM_PER_CHANNEL: element 0 of channel 0 rolled
from channel 1 is scaled by 2.0, not 0.5), so the rolled golden was wrong
and every correct driver, the reference included, failed it.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import CORPUS
from vts.families._kit.request_variants import request_variants
from vts.model.casemodel import parse_spec
from vts.spec.loader import load_file

SPEC = os.path.join(CORPUS, "V1_2", "dequantize_v1_2.json.gz")


@pytest.mark.skipif(not os.path.exists(SPEC), reason="external corpus not present")
def test_per_channel_dequantize_gets_no_rolled_variants():
    models = {m.case_name(): m for m in parse_spec(load_file(SPEC).document)}
    per_channel = models["dequantize_v1_2.3d_per_channel_first_dim"]
    assert request_variants(per_channel, 4) == list(per_channel.examples)
    per_tensor = next(m for name, m in models.items() if "per_channel" not in name and m.examples
                      and len(request_variants(m, 4)) > 1)
    assert per_tensor is not None  # per-tensor models still get their rolled variants
