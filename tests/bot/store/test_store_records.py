"""Relationships, cache, logs and tasks.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from pathlib import Path

from bot.store import AgentStore, Database
from bot.types import now_ms

from .conftest import A, R, U, seed_agent


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
