"""Model.copy: a structural copy that must mean exactly what copy.deepcopy meant."""

from __future__ import annotations

import copy

from vts.hal.types import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams


def _model() -> Model:
    operands = [
        Operand(0, [2, 3], 1, 0.5, 0, 2, DataLocation(0, 4, 8)),
        Operand(11, [3], 1, 0.0, 0, 3, DataLocation(0, 0, 12), SymmPerChannelQuantParams([0.1, 0.2, 0.3], 0)),
        Operand(0, [2, 3], 0, 0.0, 0, 1, extra_params=b"\x01\x02"),
    ]
    main = Subgraph(operands, [Operation(0, [0, 1], [2])], [0], [2])
    return Model(main, [copy.deepcopy(main)], b"\x00" * 16)


def test_copy_equals_deepcopy_and_is_independent() -> None:
    model = _model()
    clone = model.copy()
    assert clone == model._deepcopy()
    clone.main.operands[0].dimensions.append(7)
    clone.main.operands[1].extra_params.scales[0] = 9.0
    clone.main.operations[0].inputs[0] = 5
    clone.referenced[0].operands[0].location.offset = 99
    assert model == _model()


def test_junk_fields_are_deep_copied() -> None:
    model = _model()
    model.main.operands[0].dimensions = [[1, 2], "x"]  # what a validation mutator may leave
    model.main.operations.append("junk")
    clone = model.copy()
    assert clone == model._deepcopy()
    clone.main.operands[0].dimensions[0].append(3)
    assert model.main.operands[0].dimensions == [[1, 2], "x"]
