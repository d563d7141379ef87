"""``nnvts merge`` takes the selection the shards recorded in their headers."""

from __future__ import annotations

import json

import pytest

from vts.report.merge import SelectionMismatch, shards_selection


def _stream(tmp_path, name: str, selection: dict | None) -> str:
    header: dict = {"nnvts_results": 1, "driver": {"name": "d"}}
    if selection is not None:
        header["selection"] = selection
    path = tmp_path / name
    path.write_text(json.dumps(header) + "\n" + json.dumps({"summary": {"total": 0}, "interrupted": False}) + "\n")
    return str(path)


def test_the_shared_selection_is_the_headers_without_their_shard(tmp_path):
    a = _stream(tmp_path, "a.jsonl", {"specs": ["corpus"], "keyword": "conv", "shard": "1/2"})
    b = _stream(tmp_path, "b.jsonl", {"specs": ["corpus"], "keyword": "conv", "shard": "2/2"})
    assert shards_selection([a, b]) == {"specs": ["corpus"], "keyword": "conv"}


def test_headers_without_a_selection_leave_the_default(tmp_path):
    assert shards_selection([_stream(tmp_path, "a.jsonl", None)]) is None


@pytest.mark.parametrize("other", [{"specs": ["corpus"], "keyword": "add"}, {"specs": ["elsewhere"]}, None])
def test_shards_of_different_selections_are_refused_naming_both(tmp_path, other):
    a = _stream(tmp_path, "a.jsonl", {"specs": ["corpus"], "shard": "1/2"})
    b = _stream(tmp_path, "b.jsonl", other)
    with pytest.raises(SelectionMismatch, match="different selections") as error:
        shards_selection([a, b])
    assert a in str(error.value) and b in str(error.value) and "\n" not in str(error.value)
