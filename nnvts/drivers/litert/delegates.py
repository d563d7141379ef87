"""LiteRT delegates as driver options: which one runs the models, and whether it took all of a model.

``delegate=`` names it: ``none`` (the default: TFLite's builtin kernels,
``BUILTIN_WITHOUT_DEFAULT_DELEGATES``), ``xnnpack`` (LiteRT as it ships:
the builtin resolver applies its default XNNPACK delegate), or the path of
an external delegate library (``load_delegate``, its options given as
``delegate.KEY=VALUE``).

A delegate takes the nodes it supports and leaves the rest to LiteRT's CPU
kernels, silently.  The device under test is the delegate, so by default an
operation it leaves to the CPU is unsupported (``fully_delegated`` on the
probe's one-operation model); ``cpu_fallback=1`` accepts the mix, as an app
would run it.

Bad configurations are refused when the driver loads, naming what is
available (``EngineConfigError``: exit status 2, nothing runs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nnvts.drivers.engine.options import EngineConfigError

#: What ``delegate=`` accepts besides a library path.
NAMED = ("none", "xnnpack")


@dataclass(frozen=True)
class Delegate:
    """The configured delegate (``kind`` none, xnnpack or external) and whether CPU fallback is accepted."""

    kind: str = "none"
    library: str = ""
    options: tuple[tuple[str, str], ...] = ()
    cpu_fallback: bool = False

    @property
    def label(self) -> str:
        return os.path.basename(self.library).split(".")[0] if self.kind == "external" else self.kind

    def interpreter(self, content: bytes) -> Any:
        """A one-thread interpreter of ``content`` with this delegate applied (raises LiteRT's own errors)."""
        from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate

        resolver = (OpResolverType.BUILTIN if self.kind == "xnnpack"
                    else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        delegates = [load_delegate(self.library, dict(self.options))] if self.kind == "external" else None
        return Interpreter(model_content=content, num_threads=1, experimental_delegates=delegates,
                           experimental_op_resolver_type=resolver)

    def left_to_cpu(self, interpreter: Any) -> str | None:
        """None when the delegate runs the whole model (or there is none, or CPU fallback is accepted); else why not.

        After delegation the interpreter's nodes include one DELEGATE node per
        partition the delegate took.  The whole model is delegated exactly
        when one DELEGATE node reads only the model's inputs and constants and
        writes all its outputs: any node left to the CPU would sit between
        the inputs and that partition, or after it.
        """
        if self.kind == "none" or self.cpu_fallback:
            return None
        nodes = interpreter._get_ops_details()  # LiteRT's only view of the execution plan
        delegated = [n for n in nodes if n["op_name"] == "DELEGATE"]
        left = sorted({n["op_name"] for n in nodes if n["op_name"] != "DELEGATE"})  # delegated or not: LiteRT
        # lists every original node, so the message names the model's operators, not those left behind
        if len(delegated) == 1:
            node = delegated[0]
            outputs = {int(d["index"]) for d in interpreter.get_output_details()}
            inputs = {int(d["index"]) for d in interpreter.get_input_details()}
            produced = {int(t) for n in nodes if n["op_name"] != "DELEGATE" for t in n["outputs"]}
            # what the partition reads must be model inputs or constants (tensors no node produces)
            if set(map(int, node["outputs"])) >= outputs and all(
                    int(t) in inputs or int(t) not in produced for t in node["inputs"] if int(t) >= 0):
                return None
        return (f"the {self.label} delegate leaves part of it to LiteRT's CPU kernels "
                f"(operators: {', '.join(left) or 'none'}; {len(delegated)} delegated partitions)")

    def describe(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in self.options)
        text = self.library if self.kind == "external" else self.kind
        return f"delegate {text}{f' ({options})' if options else ''}{', cpu fallback' if self.cpu_fallback else ''}"


def configure(options: Mapping[str, str]) -> Delegate:
    """The delegate the driver options name, loaded once to check it (``EngineConfigError`` else)."""
    options = dict(options)
    name = options.pop("delegate", "none") or "none"
    fallback_text = options.pop("cpu_fallback", "0").strip().lower()
    if fallback_text not in ("0", "1", "true", "false", "yes", "no"):
        raise EngineConfigError(f"cpu_fallback={fallback_text!r}: expected 0 or 1")
    cpu_fallback = fallback_text in ("1", "true", "yes")
    delegate_options = {k[len("delegate."):]: v for k, v in options.items() if k.startswith("delegate.")}
    unknown = sorted(k for k in options if not k.startswith("delegate."))
    if unknown:
        raise EngineConfigError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (the litert "
                                "driver accepts delegate=none|xnnpack|PATH, delegate.KEY=VALUE, cpu_fallback=0|1)")
    if name in NAMED:
        if delegate_options:
            raise EngineConfigError(f"delegate.KEY options are for an external delegate library, not {name}")
        return Delegate(name, cpu_fallback=cpu_fallback)
    if not ("/" in name or name.endswith((".so", ".dll", ".dylib"))):
        raise EngineConfigError(f"delegate={name}: no such delegate (available: {', '.join(NAMED)}, "
                                "or the path of a delegate library)")
    if not os.path.isfile(name):
        raise EngineConfigError(f"delegate={name}: no such delegate library (available: {', '.join(NAMED)}, "
                                "or the path of a delegate library)")
    delegate = Delegate("external", os.path.abspath(name), tuple(sorted(delegate_options.items())), cpu_fallback)
    try:
        from ai_edge_litert.interpreter import load_delegate

        load_delegate(delegate.library, dict(delegate.options))
    except (ValueError, RuntimeError, OSError) as error:
        raise EngineConfigError(f"delegate={name}: LiteRT cannot load it: {str(error).strip()[:200]}") from None
    return delegate
