"""Knowledge and compaction on PostgreSQL: what the contract does not pin but this backend must keep.

Vectors of several lengths per shared fragment, and writes that check a row and then act on it
while another daemon deletes it: they wait for that daemon and then find nothing, instead of
replacing half a batch or failing on a foreign key (SQLite has one writer; PostgreSQL does not).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import StoreError
from bot.kernel.types import Memory
from bot.store import KnowledgeDocument, KnowledgeSourceRecord, Store
from bot.store._knowledge import fragment_id
from bot.store.postgres import PostgresDatabase

from ..conftest import A, B, R, U, make_memory, seed_agent, vec


@pytest.fixture
async def pg(postgres_url: str) -> AsyncIterator[PostgresDatabase]:
    async with PostgresDatabase(postgres_url) as db:
        yield db


async def test_a_shared_fragment_keeps_a_vector_per_length_for_agents_of_different_models(
    pg: PostgresDatabase,
) -> None:
    small, large = await seed_agent(pg, A, users=(), rooms=()), await seed_agent(pg, B, users=(), rooms=())
    document = KnowledgeDocument("s1", "rules.md", ["house rules"], {"source": "file"})
    await small.put_knowledge_document(document, KnowledgeSourceRecord("file:/rules.md", "s1", "h"), shared=True)
    fragment = fragment_id("s1", 0)
    assert await small.set_knowledge_vectors([(fragment, vec(1))]) == 1
    assert await large.set_knowledge_vectors([(fragment, vec(2, 768))]) == 1
    assert await small.knowledge_fragments_without_vectors(384, shared=True) == []
    assert await large.knowledge_fragments_without_vectors(768, shared=True) == []
    assert [m.similarity for m in await small.search_knowledge(vec(1))] == [1.0]
    assert [m.similarity for m in await large.search_knowledge(vec(2, 768))] == [1.0]
    assert await large.set_knowledge_vectors([(fragment, vec(3, 768))]) == 1  # replaces its own length only
    assert [m.similarity for m in await small.search_knowledge(vec(1))] == [1.0]


async def test_a_zero_query_vector_finds_no_knowledge_rather_than_everything(pg: PostgresDatabase) -> None:
    store = await seed_agent(pg, A, users=(), rooms=())
    document = KnowledgeDocument("d1", "doc.md", ["text"], {"source": "file"})
    await store.put_knowledge_document(document, KnowledgeSourceRecord("text:x", "d1", "h"))
    await store.set_knowledge_vectors([(fragment_id("d1", 0), vec(0))])
    assert await store.search_knowledge([0.0] * 384) == []


async def test_compaction_with_a_summary_id_already_stored_deletes_nothing(pg: PostgresDatabase) -> None:
    store: Store = await seed_agent(pg, A, users=(U,), rooms=(R,))
    ids = [await store.create_memory(make_memory(f"m{i}"), "messages", unique=False) for i in range(2)]
    taken = await store.create_memory(Memory(A, R, Content(text="an older summary")), "summaries")
    summary = Memory(A, R, Content(text="new summary"), id=taken)
    with pytest.raises(StoreError, match="UNIQUE constraint failed"):
        await store.compact_memories(summary, "summaries", ids)
    assert len(await store.get_memories(table="messages")) == 2
    assert [m.content.text for m in await store.get_memories(table="summaries")] == ["an older summary"]


async def _until_blocked(pg: PostgresDatabase) -> None:
    """A statement is waiting for the other transaction's row locks."""
    async with asyncio.timeout(60):
        while not await pg.fetchall("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
            await asyncio.sleep(0.02)


async def test_compaction_racing_a_forget_in_another_daemon_replaces_nothing(pg: PostgresDatabase) -> None:
    store: Store = await seed_agent(pg, A, users=(U,), rooms=(R,))
    ids = [await store.create_memory(make_memory(f"m{i}"), "messages", unique=False) for i in range(3)]
    summary = Memory(A, R, Content(text="summary of m0..m2"))
    async with pg.transaction() as other:  # another daemon deleting one of the batch, not committed yet
        await other.execute("DELETE FROM memories WHERE id = %s", (ids[1],))
        compaction = asyncio.create_task(store.compact_memories(summary, "summaries", ids))
        await _until_blocked(pg)
        assert not compaction.done()  # it waits for the other transaction's rows
    assert await asyncio.wait_for(compaction, 60) == 0
    assert await store.get_memories(table="summaries") == []
    assert len(await store.get_memories(table="messages")) == 2


async def test_a_vector_for_a_fragment_another_daemon_is_deleting_is_skipped(pg: PostgresDatabase) -> None:
    store = await seed_agent(pg, A, users=(), rooms=())
    document = KnowledgeDocument("d1", "doc.md", ["text"], {"source": "file"})
    await store.put_knowledge_document(document, KnowledgeSourceRecord("file:/a.md", "d1", "h"))
    async with pg.transaction() as other:  # `troupe memory forget --knowledge` elsewhere, not committed yet
        await other.execute("DELETE FROM memories WHERE agent_id = %s", (A,))
        storing = asyncio.create_task(store.set_knowledge_vectors([(fragment_id("d1", 0), vec(0))]))
        await _until_blocked(pg)
    assert await asyncio.wait_for(storing, 60) == 0


async def test_updating_a_memory_another_daemon_is_deleting_finds_none(pg: PostgresDatabase) -> None:
    store: Store = await seed_agent(pg, A, users=(U,), rooms=(R,))
    memory_id = await store.create_memory(make_memory("soon forgotten"), "messages")
    async with pg.transaction() as other:
        await other.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
        updating = asyncio.create_task(store.update_memory(memory_id, embedding=vec(1)))
        await _until_blocked(pg)
    assert await asyncio.wait_for(updating, 60) is False


async def test_a_document_or_summary_carrying_u0000_is_stored_with_a_replacement_character(
    pg: PostgresDatabase,
) -> None:
    store: Store = await seed_agent(pg, A, users=(U,), rooms=(R,))
    document = KnowledgeDocument("d1", "bin\x00.md", ["before\x00after"], {"source": "file", "title": "bin\x00.md"})
    await store.put_knowledge_document(document, KnowledgeSourceRecord("file:/bin.md", "d1", "h"))
    assert await store.get_knowledge_texts([fragment_id("d1", 0)]) == {fragment_id("d1", 0): "before\ufffdafter"}
    ids = [await store.create_memory(make_memory("m"), "messages", unique=False)]
    summary = Memory(A, R, Content(text="sum\x00mary"), metadata=MemoryMetadata.from_json({"note": "\x00"}))
    assert await store.compact_memories(summary, "summaries", ids) == 1
    [stored] = await store.get_memories(table="summaries")
    assert stored.content.text == "sum\ufffdmary" and stored.metadata.to_json() == {"note": "\ufffd"}
