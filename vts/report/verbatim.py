"""The JSON report's cases copied from the run's own stream, not decoded and encoded again.

At the end of a run the reports are rendered from the results stream; for
the JSON report that meant decoding every line, rebuilding and re-checking
each result, and encoding it again: 26 us a case on the 2-core machine of
bench/README.md, 1.1 s of the parent's 5.4 s of CPU in a ``-j 2`` run of
``V1_0``'s validation cases, and the serial end of every run.  A case line
the run wrote itself is already a result bounded and made XML-safe
(``clean_result``), encoded the way the JSON report encodes it, so its text
can go into the report as it is.

"Wrote itself" is checked, not assumed: the stream records the length and
CRC-32 of every byte it wrote (``StreamFingerprint``), and the copy checks
both over the whole file as it reads.  A stream changed meanwhile (another
process, a disk that lost data), a line of another shape, or a stream that
is not the run's own (``nnvts report``, ``nnvts merge``) makes the caller
render the slow way, which trusts nothing.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

#: How a case line the stream writes begins and ends (compact separators, ASCII: ``ensure_ascii``).
CASE_PREFIX = b'{"case":'
CASE_SUFFIX = b"}\n"
#: How the footer (the summary record, the last line) begins.
FOOTER_PREFIX = b'{"summary":'


@dataclass(frozen=True)
class StreamFingerprint:
    """Length and CRC-32 of every byte a ``ResultStream`` wrote, in order."""

    length: int
    crc: int

    def after(self, data: bytes) -> StreamFingerprint:
        return StreamFingerprint(self.length + len(data), zlib.crc32(data, self.crc))


EMPTY = StreamFingerprint(0, 0)


class StreamChanged(Exception):
    """The stream is not byte for byte what its writer wrote, or holds a line a copy cannot take."""


def case_texts(path: str, fingerprint: StreamFingerprint) -> Iterator[str]:
    """The JSON text of each case record of the stream at ``path``, in order.

    Raises ``StreamChanged`` (possibly after yielding some: the caller discards what it made of them)
    unless the file is exactly the bytes ``fingerprint`` describes and every line is the header, a
    case or the footer.
    """
    crc = zlib.crc32
    with open(path, "rb") as handle:
        header = handle.readline()
        length, checksum = len(header), crc(header)
        for line in handle:
            length += len(line)
            checksum = crc(line, checksum)
            if line.startswith(CASE_PREFIX) and line.endswith(CASE_SUFFIX):
                try:
                    yield line[len(CASE_PREFIX):-len(CASE_SUFFIX)].decode("ascii")
                except UnicodeDecodeError:
                    raise StreamChanged(f"{path}: a case line that is not ASCII") from None
            elif not line.startswith(FOOTER_PREFIX):
                raise StreamChanged(f"{path}: a line that is neither a case nor the footer")
    if StreamFingerprint(length, checksum) != fingerprint:
        raise StreamChanged(f"{path}: {length} bytes that are not the {fingerprint.length} written")
