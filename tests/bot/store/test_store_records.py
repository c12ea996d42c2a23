"""Relationships, cache, logs and tasks.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.store import AgentStore, Database
from bot.types import now_ms

from .conftest import A, R, U, seed_agent, writer_busy


async def test_cache_entries_expire(store: AgentStore) -> None:
    await store.set_cache("old", 1, expires_at=now_ms() - 1)
    await store.set_cache("new", 2, expires_at=now_ms() + 60_000)
    assert await store.get_cache("old") is None
    assert await store.get_cache("new") == 2
    rows = await store.database.fetchall("SELECT key FROM cache")
    assert [r[0] for r in rows] == ["new"]  # the expired row was removed when read


async def test_closing_the_database_writes_queued_logs(db_path: Path) -> None:
    async with Database(db_path) as db:
        store = await seed_agent(db, A, users=(U,), rooms=(R,))
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")
    async with Database(db_path) as db:
        assert [e.body for e in await db.for_agent(A).get_logs()] == [{"n": 1}]


def _log_writers() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t.get_name().startswith("troupe:logs:")}


async def test_a_log_queued_right_before_close_is_written_and_no_task_is_left_behind(db_path: Path) -> None:
    db = Database(db_path)
    await db.open()
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    async with writer_busy(db):
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")  # waits for the writer
        assert len(_log_writers()) == 1
    store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")  # right before close
    await db.close()
    assert _log_writers() == set() and asyncio.all_tasks() == {asyncio.current_task()}
    async with Database(db_path) as again:
        assert sorted(e.body["n"] for e in await again.for_agent(A).get_logs()) == [1, 2]


@pytest.mark.parametrize("started", [False, True], ids=["before-it-ran", "while-waiting-for-the-writer"])
async def test_log_rows_a_cancelled_writer_never_wrote_are_reported(
    db: Database, caplog: pytest.LogCaptureFixture, started: bool
) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    async with writer_busy(db):
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")
        store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")
        (writer,) = _log_writers()
        if started:
            await asyncio.sleep(0.01)
        writer.cancel()  # as asyncio.run does to tasks left at exit
        await asyncio.gather(writer, return_exceptions=True)
    assert "2 queued log rows were not written" in caplog.text
    assert await store.get_logs() == []
    store.queue_log({"n": 3}, entity_id=A, room_id=R, type="x")  # the next row starts a new batch
    assert [e.body for e in await store.get_logs()] == [{"n": 3}]
