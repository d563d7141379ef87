"""The JUnit report's quoting (vts/report/junit.py): its fast path gives exactly the standard library's bytes."""

from __future__ import annotations

import random
from xml.sax.saxutils import escape, quoteattr

from vts.report.junit import _attr, _text
from vts.report.sanitize import clean


def test_quoting_without_markup_is_quoteattr_and_escape_exactly():
    """``_attr`` and ``_text`` skip the escaping when there is nothing to escape; never another result."""
    draw = random.Random(23)
    alphabet = "ab./_-0 é✓\"'&<>\n\r\t\x00\ud800"
    for _ in range(5000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randrange(12)))
        cleaned = clean(text)
        assert _attr(text) == quoteattr(cleaned, {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})
        assert _text(text) == escape(cleaned)
