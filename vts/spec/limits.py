"""How big a spec may be: the bounds that keep a hostile spec file from hanging or exhausting a run.

Vendors point nnvts at spec folders they did not write and run it in CI, so
a spec file is untrusted input.  Each bound is far above anything a real spec
needs (the largest file of the external corpus is 8.6 MB of JSON once
decompressed) and far below what would hurt the machine; a file beyond one
is a load-time error (exit status 2) that names the bound.
"""

from __future__ import annotations

#: Bytes of spec text, after decompression.  Gzip data is inflated in chunks
#: and abandoned as soon as it passes this, so a gzip bomb costs ~this much.
MAX_SPEC_BYTES = 64 << 20

#: Nodes YAML aliases may add to a document beyond the nodes written out.  An
#: alias is a reference, so ``*a`` repeated makes a "billion laughs" document
#: of a few hundred bytes; everything downstream (schema, checks, expansion)
#: walks the expanded tree, so the expansion is what must be bounded.
MAX_ALIAS_NODES = 1_000_000

#: Characters of an integer literal (sign included).  Every integer a spec
#: holds fits in 64 bits (20 digits); Python's own limit (4300 digits) would
#: otherwise surface as a traceback, and a 4000-digit number has no meaning.
MAX_INT_CHARS = 24

#: Largest integer magnitude a spec may write (64 bits, signed or unsigned).
MAX_INT_MAGNITUDE = (1 << 64) - 1


def describe_bytes(size: int) -> str:
    """``64 MiB`` for messages."""
    return f"{size >> 20} MiB" if size >= 1 << 20 and size % (1 << 20) == 0 else f"{size} bytes"
