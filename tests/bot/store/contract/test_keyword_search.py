"""Keyword search over memory text: ranking, filters, hostile input.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.content import Content
from bot.store import Store, fts_query

from ..conftest import BR, BU, R2, V, W, make_memory

HOSTILE = [
    '"', '""', "'", "-", "--", "*", "a*", "-foo", "AND", "OR", "NOT", "and or not", "a AND", "OR b",
    "(", ")", "((", "(a OR b", "a) OR (b", "NEAR(a b)", "NEAR(", "col:val", "text:foo", "^start", "a + b",
    "{a b}", "[x]", "a\x00b", "💥 ✓", "   ", "", "\\", "%_", ";DROP TABLE memories;--", 'say "hi', "a" * 5000,
]  # fmt: skip


async def test_keyword_search_ranks_texts_with_more_query_words_first(store: Store) -> None:
    both = await store.create_memory(make_memory("I saw a blue car today"), "messages")
    car = await store.create_memory(make_memory("my car broke down again"), "messages")
    blue = await store.create_memory(make_memory("the sky is blue"), "messages")
    await store.create_memory(make_memory("nothing relevant here"), "messages")
    found = await store.search_memories_by_text("blue car", "messages")
    assert found[0].id == both
    assert {m.id for m in found} == {both, car, blue}
    assert all(m.similarity is not None and m.similarity > 0 for m in found)
    assert [m.similarity for m in found] == sorted((m.similarity for m in found), reverse=True)  # type: ignore[type-var]


async def test_keyword_search_matches_word_forms_and_ignores_case(store: Store) -> None:
    memory_id = await store.create_memory(make_memory("Dragons were RUNNING"), "messages")
    assert [m.id for m in await store.search_memories_by_text("dragon run", "messages")] == [memory_id]


async def test_keyword_search_filters_by_table_room_entity_world_unique_and_agent(store: Store, store_b: Store) -> None:
    base = await store.create_memory(make_memory("tea time", world_id=W), "messages")
    fact = await store.create_memory(make_memory("tea is good"), "facts")
    other_room = await store.create_memory(make_memory("tea party", room=R2), "messages")
    by_v = await store.create_memory(make_memory("tea please", entity=V), "messages")
    not_unique = await store.create_memory(make_memory("tea again", unique=False), "messages")
    await store_b.create_memory(make_memory("tea for b", room=BR, entity=BU), "messages")
    ids = lambda ms: sorted(m.id for m in ms)  # noqa: E731
    assert ids(await store.search_memories_by_text("tea", "messages")) == sorted([base, other_room, by_v, not_unique])
    assert ids(await store.search_memories_by_text("tea", "facts")) == [fact]
    assert ids(await store.search_memories_by_text("tea", "messages", room_id=R2)) == [other_room]
    assert ids(await store.search_memories_by_text("tea", "messages", entity_id=V)) == [by_v]
    assert ids(await store.search_memories_by_text("tea", "messages", world_id=W)) == [base]
    assert not_unique not in ids(await store.search_memories_by_text("tea", "messages", unique=True))
    assert len(await store.search_memories_by_text("tea", "messages", count=2)) == 2
    assert len(await store_b.search_memories_by_text("tea", "messages")) == 1


async def test_keyword_search_follows_updates_and_deletes(store: Store) -> None:
    memory_id = await store.create_memory(make_memory("pizza night"), "messages")
    await store.update_memory(memory_id, content=Content(text="sushi night"))
    assert await store.search_memories_by_text("pizza", "messages") == []
    assert [m.id for m in await store.search_memories_by_text("sushi", "messages")] == [memory_id]
    await store.delete_memory(memory_id)
    assert await store.search_memories_by_text("sushi night", "messages") == []


@pytest.mark.parametrize("query", HOSTILE)
async def test_keyword_search_never_raises_on_user_text(store: Store, query: str) -> None:
    await store.create_memory(make_memory('and or not "hi" NEAR a b foo start'), "messages")
    found = await store.search_memories_by_text(query, "messages")
    assert isinstance(found, list)


async def test_operator_words_are_searched_as_plain_words(store: Store) -> None:
    memory_id = await store.create_memory(make_memory("this and that"), "messages")
    assert [m.id for m in await store.search_memories_by_text("AND", "messages")] == [memory_id]
    assert await store.search_memories_by_text("-*()", "messages") == []


def test_fts_query_quotes_words_and_drops_syntax() -> None:
    assert fts_query('blue "car" -fast* (AND)') == '"blue" OR "car" OR "fast" OR "and"'
    assert fts_query("Blue blue BLUE") == '"blue"'
    assert fts_query("-*()\"'") is None
    many = fts_query(" ".join(f"w{n}" for n in range(100)))
    assert many is not None and many.count(" OR ") == 31


# Words as people write them: accents either way, letters beyond Latin, emoji against a word.
# Each backend folds diacritics and case the same way for what it stores and what it is asked.
WRITTEN = [
    ("Meet me at the café at noon", "café"),
    ("Meet me at the café at noon", "cafe"),
    ("Meet me at the cafe at noon", "café"),
    ("Meet me at the café at noon", "CAFÉ"),
    ("Die Straße ist lang", "Straße"),
    ("Die Straße ist lang", "straße"),
    ("a naïve plan", "naive"),
    ("a naive plan", "naïve"),
    ("Crème brûlée for dessert", "creme brulee"),
    ("Москва большая", "Москва"),
    ("Москва большая", "москва"),
    ("Η Αθήνα είναι όμορφη", "Αθήνα"),
    ("Η Αθήνα είναι όμορφη", "αθηνα"),
    ("我们去东京 tomorrow", "我们去东京"),
    ("東京タワー is tall", "東京タワー"),
    ("party🎉tonight at nine", "party"),
    ("party🎉tonight at nine", "tonight"),
    ("🍕café🍕 opens late", "cafe"),
]


@pytest.mark.parametrize(("text", "query"), WRITTEN)
async def test_keyword_search_finds_accented_and_non_latin_words(store: Store, text: str, query: str) -> None:
    memory_id = await store.create_memory(make_memory(text), "messages")
    await store.create_memory(make_memory("nothing to see here"), "messages")
    assert [m.id for m in await store.search_memories_by_text(query, "messages")] == [memory_id]
    # What `troupe memory search` asks: the same words, the same folding.
    assert [m.id for m in await store.search_all_memories_by_text(query)] == [memory_id]
