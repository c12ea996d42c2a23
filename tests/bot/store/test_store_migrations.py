"""Schema migrations: fresh files, old files with rows, files from a newer troupe, atomic steps."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from bot.kernel.errors import SchemaVersionError, StoreError
from bot.kernel.types import RoomState
from bot.store import SCHEMA_VERSION, SHARED_KNOWLEDGE_ID, Database, _migrations
from bot.store._connect import open_connection, sqlean
from bot.store._migrations import Migration, migrate

from .conftest import A, R, U, make_memory

CORE_TABLES = {
    "agents", "entities", "worlds", "rooms", "participants", "memories", "embeddings",
    "relationships", "components", "cache", "logs", "tasks", "meta",
}  # fmt: skip


def _schema(path: Path) -> list[tuple[str, str]]:
    conn = sqlean.connect(str(path))
    try:
        return sorted(conn.execute("SELECT type, name FROM sqlite_master").fetchall())
    finally:
        conn.close()


def _user_version(path: Path) -> int:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


async def test_fresh_file_gets_every_table_and_the_current_version(db_path: Path) -> None:
    async with Database(db_path) as db:
        assert db.schema_version == SCHEMA_VERSION >= 3
    names = {name for kind, name in _schema(db_path) if kind == "table"}
    assert names >= CORE_TABLES
    assert "memories_fts" in names
    assert "knowledge_sources" in names
    assert _user_version(db_path) == SCHEMA_VERSION


async def test_reopening_a_current_file_changes_nothing(db_path: Path) -> None:
    async with Database(db_path):
        pass
    before = _schema(db_path)
    async with Database(db_path) as db:
        assert db.schema_version == SCHEMA_VERSION
    assert _schema(db_path) == before


async def test_version_1_file_with_rows_is_migrated_and_its_text_backfilled(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = await open_connection(str(db_path))
    try:
        assert await migrate(conn, str(db_path), target=1) == 1
        await conn.execute("INSERT INTO agents (id, name) VALUES (?, 'old')", (A,))
        await conn.execute("INSERT INTO entities (id, agent_id) VALUES (?, ?)", (U, A))
        await conn.execute("INSERT INTO rooms (id, agent_id, source, type) VALUES (?, ?, 'discord', 'GROUP')", (R, A))
        for n, text in enumerate(["the blue car is fast", "a red boat", "blue skies"]):
            await conn.execute(
                "INSERT INTO memories (id, type, content, entity_id, agent_id, room_id, created_at) "
                "VALUES (?, 'messages', ?, ?, ?, ?, ?)",
                (f"m{n}", json.dumps({"text": text}), U, A, R, 1000 + n),
            )
    finally:
        await conn.close()
    assert _user_version(db_path) == 1

    async with Database(db_path) as db:
        assert db.schema_version == SCHEMA_VERSION
        store = db.for_agent(A)
        hits = await store.search_memories_by_text("blue", "messages")
        assert sorted(str(m.id) for m in hits) == ["m0", "m2"]
        # New rows are indexed by the triggers of migration 2.
        await store.create_memory(make_memory("blue whale"), "messages")
        assert len(await store.search_memories_by_text("blue", "messages")) == 3
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
    assert _user_version(db_path) == SCHEMA_VERSION


async def test_version_4_shared_knowledge_is_cleared_for_the_agents_to_store_again(db_path: Path) -> None:
    # Troupe before version 5 stored KNOWLEDGE_PATH from the environment in the shared scope, where
    # every agent saw it and nothing could remove it; which shared items came from it is not recorded.
    db_path.parent.mkdir(parents=True)
    conn = await open_connection(str(db_path))
    try:
        assert await migrate(conn, str(db_path), target=4) == 4
        for agent, name in ((A, "old"), (SHARED_KNOWLEDGE_ID, "Shared knowledge")):
            await conn.execute("INSERT INTO agents (id, name) VALUES (?, ?)", (agent, name))
        for scope, doc in ((SHARED_KNOWLEDGE_ID, "shared-doc"), (A, "own-doc")):
            await conn.execute(
                "INSERT INTO memories (id, type, content, agent_id) VALUES (?, 'documents', ?, ?)",
                (doc, json.dumps({"text": doc}), scope),
            )
            await conn.execute(
                "INSERT INTO memories (id, type, content, agent_id, metadata) VALUES (?, 'knowledge', ?, ?, ?)",
                (
                    f"{doc}-0",
                    json.dumps({"text": f"bees {doc}"}),
                    scope,
                    json.dumps({"documentId": doc, "position": 0}),
                ),
            )
            await conn.execute(
                "INSERT INTO knowledge_sources (scope_id, owner_id, source, document_id, content_hash) "
                "VALUES (?, ?, ?, ?, 'h')",
                (scope, A, f"file:/{doc}.md", doc),
            )
    finally:
        await conn.close()

    async with Database(db_path) as db:
        assert db.schema_version == SCHEMA_VERSION >= 5
        store = db.for_agent(A)
        assert [m.id for m in await store.search_knowledge_by_text("bees")] == ["own-doc-0"]
        assert list(await store.get_knowledge_sources()) == ["file:/own-doc.md"]
        assert await store.get_knowledge_sources(shared=True) == {}
        assert await db.for_agent(SHARED_KNOWLEDGE_ID).count_memories_by_table() == {}
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")


async def test_file_from_a_newer_troupe_is_refused_with_what_to_do(db_path: Path) -> None:
    async with Database(db_path):
        pass
    conn = sqlean.connect(str(db_path))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    db = Database(db_path)
    expected = (
        rf"{re.escape(str(db_path))} has schema version {SCHEMA_VERSION + 5}, "
        rf"but this troupe only knows versions up to {SCHEMA_VERSION}.*Upgrade troupe"
    )
    with pytest.raises(SchemaVersionError, match=expected):
        await db.open()
    assert not db.is_open
    assert _user_version(db_path) == SCHEMA_VERSION + 5  # untouched


async def test_a_failing_migration_leaves_the_file_at_the_previous_version(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Database(db_path):
        pass
    broken = Migration(SCHEMA_VERSION + 1, "broken", ("CREATE TABLE half_done (x)", "SELECT * FROM no_such_table"))
    monkeypatch.setattr(_migrations, "MIGRATIONS", (*_migrations.MIGRATIONS, broken))
    monkeypatch.setattr(_migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="no such table"):
        async with Database(db_path):
            pass
    assert _user_version(db_path) == SCHEMA_VERSION
    assert ("table", "half_done") not in _schema(db_path)


async def test_two_databases_opening_a_fresh_file_at_once_both_succeed(db_path: Path) -> None:
    first, second = Database(db_path), Database(db_path)
    await asyncio.gather(first.open(), second.open())
    assert first.schema_version == second.schema_version == SCHEMA_VERSION
    await asyncio.gather(first.close(), second.close())


async def test_version_5_participants_keep_their_rows_and_states_and_may_be_stopped(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = await open_connection(str(db_path))
    try:
        assert await migrate(conn, str(db_path), target=5) == 5
        await conn.execute("INSERT INTO agents (id, name) VALUES (?, 'old')", (A,))
        await conn.execute("INSERT INTO entities (id, agent_id) VALUES (?, ?)", (U, A))
        await conn.execute("INSERT INTO rooms (id, agent_id, source, type) VALUES (?, ?, 'discord', 'GROUP')", (R, A))
        await conn.execute(
            "INSERT INTO participants (id, entity_id, room_id, agent_id, room_state) VALUES ('p1', ?, ?, ?, 'MUTED')",
            (U, R, A),
        )
    finally:
        await conn.close()

    async with Database(db_path) as db:
        store = db.for_agent(A)
        assert await store.get_participant_state(R, U) is RoomState.MUTED
        assert await store.set_participant_state(R, U, RoomState.STOPPED) is True
        assert await store.get_participant_state(R, U) is RoomState.STOPPED
        assert await store.get_rooms_for_participant(U) == [R]
    assert _user_version(db_path) == SCHEMA_VERSION


async def test_version_6_keyword_index_is_built_again_with_every_accent_folded(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = await open_connection(str(db_path))
    try:
        assert await migrate(conn, str(db_path), target=6) == 6
        await conn.execute("INSERT INTO agents (id, name) VALUES (?, 'old')", (A,))
        for n, text in enumerate(["Η Αθήνα είναι όμορφη", "a café downtown"]):
            await conn.execute(
                "INSERT INTO memories (id, type, content, agent_id, created_at) VALUES (?, 'messages', ?, ?, ?)",
                (f"m{n}", json.dumps({"text": text}), A, 1000 + n),
            )
    finally:
        await conn.close()

    async with Database(db_path) as db:
        store = db.for_agent(A)
        assert [m.id for m in await store.search_memories_by_text("αθηνα", "messages")] == ["m0"]
        assert [m.id for m in await store.search_memories_by_text("cafe", "messages")] == ["m1"]
        await store.delete_memory("m0")  # the index forgets what it was given, folded
        assert await store.search_memories_by_text("Αθήνα", "messages") == []
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
    assert _user_version(db_path) == SCHEMA_VERSION
