"""Vector search: exact cosine, filters, thresholds, dimensions, hygiene.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import math
import random
import struct

import pytest

from bot.kernel.errors import EmbeddingDimensionError
from bot.store import DIMENSION_MAP, Store

from ..conftest import BR, BU, R2, V, W, make_memory, mix, vec


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture
async def three(store: Store) -> tuple[str, str, str]:
    """e1 = vec(0), e2 at cosine 0.8 to it, e3 orthogonal; all 'facts' by U in R."""
    e1 = await store.create_memory(make_memory("e1", embedding=vec(0)), "facts")
    e2 = await store.create_memory(make_memory("e2", embedding=mix(0, 1, 0.8)), "facts")
    e3 = await store.create_memory(make_memory("e3", embedding=vec(2)), "facts")
    return e1, e2, e3


async def test_search_returns_best_first_with_similarity_and_embedding(store: Store, three: tuple[str, ...]) -> None:
    found = await store.search_memories(vec(0), "facts")
    assert [m.id for m in found] == list(three)
    assert [m.similarity for m in found] == pytest.approx([1.0, 0.8, 0.0], abs=1e-6)
    assert found[0].embedding == vec(0) and found[0].table == "facts"


async def test_search_threshold_and_count(store: Store, three: tuple[str, ...]) -> None:
    e1, e2, _ = three
    assert [m.id for m in await store.search_memories(vec(0), "facts", match_threshold=0.9)] == [e1]
    assert [m.id for m in await store.search_memories(vec(0), "facts", match_threshold=0.8 - 1e-6)] == [e1, e2]
    assert [m.id for m in await store.search_memories(vec(0), "facts", count=2)] == [e1, e2]
    assert len(await store.search_memories(vec(0), "facts", match_threshold=0)) == 3  # 0 means no threshold
    assert await store.search_memories(vec(0), "facts", count=0) == []


async def test_search_filters_by_room_world_entity_unique_and_table(store: Store) -> None:
    in_r = await store.create_memory(make_memory("r", embedding=vec(0), world_id=W), "facts")
    in_r2 = await store.create_memory(make_memory("r2", room=R2, embedding=vec(0)), "facts")
    by_v = await store.create_memory(make_memory("v", entity=V, embedding=mix(0, 1, 0.99)), "facts")
    dup = await store.create_memory(make_memory("dup", embedding=vec(0)), "facts")  # not unique
    msg = await store.create_memory(make_memory("msg", embedding=vec(0)), "messages")
    ids = lambda ms: sorted(m.id for m in ms)  # noqa: E731
    assert ids(await store.search_memories(vec(0), "facts", room_id=R2)) == [in_r2]
    assert ids(await store.search_memories(vec(0), "facts", world_id=W)) == [in_r]
    assert ids(await store.search_memories(vec(0), "facts", entity_id=V)) == [by_v]
    assert ids(await store.search_memories(vec(0), "facts", unique=True)) == sorted([in_r, in_r2, by_v])
    assert ids(await store.search_memories(vec(0), "facts")) == sorted([in_r, in_r2, by_v, dup])
    assert ids(await store.search_memories(vec(0), "messages")) == [msg]


async def test_search_never_returns_another_agents_memories(store: Store, store_b: Store) -> None:
    mine = await store.create_memory(make_memory("a", embedding=vec(0)), "facts")
    theirs = await store_b.create_memory(make_memory("b", room=BR, entity=BU, embedding=vec(0)), "facts")
    assert [m.id for m in await store.search_memories(vec(0), "facts")] == [mine]
    assert [m.id for m in await store_b.search_memories(vec(0), "facts")] == [theirs]


async def test_zero_vectors_are_stored_but_never_match(store: Store) -> None:
    await store.create_memory(make_memory("zero", embedding=[0.0] * 384), "facts")
    assert await store.search_memories(vec(0), "facts") == []
    assert await store.search_memories([0.0] * 384, "facts") == []


async def test_vectors_are_cleaned_before_storing_and_searching(store: Store) -> None:
    raw = [float("nan"), float("inf"), 0.1234567, -0.0000004, *([0.5] * 380)]
    memory_id = await store.create_memory(make_memory("dirty", embedding=raw), "facts")
    got = await store.get_memory(memory_id)
    assert got is not None and got.embedding is not None
    # Non-finite elements become 0.0; the rest come back as the float32 nearest to what was given.
    assert got.embedding[:4] == [0.0, 0.0, float32(0.1234567), float32(-0.0000004)]
    found = await store.search_memories([float("-inf"), *([0.5] * 383)], "facts")
    assert [m.id for m in found] == [memory_id]


async def test_stored_vectors_come_back_as_their_float32_values(store: Store) -> None:
    rng = random.Random(3)
    raw = [rng.uniform(-2, 2) for _ in range(384)]
    memory_id = await store.create_memory(make_memory("precise", embedding=raw), "facts")
    got = await store.get_memory(memory_id)
    assert got is not None and got.embedding == [float32(x) for x in raw]


def float32(x: float) -> float:
    """The float32 nearest to ``x``, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


