"""Knowledge in the store: documents with fragments, their sources, shared scope, vectors, search.

What only the SQLite backend shows (tables, SQL, files); the rest is in contract/."""

from __future__ import annotations

from bot.store import AgentStore

from .contract.test_knowledge import doc, src


async def test_a_source_whose_document_vanished_is_not_trusted(store: AgentStore) -> None:
    await store.put_knowledge_document(doc("d1", "text"), src("file:/a.md", "d1"))
    assert await store.delete_memory("d1")
    assert await store.get_knowledge_sources() == {}
    await store.forget_knowledge_sources([])
    rows = await store.database.fetchall("SELECT count(*) FROM knowledge_sources")
    assert rows[0][0] == 0
