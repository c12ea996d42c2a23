"""Every store write on a hot path costs one trip to the writer's thread, whatever it does inside."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import ChannelType, Component, Entity, Relationship, Room, RoomState, Task, World
from bot.store import AgentStore, Database

from .conftest import R, U, V, W, make_memory, vec

Call = Callable[[AgentStore], Awaitable[Any]]


async def _memory_id(store: AgentStore) -> str:
    return await store.create_memory(make_memory("hello", embedding=vec(0)), "messages")


async def _relationship(store: AgentStore) -> Relationship:
    assert await store.create_relationship(U, V, tags=["friend"])
    found = await store.get_relationship(U, V)
    assert found is not None
    return found


WRITES: dict[str, tuple[Call | None, Callable[[AgentStore, Any], Awaitable[Any]]]] = {
    # name: (setup returning an argument, the write under test)
    "update_memory": (
        _memory_id,
        lambda s, mid: s.update_memory(
            mid, content=Content(text="edited"), metadata=MemoryMetadata.from_json({"k": 1}), embedding=vec(1)
        ),
    ),
    "update_memory of a missing memory": (None, lambda s, _: s.update_memory("missing", content=Content(text="x"))),
    "delete_many_memories": (_memory_id, lambda s, mid: s.delete_many_memories([mid])),
    "delete_all_memories": (_memory_id, lambda s, _: s.delete_all_memories(R, "messages")),
    "create_entities": (None, lambda s, _: s.create_entities([Entity(id="e-new", agent_id=s.agent_id, names=["n"])])),
    "update_entity": (None, lambda s, _: s.update_entity(Entity(id=U, agent_id=s.agent_id, names=["Uma"]))),
    "create_component": (
        None,
        lambda s, _: s.create_component(Component(id="c1", entity_id=U, agent_id=s.agent_id, room_id=R, type="t")),
    ),
    "create_world": (None, lambda s, _: s.create_world(World(id="w-new", agent_id=s.agent_id))),
    "update_world": (None, lambda s, _: s.update_world(World(id=W, agent_id=s.agent_id, name="renamed"))),
    "create_rooms": (None, lambda s, _: s.create_rooms([Room(id="r-new", source="test", type=ChannelType.GROUP)])),
    "add_participants": (None, lambda s, _: s.add_participants([U, V], R)),
    "set_participant_state": (None, lambda s, _: s.set_participant_state(R, s.agent_id, RoomState.FOLLOWED)),
    "remove_participant": (None, lambda s, _: s.remove_participant(V, R)),
    "create_relationship": (None, lambda s, _: s.create_relationship(U, V)),
    "update_relationship": (_relationship, lambda s, rel: s.update_relationship(rel)),
    "set_cache": (None, lambda s, _: s.set_cache("k", {"v": 1})),
    "delete_cache": (None, lambda s, _: s.delete_cache("k")),
    "create_task": (None, lambda s, _: s.create_task(Task(id="t1", name="remind"))),
    "update_task": (
        lambda s: s.create_task(Task(id="t1", name="remind")),
        lambda s, _: s.update_task("t1", {"name": "again"}),
    ),
    "delete_task": (None, lambda s, _: s.delete_task("t1")),
}


@pytest.mark.parametrize("name", list(WRITES))
async def test_a_store_write_is_one_trip_to_the_writer(
    store: AgentStore, db: Database, trips: list[str], name: str
) -> None:
    setup, write = WRITES[name]
    argument = await setup(store) if setup is not None else None
    await db.flush_logs()
    trips.clear()
    await write(store, argument)
    assert len(trips) == 1, f"{name} took {len(trips)} trips: {trips}"


async def test_update_memory_changes_content_metadata_and_embedding_together(store: AgentStore) -> None:
    memory_id = await _memory_id(store)
    assert await store.update_memory(
        memory_id, content=Content(text="edited"), metadata=MemoryMetadata.from_json({"k": 1}), embedding=vec(1)
    )
    [memory] = await store.get_memories_by_ids([memory_id])
    assert memory.content.to_json() == {"text": "edited"}
    assert memory.metadata.to_json() == {"k": 1}
    assert [m.id for m in await store.search_memories(vec(1), "messages", count=1)] == [memory_id]


async def test_update_memory_of_another_agent_s_memory_changes_nothing(store: AgentStore, store_b: AgentStore) -> None:
    memory_id = await _memory_id(store)
    assert not await store_b.update_memory(memory_id, content=Content(text="hijacked"))
    [memory] = await store.get_memories_by_ids([memory_id])
    assert memory.content.text == "hello"