async def test_wrong_length_vectors_raise_embedding_dimension_error(store: Store) -> None:
    with pytest.raises(EmbeddingDimensionError, match="has 3 dimensions but the active embedding dimension is 384"):
        await store.create_memory(make_memory("x", embedding=[1.0, 2.0, 3.0]), "facts")
    with pytest.raises(EmbeddingDimensionError, match="ensure_embedding_dimension"):
        await store.search_memories([1.0] * 1536, "facts")
    assert isinstance(EmbeddingDimensionError("x"), ValueError)


async def test_lengths_no_store_takes_raise_value_error(store: Store) -> None:
    for dim in (0, -1, 16001):
        with pytest.raises(ValueError, match=rf"Unsupported embedding dimension {dim}: use a length from 1 to 16000"):
            await store.ensure_embedding_dimension(dim)
    assert sorted(DIMENSION_MAP) == [384, 512, 768, 1024, 1536, 3072]


async def test_a_length_without_a_column_of_its_own_is_stored_and_searched_exactly(store: Store) -> None:
    """A 576-length model (SmolLM2's): stored, read back, searched, deduplicated like any other."""
    await store.ensure_embedding_dimension(576)
    assert await store.get_embedding_dimension() == 576
    e1 = await store.create_memory(make_memory("e1", embedding=vec(0, 576)), "facts")
    e2 = await store.create_memory(make_memory("e2", embedding=mix(0, 1, 0.8, 576)), "facts")
    e3 = await store.create_memory(make_memory("e3", embedding=vec(575, 576)), "facts")
    found = await store.search_memories(vec(0, 576), "facts")
    assert [m.id for m in found] == [e1, e2, e3]
    assert [m.similarity for m in found] == pytest.approx([1.0, 0.8, 0.0], abs=1e-6)
    assert found[0].embedding == vec(0, 576)
    got = await store.get_memory(e3)
    assert got is not None and got.embedding == vec(575, 576)
    dup = await store.create_memory(make_memory("again", embedding=vec(0, 576)), "facts")
    assert [m.id for m in await store.search_memories(vec(0, 576), "facts", unique=True)] == [e1, e2, e3]
    assert await store.update_memory(dup, embedding=vec(1, 576))
    assert [m.id for m in await store.search_memories(vec(1, 576), "facts", count=1)] == [dup]
    with pytest.raises(EmbeddingDimensionError, match="has 384 dimensions but the active embedding dimension is 576"):
        await store.create_memory(make_memory("x", embedding=vec(0)), "facts")


async def test_two_lengths_without_a_column_hide_each_others_vectors(store: Store) -> None:
    await store.ensure_embedding_dimension(576)
    old = await store.create_memory(make_memory("old", embedding=vec(0, 576)), "facts")
    await store.ensure_embedding_dimension(640)
    new = await store.create_memory(make_memory("new", embedding=vec(0, 640)), "facts")
    assert [m.id for m in await store.search_memories(vec(0, 640), "facts")] == [new]
    listed = {m.id: m.embedding for m in await store.get_memories(table="facts")}
    assert listed == {old: None, new: vec(0, 640)}
    await store.ensure_embedding_dimension(576)
    assert [m.id for m in await store.search_memories(vec(0, 576), "facts")] == [old]


async def test_switching_dimension_hides_rows_of_the_other_dimension(store: Store) -> None:
    small = await store.create_memory(make_memory("small", embedding=vec(0)), "facts")
    await store.ensure_embedding_dimension(1536)
    assert await store.get_embedding_dimension() == 1536
    big = await store.create_memory(make_memory("big", embedding=vec(0, 1536)), "facts")
    assert [m.id for m in await store.search_memories(vec(0, 1536), "facts")] == [big]
    listed = {m.id: m.embedding for m in await store.get_memories(table="facts")}
    assert listed[small] is None and listed[big] == vec(0, 1536)
    with pytest.raises(EmbeddingDimensionError):
        await store.create_memory(make_memory("old size", embedding=vec(0)), "facts")
    await store.ensure_embedding_dimension(384)
    assert [m.id for m in await store.search_memories(vec(0), "facts")] == [small]
