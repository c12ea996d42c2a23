"""Retention and forgetting in the store: compaction is all-or-nothing, and forgetting a person,
a room or everything leaves nothing of it behind — not in any table (the scenarios: _forgetting.py),
the vectors, the keyword index, nor the bytes of the file.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import Memory
from bot.store import AgentStore, Database

from ._forgetting import forget_all_leaves_nothing, forget_entity_leaves_nothing, forget_room_leaves_nothing
from .conftest import A, R, U, make_memory, vec
from .contract.test_retention import SECRET_WORD


async def _count(db: Database, sql: str, *params: Any) -> int:
    row = await db.fetchone(sql, params)
    assert row is not None
    return int(row[0])


async def _scan(db: Database, needles: list[str]) -> list[str]:
    """Every place in the database (any table, any column, FTS shadow tables too) holding a needle."""
    hits = []
    tables = [r[0] for r in await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        for row in await db.fetchall(f'SELECT * FROM "{table}"'):
            for value in row:
                raw = value if isinstance(value, bytes) else str(value).encode()
                hits += [f"{table}: {needle}" for needle in needles if needle.encode() in raw]
    return hits


async def test_compact_memories_swaps_the_batch_for_a_summary_in_one_go(db: Database, store: AgentStore) -> None:
    ids = [
        await store.create_memory(make_memory(f"m{i}", created_at=1000 + i, embedding=vec(i)), "messages")
        for i in range(4)
    ]
    summary = Memory(
        entity_id=A,
        room_id=R,
        content=Content(text="They talked about walruses."),
        created_at=1002,
        embedding=vec(9),
        metadata=MemoryMetadata(entity_ids=(U,)),
    )
    assert await store.compact_memories(summary, "summaries", ids[:3]) == 3
    left = await store.get_memories(table="messages")
    assert [m.content.text for m in left] == ["m3"]
    [stored] = await store.get_memories(table="summaries")
    assert stored.content.text == "They talked about walruses." and stored.unique is True
    assert (await store.search_memories(vec(9), "summaries"))[0].id == stored.id
    assert (await store.search_memories_by_text("walruses", "summaries"))[0].id == stored.id
    assert await _count(db, "SELECT count(*) FROM embeddings") == 2  # m3's and the summary's


async def test_forget_entity_leaves_nothing_behind(
    db: Database, db_path: Path, store: AgentStore, store_b: AgentStore
) -> None:
    await forget_entity_leaves_nothing(db, store, store_b, lambda needles: _scan(db, needles))
    # The keyword index only knows rows that exist, and every vector belongs to one.
    assert await _count(db, "SELECT count(*) FROM memories_fts") == await _count(db, "SELECT count(*) FROM memories")
    assert (
        await _count(
            db, "SELECT count(*) FROM embeddings e LEFT JOIN memories m ON m.id = e.memory_id WHERE m.id IS NULL"
        )
        == 0
    )

    # Nothing of it in the file's bytes either, once the write-ahead log is checkpointed.
    await store_b.forget_all()
    assert await db.checkpoint() is True
    raw = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.name.startswith(db_path.name))
    assert SECRET_WORD.encode() not in raw and b"sam@shire.test" not in raw


async def test_forget_room_leaves_no_row_or_text_of_the_room(db: Database, store: AgentStore) -> None:
    await forget_room_leaves_nothing(store, lambda needles: _scan(db, needles))


async def test_forget_all_leaves_no_row_or_text_of_what_it_removed(
    db: Database, store: AgentStore, store_b: AgentStore
) -> None:
    await forget_all_leaves_nothing(db, store, store_b, lambda needles: _scan(db, needles))
