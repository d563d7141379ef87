"""Encoding a model once however often it is sent (``model_sent_unchanged``, an nnvts hint, not HAL).

The validation family sends each mutated model to ``get_supported_operations``
and then to ``prepare_model``; encoding it twice was a sixth of the harness's
time in that sweep.  A mutation also shares most of its main subgraph with
the model it was made from, whose bytes are copied instead of encoded again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from vts.hal.types import MemoryToken, Model, Subgraph
from vts.ipc import protocol as p
from vts.ipc.protocol import Writer

__all__ = ["ModelEncoder"]


class ModelEncoder:
    """Writes models for one connection, reusing the bytes of a model pinned by ``model_sent_unchanged``."""

    def __init__(self) -> None:
        #: ``(model, its bytes, its pools' wire ids)`` while a caller sends that model unchanged.
        self._pinned: tuple[Model, bytes | None, tuple[tuple[str, int], ...]] | None = None
        #: The main subgraph of the model the pinned one was made from, and its bytes.
        self._like: tuple[Subgraph, p.SubgraphBytes] | None = None
        self._pinned_like: p.SubgraphBytes | None = None

    @contextlib.contextmanager
    def model_sent_unchanged(self, model: Model, made_from: Model | None = None) -> Iterator[None]:
        """Within the block, ``model`` is encoded once however often it is sent.

        The caller promises not to change the model inside the block (nothing tells a changed model from an
        unchanged one short of encoding it again).  Its pools are looked up on every send, so a pool
        released or declared again in between makes the model encoded anew.

        ``made_from``: a model whose main subgraph's operands and operations ``model`` shares, in
        part, as the very same objects (a mutation of it).  Those are copied from ``made_from``'s
        bytes, kept from one block to the next while the same model is named: the caller promises
        that nobody changes them meanwhile.
        """
        like = None
        if made_from is not None:
            kept = self._like
            if kept is None or kept[0] is not made_from.main:
                kept = self._like = (made_from.main, p.SubgraphBytes.of(made_from.main))
            like = kept[1]
        self._pinned, self._pinned_like = (model, None, ()), like
        try:
            yield
        finally:
            self._pinned = self._pinned_like = None

    def write_model(self, w: Writer, model: Model, memory_id: Callable[[Any], int]) -> None:
        """Write ``model`` (its pools named by ``memory_id``), from the pinned bytes when they still hold."""
        pinned = self._pinned
        if pinned is None or pinned[0] is not model:
            p.write_model(w, model, memory_id)
            return
        pools = tuple(("token", pool.token) if isinstance(pool, MemoryToken) else ("memory", memory_id(pool))
                      for pool in model.pools)
        if pinned[1] is not None and pinned[2] == pools:
            w.buf += pinned[1]
            return
        start = len(w.buf)
        p.write_model(w, model, memory_id, self._pinned_like)
        self._pinned = (model, bytes(w.buf[start:]), pools)
