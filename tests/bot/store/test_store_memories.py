"""Memories: create, read, filter, dedup, update, delete.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

import pytest

from bot.kernel.content import MemoryMetadata, MemoryType
from bot.kernel.errors import EmbeddingDimensionError, StoreError
from bot.store import AgentStore, Database

from .conftest import R, make_memory, vec
from .contract.test_memories import batch_with_repeats


async def _count(db: Database, table: str) -> int:
    row = await db.fetchone(f"SELECT count(*) FROM {table}")
    assert row is not None
    return int(row[0])


async def test_create_memory_twice_with_one_id_keeps_one_row_and_one_embedding(db: Database, store: AgentStore) -> None:
    first = await store.create_memory(make_memory("one", id="dup", embedding=vec(1)), "messages")
    second = await store.create_memory(make_memory("two", id="dup", embedding=vec(2)), "messages")
    assert first == second == "dup"
    assert await _count(db, "memories") == 1 and await _count(db, "embeddings") == 1
    got = await store.get_memory("dup")
    assert got is not None and got.content.text == "one"


async def test_update_memory_upserts_the_embedding(db: Database, store: AgentStore) -> None:
    memory_id = await store.create_memory(make_memory("x"), "messages")
    assert await store.update_memory(memory_id, embedding=vec(4)) is True
    assert await store.update_memory(memory_id, embedding=vec(5)) is True
    assert await _count(db, "embeddings") == 1
    got = await store.get_memory(memory_id)
    assert got is not None and got.embedding == vec(5)
    with pytest.raises(EmbeddingDimensionError):
        await store.update_memory(memory_id, embedding=[1.0, 2.0])


async def test_delete_memory_removes_its_fragments_and_their_embeddings(db: Database, store: AgentStore) -> None:
    doc = await store.create_memory(
        make_memory("doc", id="D", embedding=vec(0), metadata=MemoryMetadata(type=MemoryType.DOCUMENT, timestamp=1)),
        "documents",
    )
    for n in (1, 2):
        await store.create_memory(
            make_memory(
                f"part {n}",
                id=f"F{n}",
                embedding=vec(n),
                metadata=MemoryMetadata(type=MemoryType.FRAGMENT, document_id="D", position=n),
            ),
            "fragments",
        )
    keep = await store.create_memory(make_memory("unrelated", embedding=vec(7)), "messages")
    assert await store.delete_memory(doc) is True
    assert await store.get_memories_by_ids(["D", "F1", "F2"]) == []
    assert await _count(db, "embeddings") == 1
    assert await store.get_memory(keep) is not None
    assert await store.delete_memory(doc) is False


async def test_create_memories_writes_one_embedding_row_per_new_memory_with_a_vector(
    db: Database, store: AgentStore
) -> None:
    await store.create_memories(batch_with_repeats(), "facts")
    assert await _count(db, "memories") == 4 and await _count(db, "embeddings") == 3


async def test_create_memories_in_bulk_writes_all_or_nothing(db: Database, store: AgentStore) -> None:
    batch = [make_memory(f"m{n}", embedding=vec(n)) for n in range(100)]
    batch.append(make_memory("bad", metadata=MemoryMetadata(type=MemoryType.FRAGMENT)))  # violates a CHECK
    with pytest.raises(StoreError, match="CHECK constraint failed"):
        await store.create_memories(batch, "messages", unique=True)
    assert await _count(db, "memories") == 0 and await _count(db, "embeddings") == 0
    row = await db.fetchone("SELECT count(*) FROM memories_fts_docsize")
    assert row is not None and row[0] == 0


async def test_memories_read_back_with_their_own_empty_metadata_and_content(store: AgentStore) -> None:
    await store.create_memory(make_memory("one", id="m1", metadata=MemoryMetadata(), created_at=1), "messages")
    await store.create_memory(
        make_memory("two", id="m2", metadata=MemoryMetadata(entity_name="Sam"), created_at=2), "messages"
    )
    first, second = await store.get_memories_by_room_ids(table="messages", room_ids=[R])
    assert (first.metadata.to_json(), second.metadata.to_json()) == ({"entityName": "Sam"}, {})
    assert first.content.to_json() == {"text": "two", "source": "discord"}
    with pytest.raises(TypeError):  # no memory can change what another one shares with it
        second.metadata.extra["changed"] = True  # type: ignore[index]
    again = await store.get_memory("m1")
    assert again is not None and again.metadata.to_json() == {} and again.content.text == "one"
