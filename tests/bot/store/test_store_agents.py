"""Agents: create, read, deep-merged settings updates, cascading delete.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from bot.kernel.types import AgentRecord, Task
from bot.store import Database

from .conftest import A, B, R, U, make_memory, seed_agent, vec


async def test_create_agent_never_writes_secrets(db: Database) -> None:
    store = db.for_agent(A)
    await store.create_agent(
        AgentRecord(id=A, name="Ada", settings={"secrets": {"OPENAI_API_KEY": "sk-x"}, "model": "m"})
    )
    got = await store.get_agent()
    assert got is not None and got.settings == {"model": "m"}
    rows = await db.fetchall("SELECT settings FROM agents")
    assert "sk-x" not in rows[0][0]


async def test_delete_agent_removes_everything_it_owns_and_nothing_else(db: Database) -> None:
    store = await seed_agent(db, A, users=(U,), rooms=(R,))
    other = await seed_agent(db, B, users=(), rooms=())
    await store.create_memory(make_memory("bye", embedding=vec(1)), "messages")
    await store.set_cache("k", 1)
    await store.create_task(Task(name="t"))
    await store.log({"x": 1}, entity_id=A, room_id=R, type="action")
    await store.ensure_embedding_dimension(768)

    assert await store.delete_agent() is True
    for table in ("entities", "rooms", "participants", "memories", "embeddings", "cache", "tasks", "logs"):
        rows = await db.fetchall(f"SELECT count(*) FROM {table}")
        remaining = rows[0][0]
        expected = 1 if table == "entities" else 0  # agent B's own entity
        assert remaining == expected, table
    row = await db.fetchone("SELECT count(*) FROM memories_fts_docsize")
    assert row is not None and row[0] == 0
    assert await store.get_embedding_dimension() == 384
    assert await store.delete_agent() is False
    assert await other.get_agent() is not None
