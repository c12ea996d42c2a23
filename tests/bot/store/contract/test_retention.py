"""Retention and forgetting in the store: compaction is all-or-nothing, and forgetting a person,
a room or everything leaves nothing of it behind that any read can find (what is left in tables
and file bytes: ../test_store_retention.py).

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.record_metadata import EntityMetadata, RoomMetadata, WorldMetadata
from bot.kernel.types import ChannelType, Component, Entity, Memory, Room, RoomState, Task, World
from bot.store import Forgotten, Store, StoreBackend

from ..conftest import BR, BU, R2, A, B, R, U, V, W, make_memory, seed_agent, vec

DM = "00000000-0000-0000-0000-0000000000d1"
SECRET_WORD = "quokkaberry"  # only ever in the forgotten person's messages
NAME = "Samwise"


async def _rich_world(backend: StoreBackend, store: Store) -> dict[str, str]:
    """Agent A knows U (called Samwise) and V in group room R, and talks with U alone in DM."""
    await store.update_entity(
        Entity(U, A, names=[NAME, "sam_w"], metadata=EntityMetadata.from_json({"discord": {"id": "42"}}))
    )
    await store.update_world(
        World(
            W,
            A,
            name="Guild",
            server_id="g1",
            metadata=WorldMetadata.from_json({"ownership": {"ownerId": U}, "roles": {U: "ADMIN", V: "NONE"}}),
        )
    )
    await store.create_rooms(
        [
            Room(
                DM,
                source="discord",
                type=ChannelType.DM,
                name="DM with Samwise",
                metadata=RoomMetadata.from_json({"peer": U}),
            )
        ]
    )
    await store.add_participants([A, U], DM)
    ids: dict[str, str] = {}
    ids["u_group"] = await store.create_memory(
        make_memory(f"my {SECRET_WORD} recipe is secret", entity=U, embedding=vec(1), created_at=10), "messages"
    )
    ids["reply"] = await store.create_memory(
        Memory(A, R, Content(text="tell me more", in_reply_to=ids["u_group"]), embedding=vec(2), created_at=11),
        "messages",
    )
    ids["v_group"] = await store.create_memory(
        Memory(
            V,
            R,
            Content.from_json({"text": "V greets everyone", "mentions": [U]}),
            embedding=vec(3),
            created_at=12,
            metadata=MemoryMetadata.from_json({"type": "message", "repliedTo": U}),
        ),
        "messages",
    )
    ids["u_dm"] = await store.create_memory(
        make_memory(f"{SECRET_WORD} in private", entity=U, room=DM, embedding=vec(4), created_at=13), "messages"
    )
    ids["a_dm"] = await store.create_memory(
        make_memory("a private answer", entity=A, room=DM, created_at=14), "messages"
    )
    fact = {"unique": True}
    ids["about_u"] = await store.create_memory(
        Memory(
            U, R, Content(text="likes second breakfast"), embedding=vec(5), metadata=MemoryMetadata(entity_ids=(U,))
        ),
        "facts",
        **fact,
    )
    ids["told_by_u"] = await store.create_memory(
        Memory(V, R, Content(text="V moved to Bree"), metadata=MemoryMetadata(entity_ids=(V,), source_entity_id=U)),
        "facts",
        **fact,
    )
    ids["named"] = await store.create_memory(Memory(A, R, Content(text=f"{NAME} gardens")), "facts", **fact)
    ids["v_fact"] = await store.create_memory(
        Memory(
            V,
            R,
            Content(text="V plays the lute"),
            embedding=vec(6),
            metadata=MemoryMetadata(entity_ids=(V,), source_entity_id=V),
        ),
        "facts",
        **fact,
    )
    ids["summary_u"] = await store.create_memory(
        Memory(
            A,
            R,
            Content(text="a long talk about potatoes"),
            embedding=vec(7),
            metadata=MemoryMetadata(entity_ids=(U, V, A)),
        ),
        "summaries",
        **fact,
    )
    ids["summary_v"] = await store.create_memory(
        Memory(A, R, Content(text="V sang a song"), metadata=MemoryMetadata(entity_ids=(V, A))), "summaries", **fact
    )
    assert await store.create_relationship(U, V, tags=["friends"])
    assert await store.create_relationship(V, U)
    assert await store.create_relationship(V, A)
    assert await store.create_component(Component("c-u", U, A, R, "profile", {"email": "sam@shire.test"}))
    assert await store.create_component(Component("c-vu", V, A, R, "note", {"from": "U"}, source_entity_id=U))
    assert await store.create_component(Component("c-v", V, A, R, "profile", {"about": U, "x": 1}))
    await store.log({"event": "spoke"}, U, R, "action")
    await store.log({"target": U}, A, R, "action")
    await store.log({"event": "kept"}, A, R, "action")
    await store.set_cache(f"{R}-reflection-last-processed", ids["u_group"])
    await store.set_cache("unrelated", {"ok": True})
    await store.create_task(Task("FOLLOW_UP", entity_id=U, tags=["queue"]))
    await store.create_task(Task("KEEP", tags=["queue"]))
    await store.set_participant_state(R, A, RoomState.FOLLOWED)
    return ids


async def test_retention_counts_and_oldest_memories(store: Store) -> None:
    for i in range(5):
        await store.create_memory(make_memory(f"m{i}", created_at=1000 + i), "messages", unique=False)
    await store.create_memory(make_memory("other room", room=R2, created_at=10), "messages", unique=False)
    await store.create_memory(make_memory("a fact", created_at=1), "facts")
    assert await store.retention_counts("messages", before=1002) == {R: (5, 2), R2: (1, 1)}
    assert await store.retention_counts("messages") == {R: (5, 0), R2: (1, 0)}
    oldest = await store.get_oldest_memories("messages", R, 2)
    assert [m.content.text for m in oldest] == ["m0", "m1"]
    assert all(m.embedding is None for m in oldest)


async def test_compact_memories_does_nothing_when_the_batch_changed(store: Store) -> None:
    ids = [await store.create_memory(make_memory(f"m{i}"), "messages", unique=False) for i in range(3)]
    await store.delete_memory(ids[1])
    summary = Memory(entity_id=A, room_id=R, content=Content(text="stale"))
    assert await store.compact_memories(summary, "summaries", ids) == 0
    assert len(await store.get_memories(table="messages")) == 2
    assert await store.get_memories(table="summaries") == []
    with pytest.raises(ValueError, match="ids"):
        await store.compact_memories(summary, "summaries", [])


async def test_list_and_search_across_tables_with_an_entity_filter(store: Store) -> None:
    await store.create_memory(make_memory("U says hi", entity=U, created_at=1), "messages")
    await store.create_memory(make_memory("V says hi", entity=V, created_at=2), "messages")
    await store.create_memory(
        Memory(A, R, Content(text="U likes hiking"), created_at=3, metadata=MemoryMetadata(entity_ids=(U,))), "facts"
    )
    assert [m.content.text for m in await store.list_memories()] == ["U likes hiking", "V says hi", "U says hi"]
    assert [m.table for m in await store.list_memories(entity_id=U)] == ["facts", "messages"]
    assert [m.content.text for m in await store.list_memories(tables=["messages"], count=1)] == ["V says hi"]
    found = await store.search_all_memories_by_text("hiking says", entity_id=U)
    assert {m.content.text for m in found} == {"U likes hiking", "U says hi"}
    assert all(m.similarity and m.similarity > 0 for m in found)
    assert await store.count_memories_by_table() == {"facts": 1, "messages": 2}
    rooms = await store.get_rooms_with_counts()
    assert [(room.id, n) for room, n in rooms] == [(R, 3), (R2, 0)]


async def test_forget_entity_refuses_strangers_and_the_agent(store: Store, store_b: Store) -> None:
    with pytest.raises(LookupError):
        await store.forget_entity(BU)  # agent B's, not A's
    with pytest.raises(ValueError, match="agent itself"):
        await store.forget_entity(A)
    assert await store_b.get_entity(BU) is not None


async def test_export_of_a_person_is_what_forgetting_them_would_remove(backend: StoreBackend, store: Store) -> None:
    ids = await _rich_world(backend, store)
    data = await store.export_memories(entity_id=U)
    assert [e.id for e in data.entities] == [U]
    assert [c.id for c in data.entities[0].components] == ["c-u"]
    assert {m.id for m in data.memories} == {
        ids[k] for k in ("u_group", "reply", "u_dm", "a_dm", "about_u", "told_by_u", "named", "summary_u")
    }
    assert all(m.embedding is None for m in data.memories)
    assert {r.id for r in data.rooms} == {R, R2, DM}
    assert [w.id for w in data.worlds] == [W]
    assert len(data.relationships) == 2
    assert {(p.room_id, p.state) for p in data.participants} == {(R, None), (R2, None), (DM, None)}

    room = await store.export_memories(room_id=DM)
    assert [m.id for m in room.memories] == [ids["u_dm"], ids["a_dm"]]
    assert {e.id for e in room.entities} == {A, U}
    everything = await store.export_memories()
    assert len(everything.memories) == 11 and len(everything.rooms) == 3
    with pytest.raises(LookupError):
        await store.export_memories(room_id="nope")
    with pytest.raises(ValueError):
        await store.export_memories(room_id=R, entity_id=U)


async def test_seeded_fixtures_still_work(backend: StoreBackend) -> None:
    store = await seed_agent(backend, A, users=(U,), rooms=(R,))
    assert await store.forget_entity(U) == Forgotten(rows={"entities": 1, "participants": 1})


async def before_forget_room(store: Store) -> None:
    """Two memories, a cache entry, a task and a log in room R, and a message in R2."""
    in_r = await store.create_memory(make_memory("said in the first room", embedding=vec(1)), "messages")
    await store.create_memory(Memory(U, R, Content(text="learned in the first room")), "facts")
    await store.create_memory(make_memory("said elsewhere", room=R2), "messages")
    await store.set_cache(f"{R}-reflection-last-processed", in_r)
    await store.create_task(Task("T", room_id=R))
    await store.log({"x": 1}, U, R, "action")


async def test_forget_room_deletes_the_room_and_everything_in_it(store: Store) -> None:
    await before_forget_room(store)
    assert (await store.forget_room(R, dry_run=True)).memories == {"facts": 1, "messages": 1}
    assert await store.get_room(R) is not None  # a dry run deletes nothing
    done = await store.forget_room(R)
    assert done.memories == {"facts": 1, "messages": 1} and done.total > 2
    assert await store.get_room(R) is None
    assert [m.content.text for m in await store.list_memories()] == ["said elsewhere"]
    assert await store.search_all_memories_by_text("first room") == []
    assert await store.get_cache(f"{R}-reflection-last-processed") is None
    assert await store.get_tasks(room_id=R) == [] and await store.get_logs(room_id=R) == []
    assert await store.get_entity(U) is not None  # people stay: they may be elsewhere too
    with pytest.raises(LookupError):
        await store.forget_room(R)
    with pytest.raises(ValueError, match="own room"):
        await store.forget_room(A)


async def before_forget_all(backend: StoreBackend, store: Store, other: Store) -> str:
    """The rich world, the agent's own room and a document of its knowledge (whose id it returns),
    and one message of ``other``: what forget_all must remove, and keep."""
    await store.create_rooms([Room(A, source="troupe", type=ChannelType.SELF, name="self")])
    await store.add_participant(A, A)
    await _rich_world(backend, store)
    doc = await store.create_memory(
        Memory(A, A, Content(text="the manual"), metadata=MemoryMetadata(type=MemoryType.DOCUMENT, timestamp=1)),
        "documents",
    )
    await store.create_memory(
        Memory(
            A,
            A,
            Content(text="chapter one"),
            metadata=MemoryMetadata(type=MemoryType.FRAGMENT, document_id=doc, position=0),
        ),
        "knowledge",
    )
    await other.create_memory(make_memory("B keeps this", room=BR, entity=BU), "messages")
    return doc


async def test_forget_all_keeps_the_agent_its_knowledge_and_other_agents(backend: StoreBackend, store: Store) -> None:
    other = await seed_agent(backend, B, users=(BU,), rooms=(BR,))
    await before_forget_all(backend, store, other)

    assert (await store.forget_all(dry_run=True)).memories["messages"] == 5
    done = await store.forget_all()
    assert isinstance(done, Forgotten) and done.memories["messages"] == 5
    assert {m.table for m in await store.list_memories()} == {"documents", "knowledge"}
    assert [e.id for e in await store.search_entities_by_name("")] == [A]
    assert [room.id for room, _ in await store.get_rooms_with_counts()] == [A]
    assert await store.get_all_worlds() == []
    assert [t.name for t in await store.get_tasks()] == ["KEEP"]
    assert await store.get_cache("unrelated") == {"ok": True}
    assert await store.search_all_memories_by_text(SECRET_WORD) == []
    assert await store.get_agent() is not None
    assert len(await other.get_memories(table="messages")) == 1
