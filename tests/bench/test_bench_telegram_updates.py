"""The updates benchmark runs: both modes take every message and answer it (a small run)."""

from __future__ import annotations

import pytest

from tests.bench.bench_telegram_updates import one_round


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_each_mode_answers_every_message(mode: str) -> None:
    assert await one_round(mode, messages=12, people=4) > 0
