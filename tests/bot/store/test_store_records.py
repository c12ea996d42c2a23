"""Relationships, cache, logs and tasks.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.kernel.errors import StoreError
from bot.kernel.types import now_ms
from bot.store import AgentStore, Database
from bot.store._connect import Connection, sqlean
from bot.store._log_queue import LOG_DELAY

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


def _committers() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t.get_name().startswith("troupe:commit:")}


async def _logs_written(db: Database) -> list[int]:
    """The ``n`` of every log row in the file, read without flushing the queue."""
    rows = await db.fetchall("SELECT json_extract(body, '$.n') FROM logs ORDER BY created_at, rowid")
    return [r[0] for r in rows]


async def test_a_log_queued_right_before_close_is_written_and_no_task_is_left_behind(db_path: Path) -> None:
    db = Database(db_path)
    await db.open()
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    async with writer_busy(db):
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")  # waits for the writer
    store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")  # right before close
    await db.close()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    async with Database(db_path) as again:
        assert sorted(e.body["n"] for e in await again.for_agent(A).get_logs()) == [1, 2]


async def test_a_burst_of_log_rows_rides_along_with_the_next_write(
    db: Database, store: AgentStore, trips: list[str]
) -> None:
    trips.clear()
    for n in range(5):
        store.queue_log({"n": n}, entity_id=A, room_id=R, type="x")
    await store.set_cache("k", 1)
    assert trips == ["transact"]  # the write and the five rows: one transaction, one trip
    assert await _logs_written(db) == [0, 1, 2, 3, 4]


async def test_log_rows_no_write_takes_are_written_alone_within_the_delay(db: Database, store: AgentStore) -> None:
    store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")
    store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")
    await asyncio.sleep(LOG_DELAY * 4)
    assert await _logs_written(db) == [1, 2]
    assert _committers() == set()


@pytest.mark.parametrize("started", [False, True], ids=["before-it-ran", "while-waiting-for-the-writer"])
async def test_log_rows_survive_a_cancelled_committer(
    db: Database, caplog: pytest.LogCaptureFixture, started: bool
) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    async with writer_busy(db):
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")
        store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")
        while not _committers():  # the rows' deadline starts one
            await asyncio.sleep(LOG_DELAY / 5)
        (committer,) = _committers()
        if started:
            await asyncio.sleep(0.01)
        committer.cancel()  # as asyncio.run does to tasks left at exit
        await asyncio.gather(committer, return_exceptions=True)
    await asyncio.sleep(LOG_DELAY * 4)  # the deadline comes back for them
    assert await _logs_written(db) == [1, 2]
    assert "not written" not in caplog.text
    assert await db.write(lambda conn: 7) == 7  # the writer works on


async def test_log_rows_a_failed_batch_could_not_write_are_reported(
    db: Database, store: AgentStore, caplog: pytest.LogCaptureFixture
) -> None:
    def lost(conn: Connection) -> None:
        conn.execute("ROLLBACK")  # what SQLite does itself on a full disk or an I/O error
        raise sqlean.OperationalError("database or disk is full")

    store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")
    store.queue_log({"n": 2}, entity_id=A, room_id=R, type="x")
    with pytest.raises(StoreError, match="disk is full"):
        await db.write(lost)
    await asyncio.sleep(0)  # the report comes from the rows' future's callback
    assert "2 queued log rows were not written" in caplog.text
    assert "SQLite ended the transaction this write shared: database or disk is full" in caplog.text
    assert await _logs_written(db) == []
