"""-k expressions, shards and expectation lists share one matcher that reports unused patterns."""

from __future__ import annotations

import errno
import functools
import operator
import os

import pytest

from vts.run.selection import ExpectationList, SelectionError, Shard, parse_expression

NAMES = ["add.add", "add.add_relaxed", "conv2d.nchw_quant8", "validation/add.mutate_operand_type_0"]


def select(expr: str) -> list[str]:
    matcher = parse_expression(expr)
    return [n for n in NAMES if matcher(n)]


def test_substring_glob_and_boolean_operators():
    assert select("add") == ["add.add", "add.add_relaxed", "validation/add.mutate_operand_type_0"]
    assert select("add and not relaxed and not validation/") == ["add.add"]
    assert select("conv2d.* or *relaxed") == ["add.add_relaxed", "conv2d.nchw_quant8"]
    assert select("(quant8 or relaxed) and not conv") == ["add.add_relaxed"]


def test_unmatched_terms_are_reported():
    matcher = parse_expression("add or lstm")
    [matcher(n) for n in NAMES]
    assert matcher.unmatched() == ["lstm"]


def test_terms_match_case_insensitively_as_pytest_does():
    names = ["conv2d.nchw_quant8", "conv2d.nchw_channelQuant8", "add.ADD_Relaxed"]
    matcher = parse_expression("QUANT8 and not channelquant8")
    assert [n for n in names if matcher(n)] == ["conv2d.nchw_quant8"]
    assert [n for n in names if parse_expression("*relaxed")(n)] == ["add.ADD_Relaxed"]


def test_a_term_the_expression_never_asks_still_counts_when_it_matches_on_its_own():
    """Issue 43: ``quant8 and not channelQuant8`` warned that channelQuant8 matched nothing (the `and`
    never asked it about a name its first term refused), yet ``-k channelQuant8`` alone selects cases."""
    names = ["conv2d.nchw_quant8", "conv2d.nchw_channelQuant8", "add.add"]
    matcher = parse_expression("add and channelQuant8 or lstm")
    assert not [n for n in names if matcher(n)]
    assert matcher.unmatched() == ["lstm"]


@pytest.mark.parametrize("bad", ["", "add and", "(add", "or add", "add )"])
def test_malformed_expressions_are_usage_errors(bad):
    with pytest.raises(SelectionError):
        parse_expression(bad)


def test_shards_partition_cases():
    names = [f"case{i}" for i in range(200)]
    shards = [Shard.parse(f"{i}/3") for i in (1, 2, 3)]
    buckets = [[n for n in names if s(n)] for s in shards]
    assert sorted(functools.reduce(operator.iadd, buckets, [])) == sorted(names)
    assert all(buckets)
    with pytest.raises(SelectionError):
        Shard.parse("4/3")


def test_expectation_list(tmp_path):
    path = tmp_path / "xfail.txt"
    path.write_text("# known problems\nconv2d.*  # vendor bug 123\nnever.matches\n")
    expectations = ExpectationList.from_file(str(path))
    assert expectations.expects_failure("conv2d.nchw_quant8")
    assert not expectations.expects_failure("add.add")
    assert expectations.unmatched() == ["never.matches"]


def test_an_expectation_list_swapped_for_a_fifo_is_refused_not_waited_on(tmp_path):
    """The option checked a regular file; a FIFO put in its place before the list is read (a worker reads it
    again) is refused at once: opened without blocking, judged by its descriptor."""
    fifo = tmp_path / "expected.txt"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as refused:
        ExpectationList.from_file(str(fifo))
    assert refused.value.errno == errno.EINVAL and "not a regular file" in str(refused.value)
