"""``troupe store copy``: a SQLite troupe in PostgreSQL afterwards, every row, found alike."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.kernel.errors import EXIT_CONFIG, StoreError
from bot.kernel.tables import Column, ColumnType, Index, Table, TableValue
from bot.kernel.types import Relationship, RoomState, Task
from bot.store import Database, copy_store
from bot.store.postgres import PostgresDatabase

from ..conftest import BR, BU, R2, A, B, R, U, V, W, make_memory, seed_agent

DIM = 384


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIM)]


async def fill(path: Path) -> list[list[float]]:
    """A small troupe in SQLite: two agents, their people, rooms, messages with vectors, facts,
    room states, a relationship, cache, logs, a task, claims and the inbox. The vectors stored."""
    rng = random.Random(7)
    vectors = []
    async with Database(path) as db:
        a = await seed_agent(db, A, users=(U, V), rooms=(R, R2), world=W)
        b = await seed_agent(db, B, users=(BU,), rooms=(BR,))
        for store in (a, b):
            await store.ensure_embedding_dimension(DIM)
        for n in range(60):
            v = vector(rng)
            vectors.append(v)
            room = (R, R2)[n % 2]
            words = f"message number {n} about {'lighthouses' if n == 17 else 'the weather'}"
            await a.create_memory(make_memory(words, room=room, entity=(U, V)[n % 2], embedding=v), "messages")
        await a.create_memory(make_memory("U keeps bees", embedding=vector(rng)), "facts")
        await b.create_memory(make_memory("hello from b", room=BR, entity=BU, embedding=vector(rng)), "messages")
        await a.set_participant_state(R, A, RoomState.FOLLOWED)
        assert await a.create_relationship(U, V, tags=["friend"])
        await a.set_cache("cadence", {"last": "m-1", "failures": 0})
        await a.log({"prompt": "p"}, U, R, "useModel")
        await a.create_task(Task(id="t-1", name="remind", room_id=R, tags=["queue"]))
        await a.claim_message("m-claimed", R, 1000)
        await a.inbox_put("telegram", "42", '{"update_id": 42}')
    return vectors


async def test_a_copied_troupe_has_every_row_and_answers_as_it_did(tmp_path: Path, postgres_url: str) -> None:
    path = tmp_path / "troupe.db"
    vectors = await fill(path)
    report = await copy_store(path, postgres_url)
    assert report.matches, (report.source, report.target)
    assert report.source["memories"] == 62 and report.source["embeddings"] == 62 and report.source["agents"] == 2

    async with Database(path) as sqlite, PostgresDatabase(postgres_url) as postgres:
        before, after = sqlite.for_agent(A), postgres.for_agent(A)
        for probe in (vectors[3], vectors[40]):
            old = [m.id for m in await before.search_memories(probe, "messages", count=5)]
            new = [m.id for m in await after.search_memories(probe, "messages", count=5)]
            assert new == old
        hits = await after.search_memories_by_text("lighthouses", "messages")
        assert [m.content.text for m in hits] == ["message number 17 about lighthouses"]
        assert [m.id for m in await after.get_memories(table="messages", room_id=R, count=10)] == [
            m.id for m in await before.get_memories(table="messages", room_id=R, count=10)
        ]
        assert await after.get_participant_state(R, A) is RoomState.FOLLOWED
        person = await before.get_entity(U)
        assert person is not None and [e.id for e in await after.get_entities_by_names(person.names[:1])] == [U]
        relationship = await after.get_relationship(U, V)
        assert isinstance(relationship, Relationship) and relationship.tags == ["friend"]
        assert await after.get_cache("cadence") == {"last": "m-1", "failures": 0}
        assert [t.name for t in await after.get_tasks(tags=["queue"])] == ["remind"]
        assert [(e, p) for e, p, _ in await after.inbox_pending("telegram")] == [("42", '{"update_id": 42}')]
        assert [m for m, _, _ in await after.unfinished_messages()] == ["m-claimed"]
        assert [m.content.text for m in await postgres.for_agent(B).get_memories(table="messages", room_id=BR)] == [
            "hello from b"
        ]
        # New memories go after the copied ones.
        fresh = await after.create_memory(make_memory("after the move"), "messages")
        assert (await after.get_memories(table="messages", room_id=R, count=1))[0].id == fresh


async def test_vectors_of_a_length_without_a_sqlite_column_of_its_own_are_copied(
    tmp_path: Path, postgres_url: str
) -> None:
    path = tmp_path / "troupe.db"
    rng = random.Random(5)
    vectors = [[rng.uniform(-1, 1) for _ in range(576)] for _ in range(4)]
    async with Database(path) as db:
        a = await seed_agent(db, A, users=(U,), rooms=(R,))
        await a.ensure_embedding_dimension(576)
        for n, v in enumerate(vectors):
            await a.create_memory(make_memory(f"fact {n}", embedding=v), "facts")
    report = await copy_store(path, postgres_url)
    assert report.matches and report.target["embeddings"] == 4
    async with Database(path) as sqlite, PostgresDatabase(postgres_url) as postgres:
        before, after = sqlite.for_agent(A), postgres.for_agent(A)
        assert await after.get_embedding_dimension() == 576
        old = [(m.id, m.embedding) for m in await before.search_memories(vectors[2], "facts")]
        new = [(m.id, m.embedding) for m in await after.search_memories(vectors[2], "facts")]
        assert new == old and len(new) == 4


def test_the_command_copies_once_and_refuses_a_database_that_holds_a_troupe(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "troupe.db"
    asyncio.run(fill(path))
    assert main(["store", "copy", "--from", str(path), "--to", postgres_url]) == 0
    assert "every table counted alike" in capsys.readouterr().out
    assert main(["store", "copy", "--from", str(path), "--to", postgres_url]) == EXIT_CONFIG
    error = capsys.readouterr().err
    assert "nothing was copied" in error and "already holds a troupe (2 agents): copy into an empty database" in error


async def test_plugins_tables_are_made_again_and_copied_with_their_rows(tmp_path: Path, postgres_url: str) -> None:
    notes = Table(
        "notes",
        columns=(
            Column("id", ColumnType.INTEGER, primary_key=True),
            Column("order", ColumnType.TEXT, required=True, default="none"),
            Column("data", ColumnType.JSON),
            Column("pinned", ColumnType.BOOLEAN),
            Column("raw", ColumnType.BYTES),
            Column("old", ColumnType.TEXT),
        ),
        indexes=(Index(("order",), unique=True),),
    )
    later = Table("notes", columns=notes.columns[:5], indexes=notes.indexes)  # "old" no longer declared
    path = tmp_path / "troupe.db"
    async with Database(path) as db:
        a = await seed_agent(db, A, users=(U,), rooms=(R,))
        await a.ensure_plugin_tables("@company/notes", [notes])
        rows: list[dict[str, TableValue]] = [
            {"id": 1, "order": "a", "data": {"k": [1, None]}, "pinned": True, "raw": b"\x00\x01", "old": "kept"},
            {"id": 2, "order": "b", "data": None, "pinned": False, "raw": None, "old": None},
        ]
        for row in rows:
            await a.plugin_table("@company/notes", notes).insert(row)
        assert (await a.ensure_plugin_tables("@company/notes", [later])).warnings  # "old" stays, named
    report = await copy_store(path, postgres_url)
    assert report.matches and report.source["company_notes__notes"] == 2
    async with PostgresDatabase(postgres_url) as postgres:
        after = postgres.for_agent(A)
        assert not (await after.ensure_plugin_tables("@company/notes", [notes])).created
        assert await after.plugin_table("@company/notes", notes).select(order_by=("id",)) == rows
        with pytest.raises(StoreError):  # the unique index came along, per agent
            await after.plugin_table("@company/notes", notes).insert({"id": 3, "order": "a"})
