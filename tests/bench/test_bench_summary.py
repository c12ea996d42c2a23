"""The summary benchmark runs and reports what it measures (tests/bench/bench_summary.py)."""

from __future__ import annotations

import re

import pytest

from tests.bench import bench_summary


async def test_the_summary_benchmark_counts_the_calls_of_a_catch_up_over_every_stored_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await bench_summary.main(bench_summary.parse_args(["--messages", "120", "--chunk-tokens", "500", "--show"]))
    out = capsys.readouterr().out
    assert "120 stored messages" in out and "'catch me up' -> acted" in out
    calls = re.search(r"the summary: (\d+) TEXT_SMALL calls", out)
    chunks = re.search(r"  chunk\s+(\d+)", out)
    assert calls and chunks and int(chunks.group(1)) >= 2, out
    assert int(calls.group(1)) == int(chunks.group(1)) + 1, out  # the chunks, then one combination
    assert "Summary of the conversation since you last wrote here (120 messages)" in out
