"""Knowledge and compaction on PostgreSQL: what the contract does not pin but this backend must keep."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.errors import StoreError
from bot.store import KnowledgeDocument, KnowledgeSourceRecord, Store
from bot.store._knowledge import fragment_id
from bot.store.postgres import PostgresDatabase
from bot.types import Memory

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
    taken = await store.create_memory(Memory(A, R, {"text": "an older summary"}), "summaries")
    summary = Memory(A, R, {"text": "new summary"}, id=taken)
    with pytest.raises(StoreError, match="UNIQUE constraint failed"):
        await store.compact_memories(summary, "summaries", ids)
    assert len(await store.get_memories(table="messages")) == 2
    assert [m.content["text"] for m in await store.get_memories(table="summaries")] == ["an older summary"]
