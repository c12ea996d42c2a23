"""The PostgreSQL store's cache and queued logs: what only this backend shows (the rest is in contract/)."""

from __future__ import annotations

import asyncio
import logging
from typing import cast

import psycopg
import pytest

from bot.kernel.types import now_ms
from bot.store import StoreBackend
from bot.store.postgres import PostgresDatabase
from bot.store.postgres._log_queue import LOG_DELAY

from ..conftest import R2, A, R, U, seed_agent


def _backend(db: PostgresDatabase) -> StoreBackend:
    """``db`` as the protocol sees it (a cast until every group of the store is in)."""
    return cast(StoreBackend, db)


async def _logs_written(db: PostgresDatabase) -> list[int]:
    """The ``n`` of every log row in the database, read without flushing the queue."""
    rows = await db.fetchall("SELECT (body->>'n')::int AS n FROM logs ORDER BY created_at, seq")
    return [r["n"] for r in rows]


async def test_cache_entries_expire_and_are_removed_when_read(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        store = await seed_agent(_backend(db), A, users=(), rooms=())
        await store.set_cache("old", 1, expires_at=now_ms() - 1)
        await store.set_cache("new", 2, expires_at=now_ms() + 60_000)
        assert await store.get_cache("old") is None
        assert await store.get_cache("new") == 2
        assert [r["key"] for r in await db.fetchall("SELECT key FROM cache")] == ["new"]


async def test_queued_logs_are_written_together_within_the_delay_without_a_read(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        store = await seed_agent(_backend(db), A, users=(U,), rooms=(R,))
        for n in range(5):
            store.queue_log({"n": n}, entity_id=U, room_id=R, type="useModel:TEXT_SMALL")
        assert await _logs_written(db) == []  # still queued
        await asyncio.sleep(LOG_DELAY * 6)
        assert await _logs_written(db) == [0, 1, 2, 3, 4]


async def test_closing_the_database_writes_every_queued_log_and_leaves_no_task(postgres_url: str) -> None:
    db = PostgresDatabase(postgres_url)
    await db.open()
    store = await seed_agent(_backend(db), A, users=(U,), rooms=(R,))
    for n in range(3):
        store.queue_log({"n": n}, entity_id=U, room_id=R, type="x")
    await asyncio.sleep(LOG_DELAY * 1.5)  # a background flush may be under way: close waits for it
    store.queue_log({"n": 3}, entity_id=U, room_id=R, type="x")  # right before close
    await db.close()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    with pytest.raises(RuntimeError, match="cannot queue a log row: .* is not open"):
        store.queue_log({"n": 4}, entity_id=U, room_id=R, type="x")
    async with PostgresDatabase(postgres_url) as again:
        assert await _logs_written(again) == [0, 1, 2, 3]


async def test_a_queued_log_of_a_room_deleted_meanwhile_is_dropped_alone(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with PostgresDatabase(postgres_url) as db:
        store = await seed_agent(_backend(db), A, users=(U,), rooms=(R,))
        store.queue_log({"n": 1}, entity_id=U, room_id=R, type="x")
        store.queue_log({"n": 2}, entity_id=U, room_id="gone", type="x")
        store.queue_log({"n": 3}, entity_id=U, room_id=R, type="x")
        with caplog.at_level(logging.DEBUG, logger="bot.store.postgres._log_queue"):
            await db.log_queue.flush()
        assert await _logs_written(db) == [1, 3]
        assert "1 queued log rows dropped: their entity or room does not exist" in caplog.text


async def test_a_room_deleted_while_its_queued_logs_are_written_drops_only_its_rows(postgres_url: str) -> None:
    async with PostgresDatabase(postgres_url) as db:
        store = await seed_agent(_backend(db), A, users=(U,), rooms=(R, R2))
        async with await psycopg.AsyncConnection.connect(postgres_url) as other:
            # Another daemon deletes room R2 and has not committed yet: the batch sees the room,
            # then its foreign key check waits for that transaction and fails when it commits.
            await other.execute("DELETE FROM rooms WHERE id = %s", (R2,))
            for n, room in enumerate((R, R2, R)):
                store.queue_log({"n": n}, entity_id=U, room_id=room, type="x")
            flushing = asyncio.create_task(db.log_queue.flush())
            await asyncio.sleep(LOG_DELAY * 4)
            assert not flushing.done()  # waiting for the deletion
            await other.commit()
        await flushing
        assert await _logs_written(db) == [0, 2]
