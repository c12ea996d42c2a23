"""Retry delays: doubling from base, capped, jittered within [d/2, d], reset."""

from __future__ import annotations

import asyncio
import random

import pytest

from bot.kernel.backoff import Deadline, ExponentialBackoff


def test_delays_double_up_to_the_cap_with_jitter_in_the_upper_half() -> None:
    backoff = ExponentialBackoff(base=1.0, cap=10.0, rng=random.Random(7))
    delays = [backoff.delay() for _ in range(8)]
    ceilings = [1, 2, 4, 8, 10, 10, 10, 10]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True)), delays
    assert backoff.attempts == 8


def test_reset_starts_again_from_base() -> None:
    backoff = ExponentialBackoff(base=2.0, cap=60.0, rng=random.Random(1))
    for _ in range(5):
        backoff.delay()
    backoff.reset()
    assert backoff.attempts == 0 and 1.0 <= backoff.delay() <= 2.0


def test_a_long_outage_does_not_overflow() -> None:
    backoff = ExponentialBackoff(base=1.0, cap=30.0)
    backoff.attempts = 10_000
    assert 15.0 <= backoff.delay() <= 30.0


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="0 < base <= cap"):
        ExponentialBackoff(base=5.0, cap=1.0)


async def test_a_deadline_allows_waits_that_end_by_it() -> None:
    deadline = Deadline.after(0.2)
    assert deadline.seconds == 0.2 and 0.1 < deadline.remaining() <= 0.2
    assert deadline.allows(0.1) and not deadline.allows(0.3)
    await asyncio.sleep(0.25)
    assert deadline.remaining() < 0 and not deadline.allows(0)
