"""The contextual-embeddings benchmark (tests/bench/bench_knowledge_context.py) ingests through the
real openai plugin: one context call per chunk when on, none when off, and nothing at all at a
second start with nothing changed."""

from __future__ import annotations

import argparse
import re

import pytest

from tests.bench import bench_knowledge_context


async def test_the_benchmark_counts_one_context_a_chunk_when_on_and_nothing_again_at_a_second_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = str(bench_knowledge_context.CORPUS)
    await bench_knowledge_context.main(argparse.Namespace(folder=folder, latency=0.0, concurrency=2))
    out = capsys.readouterr().out
    runs = re.findall(
        r"CTX_KNOWLEDGE_ENABLED=(\w+): (\d+) chunks\n.*?(\d+) chat .*?\n.*?(\d+) chat .*?(\d+) embedding", out
    )
    assert [(on, int(chunks), int(first), int(second), int(again)) for on, chunks, first, second, again in runs] == [
        ("false", 9, 0, 0, 0),
        ("true", 9, 9, 0, 0),
    ], out
