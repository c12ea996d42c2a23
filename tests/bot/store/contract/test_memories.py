"""Memories: create, read, filter, dedup, update, delete.

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.errors import StoreError
from bot.kernel.types import Memory
from bot.store import Store

from ..conftest import R2, A, B, R, U, V, W, make_memory, mix, vec


async def test_create_memory_round_trips_every_field(store: Store) -> None:
    memory = Memory(
        id="m-1",
        entity_id=U,
        agent_id=B,  # forced to the store's agent
        room_id=R,
        world_id=W,
        content=Content(text="héllo ✓", in_reply_to="x", actions=("REPLY",)),
        embedding=vec(3),
        created_at=1234,
        metadata=MemoryMetadata(type=MemoryType.MESSAGE, entity_name="Bob"),
    )
    assert await store.create_memory(memory, "messages") == "m-1"
    got = await store.get_memory("m-1")
    assert got is not None
    assert (got.id, got.entity_id, got.agent_id, got.room_id, got.world_id) == ("m-1", U, A, R, W)
    assert got.content == memory.content and got.metadata == memory.metadata
    assert (got.created_at, got.unique, got.table, got.similarity) == (1234, True, "messages", None)
    assert got.embedding == vec(3)


async def test_create_memory_generates_an_id_and_a_timestamp(store: Store) -> None:
    memory_id = await store.create_memory(make_memory(), "messages")
    got = await store.get_memory(memory_id)
    assert len(memory_id) == 36 and got is not None and got.created_at is not None and got.created_at > 1e12


async def test_get_memories_is_newest_first_with_count_offset_and_inclusive_range(store: Store) -> None:
    for t in (1000, 2000, 3000, 4000, 5000):
        await store.create_memory(make_memory(str(t), id=f"m{t}", created_at=t), "messages")
    ids = lambda ms: [m.id for m in ms]  # noqa: E731
    assert ids(await store.get_memories(table="messages", room_id=R, count=3)) == ["m5000", "m4000", "m3000"]
    assert ids(await store.get_memories(table="messages", room_id=R, offset=3)) == ["m2000", "m1000"]
    assert ids(await store.get_memories(table="messages", start=2000, end=4000)) == ["m4000", "m3000", "m2000"]
    assert await store.get_memories(table="facts") == []


async def test_get_memories_ties_on_time_come_back_last_written_first(store: Store) -> None:
    for n in range(3):
        await store.create_memory(make_memory(str(n), id=f"t{n}", created_at=7), "messages")
    assert [m.id for m in await store.get_memories(table="messages")] == ["t2", "t1", "t0"]


async def test_get_memories_filters_by_room_entity_world_and_unique(store: Store) -> None:
    await store.create_memory(make_memory("a", id="a", world_id=W), "messages")
    await store.create_memory(make_memory("b", id="b", room=R2, entity=V), "messages")
    await store.create_memory(make_memory("c", id="c", unique=False), "messages")
    ids = lambda ms: sorted(m.id for m in ms)  # noqa: E731
    assert ids(await store.get_memories(table="messages", room_id=R2)) == ["b"]
    assert ids(await store.get_memories(table="messages", entity_id=U)) == ["a", "c"]
    assert ids(await store.get_memories(table="messages", world_id=W)) == ["a"]
    assert ids(await store.get_memories(table="messages", unique=True)) == ["a", "b"]


async def test_get_memories_needs_a_table_and_a_non_negative_offset(store: Store) -> None:
    with pytest.raises(ValueError, match="table name is required"):
        await store.get_memories(table="")
    with pytest.raises(ValueError, match="offset must be >= 0"):
        await store.get_memories(table="messages", offset=-1)
    with pytest.raises(ValueError, match="count must be >= 0"):
        await store.get_memories(table="messages", count=-1)


async def test_memories_of_one_agent_are_invisible_to_another(store: Store, store_b: Store) -> None:
    memory_id = await store.create_memory(make_memory("secret", embedding=vec(0)), "messages")
    assert await store_b.get_memory(memory_id) is None
    assert await store_b.get_memories(table="messages", room_id=R) == []
    assert await store_b.get_memories_by_ids([memory_id]) == []
    assert await store_b.delete_memory(memory_id) is False
    assert await store_b.update_memory(memory_id, content=Content(text="x")) is False
    assert await store_b.delete_all_memories(R, "messages") == 0
    assert await store.get_memory(memory_id) is not None


async def test_memory_without_embedding_is_unique_listed_but_never_searched(store: Store) -> None:
    memory_id = await store.create_memory(make_memory("plain"), "messages")
    got = await store.get_memory(memory_id)
    assert got is not None and got.unique is True and got.embedding is None
    assert await store.search_memories(vec(0), "messages") == []


async def test_near_duplicates_from_the_same_author_room_and_table_are_not_unique(store: Store) -> None:
    m1 = await store.create_memory(make_memory("fact", embedding=vec(1)), "facts")
    m2 = await store.create_memory(make_memory("fact again", embedding=vec(1)), "facts")
    near = await store.create_memory(make_memory("close", embedding=mix(1, 2, 0.96)), "facts")
    far = await store.create_memory(make_memory("related", embedding=mix(1, 3, 0.9)), "facts")
    other_room = await store.create_memory(make_memory("fact", room=R2, embedding=vec(1)), "facts")
    other_author = await store.create_memory(make_memory("fact", entity=V, embedding=vec(1)), "facts")
    other_table = await store.create_memory(make_memory("fact", embedding=vec(1)), "messages")
    explicit = await store.create_memory(make_memory("fact", embedding=vec(1), unique=True), "facts")
    forced = await store.create_memory(make_memory("new", embedding=vec(9)), "facts", unique=False)
    unique = {
        m.id: m.unique
        for m in await store.get_memories_by_ids(
            [m1, m2, near, far, other_room, other_author, other_table, explicit, forced]
        )
    }
    assert unique == {
        m1: True, m2: False, near: False, far: True, other_room: True, other_author: True,
        other_table: True, explicit: True, forced: False,
    }  # fmt: skip
    assert await store.count_memories(R, "facts") == 4  # m1, far, other_author, explicit
    assert await store.count_memories(R, "facts", unique=False) == 7


async def test_count_memories_counts_one_room_and_table(store: Store) -> None:
    await store.create_memory(make_memory("a"), "messages")
    await store.create_memory(make_memory("b", room=R2), "messages")
    await store.create_memory(make_memory("c"), "facts")
    assert await store.count_memories(R, "messages") == 1
    with pytest.raises(ValueError, match="table name is required"):
        await store.count_memories(R, "")


async def test_update_memory_replaces_content_and_keeps_metadata(store: Store) -> None:
    memory_id = await store.create_memory(
        make_memory("the old words", metadata=MemoryMetadata.from_json({"type": "message", "k": 1})), "messages"
    )
    assert await store.update_memory(memory_id, content=Content(text="fresh words")) is True
    got = await store.get_memory(memory_id)
    assert (
        got is not None
        and got.content.to_json() == {"text": "fresh words"}
        and got.metadata.to_json() == {"type": "message", "k": 1}
    )
    assert await store.search_memories_by_text("old", "messages") == []
    assert [m.id for m in await store.search_memories_by_text("fresh", "messages")] == [memory_id]
    assert await store.update_memory(memory_id, metadata=MemoryMetadata(type=MemoryType.MESSAGE)) is True
    got = await store.get_memory(memory_id)
    assert (
        got is not None
        and got.metadata.to_json() == {"type": "message"}
        and got.content.to_json() == {"text": "fresh words"}
    )
    assert await store.update_memory("missing", content=Content(text="x")) is False


async def test_a_fragment_without_a_position_is_rejected(store: Store) -> None:
    with pytest.raises(StoreError, match="CHECK constraint failed"):
        await store.create_memory(
            make_memory("bad", metadata=MemoryMetadata(type=MemoryType.FRAGMENT, document_id="D")), "fragments"
        )
    with pytest.raises(StoreError, match="CHECK constraint failed"):
        await store.create_memory(make_memory("bad", metadata=MemoryMetadata(type=MemoryType.DOCUMENT)), "documents")


async def test_delete_all_memories_empties_one_table_of_one_room(store: Store) -> None:
    await store.create_memory(make_memory("m", id="m", embedding=vec(1)), "messages")
    await store.create_memory(make_memory("f", id="f"), "facts")
    await store.create_memory(make_memory("m2", id="m2", room=R2), "messages")
    assert await store.delete_all_memories(R, "messages") == 1
    assert [m.id for m in await store.get_memories(table="facts")] == ["f"]
    assert [m.id for m in await store.get_memories(table="messages")] == ["m2"]


async def test_delete_many_memories_counts_what_existed(store: Store) -> None:
    await store.create_memory(make_memory("a", id="a"), "messages")
    await store.create_memory(make_memory("b", id="b"), "messages")
    assert await store.delete_many_memories(["a", "b", "zzz"]) == 2
    assert await store.delete_many_memories([]) == 0


async def test_get_memories_by_ids_is_newest_first_and_can_filter_the_table(store: Store) -> None:
    await store.create_memory(make_memory("old", id="old", created_at=1), "messages")
    await store.create_memory(make_memory("new", id="new", created_at=2), "facts")
    assert [m.id for m in await store.get_memories_by_ids(["old", "new"])] == ["new", "old"]
    assert [m.id for m in await store.get_memories_by_ids(["old", "new"], table="messages")] == ["old"]
    assert await store.get_memories_by_ids([]) == []


async def test_get_memories_by_room_ids_spans_rooms_without_embeddings(store: Store) -> None:
    await store.create_memory(make_memory("r1", id="r1", created_at=1, embedding=vec(1)), "messages")
    await store.create_memory(make_memory("r2", id="r2", room=R2, created_at=2), "messages")
    found = await store.get_memories_by_room_ids(table="messages", room_ids=[R, R2])
    assert [m.id for m in found] == ["r2", "r1"] and all(m.embedding is None for m in found)
    assert [m.id for m in await store.get_memories_by_room_ids(table="messages", room_ids=[R, R2], limit=1)] == ["r2"]
    assert await store.get_memories_by_room_ids(table="messages", room_ids=[]) == []


async def test_recent_memory_ids_are_the_newest_of_one_room_and_table(store: Store) -> None:
    for i in range(3):
        await store.create_memory(make_memory(f"m{i}", id=f"m{i}", created_at=10 + i), "messages")
    await store.create_memory(make_memory("elsewhere", id="x", room=R2, created_at=20), "messages")
    await store.create_memory(make_memory("a fact", id="f", created_at=30), "facts")
    assert await store.get_recent_memory_ids(table="messages", room_id=R, limit=2) == ["m2", "m1"]
    assert await store.get_recent_memory_ids(table="messages", room_id=R, limit=9) == ["m2", "m1", "m0"]
    assert await store.get_recent_memory_ids(table="messages", room_id="nowhere", limit=9) == []


async def test_memory_contents_must_be_json(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.create_memory(
            make_memory("x", metadata=MemoryMetadata.from_json({"type": "message", "score": float("nan")})), "messages"
        )
    with pytest.raises(ValueError, match="table name is required"):
        await store.create_memory(make_memory("x"), "")


def batch_with_repeats() -> list[Memory]:
    """Five memories: a repeated id, a repeated vector, one without a vector, one without an id."""
    return [
        make_memory("one", id="b1", embedding=vec(1)),
        make_memory("one again", id="b2", embedding=vec(1)),
        make_memory("plain", id="b3"),
        make_memory("one", id="b1", embedding=vec(1)),  # repeated id: ignored
        make_memory("two", embedding=vec(2), room=R2),
    ]


async def test_create_memories_writes_a_batch_in_order_and_dedups_within_it(store: Store) -> None:
    ids = await store.create_memories(batch_with_repeats(), "facts")
    assert ids[:4] == ["b1", "b2", "b3", "b1"] and len(ids[4]) == 36
    unique = {m.id: m.unique for m in await store.get_memories(table="facts")}
    assert unique == {"b1": True, "b2": False, "b3": True, ids[4]: True}
    hits = await store.search_memories(vec(1), "facts", count=5)
    assert {m.id for m in hits[:2]} == {"b1", "b2"} and {m.id for m in hits} == {"b1", "b2", ids[4]}  # b3: no vector
    assert await store.create_memories([], "facts") == []


async def test_create_memories_writes_all_or_nothing(store: Store) -> None:
    batch = [make_memory(f"m{n}", embedding=vec(n)) for n in range(100)]
    batch.append(make_memory("bad", metadata=MemoryMetadata(type=MemoryType.FRAGMENT)))  # a fragment needs its document
    with pytest.raises(StoreError):
        await store.create_memories(batch, "messages", unique=True)
    assert await store.get_memories(table="messages") == []
    assert await store.search_memories(vec(1), "messages") == []
    assert await store.search_memories_by_text("m1", "messages") == []
