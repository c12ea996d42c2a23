"""Knowledge in the store: documents with fragments, their sources, shared scope, vectors, search.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

from bot.store import (
    SHARED_KNOWLEDGE_ID,
    KnowledgeDocument,
    KnowledgeFragment,
    KnowledgeSourceRecord,
    Store,
    StoreBackend,
)
from bot.store._knowledge import fragment_id

from ..conftest import A, mix, vec


def doc(id: str, *fragments: str, title: str = "doc.md") -> KnowledgeDocument:
    return KnowledgeDocument(id, title, list(fragments), {"source": "file", "title": title})


def src(key: str, document_id: str, digest: str = "h") -> KnowledgeSourceRecord:
    return KnowledgeSourceRecord(key, document_id, digest, 10, 20)


async def test_a_document_is_stored_with_its_fragments_and_its_source(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "first part", "second part"), src("file:/a.md", "d1"))
    fragments = await store.get_memories(table="knowledge")
    assert sorted((f.metadata.position, f.content.text) for f in fragments) == [
        (0, "first part"),
        (1, "second part"),
    ]
    assert {f.metadata.document_id for f in fragments} == {"d1"}
    assert {f.id for f in fragments} == {fragment_id("d1", 0), fragment_id("d1", 1)}
    (document,) = await store.get_memories(table="documents")
    assert document.metadata.type == "document" and document.content.to_json() == {"text": "doc.md"}
    assert await store.get_knowledge_sources() == {"file:/a.md": src("file:/a.md", "d1")}
    assert await store.has_knowledge_document("d1") and not await store.has_knowledge_document("d1", shared=True)
    assert await store.count_knowledge() == (1, 2) and await store.has_knowledge()


async def test_storing_the_same_document_again_changes_nothing(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "text"), src("file:/a.md", "d1"))
    await store.put_knowledge_document(doc("d1", "text"), src("file:/b.md", "d1"))
    assert await store.count_knowledge() == (1, 1)
    assert sorted(await store.get_knowledge_sources()) == ["file:/a.md", "file:/b.md"]


async def test_forgetting_a_source_deletes_a_document_only_when_nothing_refers_to_it(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "shared text"), src("file:/a.md", "d1"))
    await store.put_knowledge_document(None, src("file:/b.md", "d1"))
    await store.set_knowledge_vectors([(fragment_id("d1", 0), vec(1))])
    assert await store.forget_knowledge_sources(["file:/a.md"]) == 0
    assert await store.count_knowledge() == (1, 1)
    assert await store.forget_knowledge_sources(["file:/b.md"]) == 1
    assert await store.count_knowledge() == (0, 0) and not await store.has_knowledge()
    assert await store.search_knowledge(vec(1)) == []


async def test_shared_documents_have_their_own_scope_and_owners(
    backend: StoreBackend, store: Store, store_b: Store
) -> None:
    await store.put_knowledge_document(doc("s1", "house rules"), src("file:/rules.md", "s1"), shared=True)
    await store_b.put_knowledge_document(None, src("file:/rules.md", "s1"), shared=True)
    shared = await backend.for_agent(SHARED_KNOWLEDGE_ID).get_agent()
    assert shared is not None and shared.name == "Shared knowledge" and shared.enabled is False
    for s in (store, store_b):
        assert [m.content.text for m in await s.search_knowledge_by_text("rules")] == ["house rules"]
        assert await s.count_knowledge() == (1, 1)
    assert await store.get_knowledge_sources() == {}  # shared claims are apart from own sources
    assert list(await store.get_knowledge_sources(shared=True)) == ["file:/rules.md"]
    assert await store.forget_knowledge_sources(["file:/rules.md"], shared=True) == 0  # B still lists it
    assert await store_b.forget_knowledge_sources(["file:/rules.md"], shared=True) == 1
    assert await store.count_knowledge() == (0, 0)


async def test_one_agents_own_knowledge_is_invisible_to_another(store: Store, store_b: Store) -> None:
    await store.put_knowledge_document(doc("d1", "secret recipe"), src("text:x", "d1"))
    await store.set_knowledge_vectors([(fragment_id("d1", 0), vec(3))])
    assert await store_b.search_knowledge_by_text("recipe") == []
    assert await store_b.search_knowledge(vec(3)) == []
    assert await store_b.set_knowledge_vectors([(fragment_id("d1", 0), vec(4))]) == 0  # nor writable
    assert [m.similarity for m in await store.search_knowledge(vec(3))] == [1.0]


async def test_vectors_go_in_the_column_of_their_length(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "one", "two"), src("text:x", "d1"))
    first, second = fragment_id("d1", 0), fragment_id("d1", 1)
    assert await store.knowledge_fragments_without_vectors(384) == [first, second]
    assert await store.knowledge_fragments_without_vectors(384, limit=1) == [first]
    assert await store.get_knowledge_texts([second, "gone"]) == {second: "two"}
    assert await store.set_knowledge_vectors([(first, vec(0)), (second, vec(0, 768))]) == 2
    assert await store.knowledge_fragments_without_vectors(384) == [second]
    assert await store.knowledge_fragments_without_vectors(768) == [first]
    assert [m.id for m in await store.search_knowledge(vec(0, 768))] == [second]
    assert await store.get_embedding_dimension() == 384  # the agent's active dimension is untouched


async def test_the_documents_of_fragments_are_read_whole_in_order(store: Store, store_b: Store) -> None:
    await store.put_knowledge_document(doc("d1", "one", "two", "three"), src("text:x", "d1"))
    await store.put_knowledge_document(doc("d2", "alone"), src("text:y", "d2"), shared=True)
    await store.put_knowledge_document(doc("d3", "elsewhere"), src("text:z", "d3"))
    asked = [fragment_id("d1", 2), fragment_id("d2", 0), "gone"]
    assert await store.get_knowledge_documents_of(asked) == [
        KnowledgeFragment(fragment_id("d1", i), "d1", i, text) for i, text in enumerate(("one", "two", "three"))
    ] + [KnowledgeFragment(fragment_id("d2", 0), "d2", 0, "alone")]
    assert await store_b.get_knowledge_documents_of(asked) == [
        KnowledgeFragment(fragment_id("d2", 0), "d2", 0, "alone")
    ]
    assert await store.get_knowledge_documents_of([]) == []


async def test_vectors_of_a_length_without_a_column_are_stored_and_searched(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "one", "two"), src("text:x", "d1"))
    first, second = fragment_id("d1", 0), fragment_id("d1", 1)
    assert await store.set_knowledge_vectors([(first, vec(0, 576)), (second, mix(0, 1, 0.5, 576))]) == 2
    assert await store.knowledge_fragments_without_vectors(576) == []
    assert await store.knowledge_fragments_without_vectors(640) == [first, second]
    hits = await store.search_knowledge(vec(0, 576), count=5)
    assert [m.id for m in hits] == [first, second]
    assert [round(m.similarity or 0, 3) for m in hits] == [1.0, 0.5]
    assert await store.search_knowledge(vec(0, 640)) == []


async def test_vector_search_ranks_and_applies_the_floor(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "near", "far", "middle"), src("text:x", "d1"))
    await store.set_knowledge_vectors(
        [
            (fragment_id("d1", 0), mix(0, 1, 0.9)),
            (fragment_id("d1", 1), mix(0, 1, 0.1)),
            (fragment_id("d1", 2), mix(0, 1, 0.5)),
        ]
    )
    hits = await store.search_knowledge(vec(0), count=5, match_threshold=0.3)
    assert [m.content.text for m in hits] == ["near", "middle"]
    assert [round(m.similarity or 0, 3) for m in hits] == [0.9, 0.5]
    assert [m.content.text for m in await store.search_knowledge(vec(0), count=1)] == ["near"]


async def test_a_vector_for_a_fragment_deleted_meanwhile_is_skipped(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "text"), src("file:/a.md", "d1"))
    await store.forget_knowledge_sources(["file:/a.md"])
    assert await store.set_knowledge_vectors([(fragment_id("d1", 0), vec(0))]) == 0


async def test_keyword_search_is_scoped_to_fragments(store: Store) -> None:
    await store.put_knowledge_document(doc("d1", "about lanterns", title="lanterns.md"), src("text:x", "d1"))
    found = await store.search_knowledge_by_text("lanterns")
    assert [m.table for m in found] == ["knowledge"]  # not the document row titled "lanterns.md"
    assert found[0].similarity is not None and found[0].similarity > 0
    assert await store.search_knowledge_by_text("?!") == []
    assert A in store.knowledge_scopes and SHARED_KNOWLEDGE_ID in store.knowledge_scopes


async def test_forgetting_an_agents_knowledge_takes_its_own_and_its_shared_claims(
    backend: StoreBackend, store: Store, store_b: Store
) -> None:
    await store.put_knowledge_document(doc("own", "own text"), src("file:/own.md", "own"))
    await store.set_knowledge_vectors([(fragment_id("own", 0), vec(1))])
    await store.put_knowledge_document(doc("only-a", "a's shared text"), src("file:/a.md", "only-a"), shared=True)
    await store.put_knowledge_document(doc("both", "both text"), src("file:/both.md", "both"), shared=True)
    await store_b.put_knowledge_document(None, src("file:/both.md", "both"), shared=True)
    await store_b.put_knowledge_document(doc("b-own", "b's text"), src("file:/b.md", "b-own"))

    counted = await store.forget_knowledge(dry_run=True)
    assert counted.memories == {"documents": 2, "knowledge": 2}
    assert counted.rows == {"embeddings": 1, "knowledge_sources": 3}
    assert await store.count_knowledge() == (3, 3)  # a dry run deletes nothing

    assert (await store.forget_knowledge()).memories == {"documents": 2, "knowledge": 2}
    assert await store.count_knowledge() == (1, 1)  # "both": B still lists it
    assert [m.content.text for m in await store.search_knowledge_by_text("text")] == ["both text"]
    assert sorted(m.content.text or "" for m in await store_b.search_knowledge_by_text("text")) == [
        "b's text",
        "both text",
    ]
    assert await store.get_knowledge_sources() == {} and await store.get_knowledge_sources(shared=True) == {}

    shared = backend.for_agent(SHARED_KNOWLEDGE_ID)
    assert (await shared.forget_knowledge()).memories == {"documents": 1, "knowledge": 1}
    assert await store_b.count_knowledge() == (1, 1)  # B's own stays
    assert await store_b.get_knowledge_sources(shared=True) == {}


async def test_sources_are_listed_with_their_title_scope_and_fragment_count(store: Store, store_b: Store) -> None:
    await store.put_knowledge_document(doc("d1", "one", "two", "three", title="guide.md"), src("file:/guide.md", "d1"))
    await store.put_knowledge_document(None, src("file:/copy.md", "d1"))  # the same content elsewhere
    await store.put_knowledge_document(doc("s1", "rules", title="rules.md"), src("file:/rules.md", "s1"), shared=True)
    await store_b.put_knowledge_document(doc("b1", "hers", title="hers.md"), src("file:/hers.md", "b1"))
    listed = await store.list_knowledge_sources()
    assert [(s.source, s.title, s.shared, s.fragments, s.size) for s in listed] == [
        ("file:/copy.md", "guide.md", False, 3, 10),
        ("file:/guide.md", "guide.md", False, 3, 10),
        ("file:/rules.md", "rules.md", True, 1, 10),
    ]
    assert all(s.updated_at > 0 for s in listed)
    # Another agent's claim on the shared document is its own, not listed here.
    await store_b.put_knowledge_document(None, src("file:/rules-b.md", "s1"), shared=True)
    assert [s.source for s in await store.list_knowledge_sources()] == [
        "file:/copy.md",
        "file:/guide.md",
        "file:/rules.md",
    ]
    assert await store.forget_knowledge_sources(["file:/guide.md", "file:/copy.md"]) == 1
    assert [s.source for s in await store.list_knowledge_sources()] == ["file:/rules.md"]
