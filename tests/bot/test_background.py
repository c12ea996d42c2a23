"""BackgroundTasks: named, tracked, cancelled at close, a failure logged once."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging

import pytest

from bot.background import BackgroundTasks
from bot.logs import current_agent


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
