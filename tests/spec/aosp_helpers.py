"""Shared pieces of the ``nnvts corpus import aosp`` tests: paths, a fake tree, the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
AOSP_NN = SHARED / "aosp-nn" / "nn"
CORPUS = SHARED / "corpus"
GENERATOR = Path("tools/test_generator")
SPECS = Path("runtime/test/specs")

#: A tiny spec in Android's DSL: ADD of two float32 [2] tensors (goldens by hand: 1+3, 2+4).
SYNTHETIC_ADD = """\
model = Model()
i1 = Input("op1", "TENSOR_FLOAT32", "{2}")
i2 = Input("op2", "TENSOR_FLOAT32", "{2}")
act = Int32Scalar("act", 0)
o = Output("op3", "TENSOR_FLOAT32", "{2}")
model = model.Operation("ADD", i1, i2, act).To(o)
Example({i1: [1.0, 2.0], i2: [3.0, 4.0], o: [4.0, 6.0]})
"""


#: A control-flow spec in the style of Android's V1_3 folder: IF over two referenced subgraphs
#: (goldens by hand: x + 10 when cond, x - 10 otherwise), with declared relaxed and float16 variations.
SYNTHETIC_IF = """\
def branch(op):
    x = Input("x", ("TENSOR_FLOAT32", [2]))
    c = Parameter("c", ("TENSOR_FLOAT32", [2]), [10.0, 10.0])
    y = Output("y", ("TENSOR_FLOAT32", [2]))
    return Model().Operation(op, x, c, 0).To(y)

then_model = branch("ADD")
else_model = branch("SUB")
cond = Input("cond", ("TENSOR_BOOL8", [1]))
x = Input("x", ("TENSOR_FLOAT32", [2]))
y = Output("y", ("TENSOR_FLOAT32", [2]))
model = Model().Operation("IF", cond, then_model, else_model, x).To(y)
Example({cond: [True], x: [1.0, 2.0], y: [11.0, 12.0]}, model=model, name="true")
Example({cond: [False], x: [1.0, 2.0], y: [-9.0, -8.0]}, model=model, name="false").AddVariations("relaxed", "float16")
"""


def make_tree(root: Path, specs: dict[str, dict[str, str]]) -> Path:
    """An ``nn/`` folder under ``root``: a copy of the shared generator and ``specs`` (folder -> file -> text)."""
    nn = root / "nn"
    shutil.copytree(AOSP_NN / GENERATOR, nn / GENERATOR)
    for folder, files in specs.items():
        (nn / SPECS / folder).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (nn / SPECS / folder / name).write_text(text)
    return nn


def nnvts(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the ``nnvts`` CLI from the repository, as a user would."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
