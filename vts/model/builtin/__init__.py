"""Every model nnvts builds itself (MobileNet; the caching, memory-domain and synthetic models).

Their goldens are computed apart from any driver (closed forms or a float64
numpy pass).  ``__all__`` names what the families and tests build; each
name loads on first use.  The cache model ``mobilenet`` of
``cache_models`` is not named here: the name is that of the submodule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.model.builtin.cache_models import chain
    from vts.model.builtin.memory_models import (
        CONFLICT_TYPE,
        TEST_TYPES,
        OperandSpec,
        add_model,
        conv_model,
        is_quantized,
    )
    from vts.model.builtin.mobilenet import BLOCKS, FIRST_CHANNELS, build_mobilenet_v1_float, build_mobilenet_v1_quant8
    from vts.model.builtin.synthetic import add_chain

#: The public names, by the module that defines each.
_HOMES = {
    "vts.model.builtin.cache_models": ("chain",),
    "vts.model.builtin.memory_models": (
        "CONFLICT_TYPE", "OperandSpec", "TEST_TYPES", "add_model", "conv_model", "is_quantized",
    ),
    "vts.model.builtin.mobilenet": (
        "BLOCKS", "FIRST_CHANNELS", "build_mobilenet_v1_float", "build_mobilenet_v1_quant8",
    ),
    "vts.model.builtin.synthetic": ("add_chain",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BLOCKS",
    "CONFLICT_TYPE",
    "FIRST_CHANNELS",
    "TEST_TYPES",
    "OperandSpec",
    "add_chain",
    "add_model",
    "build_mobilenet_v1_float",
    "build_mobilenet_v1_quant8",
    "chain",
    "conv_model",
    "is_quantized",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
