"""BackgroundTasks: named, tracked, cancelled at close, a failure logged once."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import logging

import pytest

from bot.kernel import background
from bot.kernel.background import BackgroundTasks, next_round
from bot.kernel.logs import current_agent


async def test_a_task_is_named_after_its_owner_and_job_and_tracked_until_it_ends() -> None:
    tasks = BackgroundTasks("troupe:Ada", agent="Ada")
    release = asyncio.Event()
    task = tasks.start(release.wait(), "telegram:recovery")
    assert task.get_name() == "troupe:Ada:telegram:recovery"
    assert list(tasks) == [task] and len(tasks) == 1
    release.set()
    await task
    await asyncio.sleep(0)  # the done callback
    assert len(tasks) == 0


async def test_a_task_logs_as_its_agent() -> None:
    tasks = BackgroundTasks("troupe:Ada", agent="Ada")

    async def who() -> str | None:
        return current_agent.get()

    assert await tasks.start(who(), "who") == "Ada"
    assert current_agent.get() != "Ada"  # the caller's context is left as it was


async def test_close_cancels_every_task_in_the_order_they_unwind_and_waits_for_them() -> None:
    tasks = BackgroundTasks("troupe")
    calls: list[str] = []

    async def job(name: str) -> None:
        calls.append(f"{name} started")
        try:
            await asyncio.Event().wait()
        finally:
            calls.append(f"{name} cancelled")

    first, second = tasks.start(job("a"), "a"), tasks.start(job("b"), "b")
    await asyncio.sleep(0)
    await tasks.close()
    calls.append("closed")
    assert first.cancelled() and second.cancelled()
    assert calls[:2] == ["a started", "b started"] and calls[-1] == "closed"
    assert sorted(calls[2:4]) == ["a cancelled", "b cancelled"]
    assert tasks.closed and len(tasks) == 0


async def test_close_twice_and_concurrently_cancels_once() -> None:
    tasks = BackgroundTasks("troupe")
    cancelled: list[str] = []

    async def job() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("job")
            await asyncio.sleep(0.01)  # slow to unwind: a second close() must wait for it
            raise

    tasks.start(job(), "job")
    await asyncio.sleep(0)
    await asyncio.gather(tasks.close(), tasks.close())
    await tasks.close()
    assert cancelled == ["job"]


async def test_start_after_close_is_refused_and_the_coroutine_never_runs() -> None:
    tasks = BackgroundTasks("troupe:Ada", agent="Ada")
    await tasks.close()
    ran: list[str] = []

    async def job() -> None:
        ran.append("ran")

    coro = job()
    with pytest.raises(RuntimeError, match="cannot start troupe:Ada:late: its owner is closed"):
        tasks.start(coro, "late")
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED  # so no "never awaited" warning either
    await asyncio.sleep(0)
    assert ran == []


async def test_a_failing_task_is_logged_once_with_its_name_and_the_others_run_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = BackgroundTasks("troupe:Ada", agent="Ada")

    async def broken() -> None:
        raise ValueError("broken on purpose")

    release = asyncio.Event()
    other = tasks.start(release.wait(), "other")
    with caplog.at_level(logging.ERROR):
        failed = tasks.start(broken(), "broken")
        await asyncio.wait([failed])
        await asyncio.sleep(0)
        del failed
        gc.collect()  # asyncio would log an unretrieved exception now: it must not
        await asyncio.sleep(0)
    lines = [r for r in caplog.records if "broken on purpose" in str(r.exc_info and r.exc_info[1])]
    assert len(lines) == 1
    assert lines[0].getMessage() == "Ada: task troupe:Ada:broken failed"
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert not other.done()
    release.set()
    await tasks.close()


async def test_a_cancelled_task_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks("troupe")
    task = tasks.start(asyncio.Event().wait(), "wait")
    await asyncio.sleep(0)
    with caplog.at_level(logging.ERROR):
        task.cancel()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert not caplog.records and len(tasks) == 0


async def test_a_task_whose_cancellation_was_lost_is_cancelled_again_and_close_returns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(background, "_RECANCEL_S", 0.1)
    rounds = 0

    async def loop_losing_one_cancellation() -> None:
        # As a loop calling Python 3.11's asyncio.wait_for does when the awaited result is ready
        # as the cancellation comes: the CancelledError is lost and the loop goes round again.
        nonlocal rounds
        lost = False
        while True:
            rounds += 1
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if lost:
                    raise
                lost = True

    tasks = BackgroundTasks("troupe")
    tasks.start(loop_losing_one_cancellation(), "placement")
    await asyncio.sleep(0)
    async with asyncio.timeout(60):
        await tasks.close()
    assert rounds == 2 and len(tasks) == 0
    assert "task troupe:placement did not end 0.1 s after it was cancelled; cancelling it again" in caplog.text


async def test_a_loop_whose_cancellation_was_lost_in_a_round_ends_at_the_next_round() -> None:
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            with contextlib.suppress(asyncio.CancelledError):  # lost, as Python 3.11's asyncio.wait_for may lose it
                await asyncio.sleep(3600)
            await next_round(3600)

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    task.cancel()
    async with asyncio.timeout(60):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert rounds == 1
