"""The Telegram press benchmark's measure runs (tests/bench/_press_telegram.py)."""

from __future__ import annotations

from tests.bench._press_telegram import press_to_ack


async def test_presses_are_acknowledged_long_before_a_slow_model_answers() -> None:
    delays = await press_to_ack(3, model_latency=2.0)
    assert len(delays) == 3 and all(0 <= d < 2.0 for d in delays), delays
