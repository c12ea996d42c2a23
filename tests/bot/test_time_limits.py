"""Time limits that a wait for a busy server's turn does not use up."""

from __future__ import annotations

import asyncio

import pytest

from bot.kernel.time_limits import not_counted, time_left, time_limit


async def test_a_limit_runs_out_as_asyncio_timeout_does() -> None:
    never = asyncio.Event()
    with pytest.raises(TimeoutError):
        async with time_limit(0.01):
            await never.wait()


async def test_a_wait_not_counted_pauses_every_limit_around_it_and_gives_back_what_was_left() -> None:
    async with time_limit(60) as outer, time_limit(30) as inner:
        before = time_left()
        assert before is not None and 29 < before <= 30
        with not_counted():
            assert (outer.when(), inner.when()) == (None, None)
            assert time_left() is None
            await asyncio.sleep(0)  # the loop turns while waiting; nothing runs out
        after = time_left()
        assert after is not None and before - 1 < after <= before
        assert outer.when() is not None and outer.when() > inner.when()  # type: ignore[operator]


async def test_a_limit_stays_paused_until_the_last_of_several_waits_inside_it_ends() -> None:
    first_in, second_in = asyncio.Event(), asyncio.Event()
    first_go, second_go = asyncio.Event(), asyncio.Event()

    async def wait(entered: asyncio.Event, go: asyncio.Event) -> None:
        with not_counted():
            entered.set()
            await go.wait()

    async with time_limit(30) as limit:
        tasks = [asyncio.create_task(wait(first_in, first_go)), asyncio.create_task(wait(second_in, second_go))]
        await first_in.wait()
        await second_in.wait()
        first_go.set()
        await tasks[0]
        assert limit.when() is None  # the second still waits
        second_go.set()
        await tasks[1]
        assert limit.when() is not None


async def test_a_wait_that_outlives_its_limit_leaves_it_alone() -> None:
    entered, go = asyncio.Event(), asyncio.Event()

    async def wait() -> None:
        with not_counted():
            entered.set()
            await go.wait()

    async with time_limit(30):
        task = asyncio.create_task(wait())
        await entered.wait()
    go.set()
    await task  # no error: the limit it paused has ended
    assert time_left() is None


async def test_without_a_limit_nothing_is_left_or_paused() -> None:
    assert time_left() is None
    with not_counted():
        assert time_left() is None
    async with time_limit(None) as limit:
        with not_counted():
            assert limit.when() is None
        assert time_left() is None
