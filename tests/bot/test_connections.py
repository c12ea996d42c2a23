"""What platform adapters share: rooms and entities written once per run, one bot per token."""

from __future__ import annotations

import pytest

from bot.kernel.content import Content
from bot.kernel.errors import ConfigError
from bot.kernel.record_metadata import EntityMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Room, World
from bot.runtime.connections import Connections, TokenClaims, record_sent
from bot.runtime.events import EntityUpdated, MessageSent, RoomJoined, RoomLeft, RoomUpdated

from .test_runtime import db, runtime  # noqa: F401  (fixtures)


async def test_rooms_and_entities_are_written_once_and_names_kept_current(runtime, monkeypatch) -> None:  # noqa: F811
    rt = runtime
    connections = Connections(rt, "chat")
    room = Room(rt.unique_id("chat:room"), source="chat", type=ChannelType.GROUP, name="general")
    await connections.ensure_rooms([room])
    assert connections.knows_room(room.id) and await rt.store.is_room_participant(room.id, rt.agent_id)
    writes: list[str] = []

    async def counting(self, rooms):  # a second ensure is free
        writes.append("rooms")

    monkeypatch.setattr(type(rt.store), "create_rooms", counting)
    await connections.ensure_rooms([room])
    assert writes == []

    person = Entity(
        rt.unique_id("chat:user:1"),
        rt.agent_id,
        names=["Sam"],
        metadata=EntityMetadata.from_json({"chat": {"id": "1"}}),
    )
    await connections.ensure_entity(person, room.id)
    assert await rt.store.is_room_participant(room.id, person.id)
    renamed = Entity(
        person.id,
        rt.agent_id,
        names=["Samantha"],
        metadata=EntityMetadata.from_json({"chat": {"id": "1", "nick": "S"}}),
    )
    await Connections(rt, "chat").ensure_entity(renamed)  # a new run sees the new name
    stored = await rt.store.get_entity(person.id)
    assert stored.names == ["Samantha", "Sam"] and stored.metadata.to_json()["chat"] == {"id": "1", "nick": "S"}


async def test_sent_messages_are_stored_and_announced(runtime) -> None:  # noqa: F811
    rt = runtime
    seen: list[str] = []

    async def on_sent(event: MessageSent) -> None:
        seen.append(event.message.content.text or "")

    rt.on(MessageSent, on_sent)
    sent = Memory(entity_id=rt.agent_id, room_id=rt.agent_id, content=Content(text="hello"), id=rt.unique_id("m1"))
    assert await record_sent(rt, [sent], "chat") == [sent]
    assert seen == ["hello"] and (await rt.store.get_memory(sent.id)).content.text == "hello"


def test_one_bot_token_per_character() -> None:
    claims = TokenClaims("CHAT_TOKEN", "make one bot per character")
    claims.claim("t1", "Ada")
    claims.claim("t1", "Ada")  # reconnecting is fine
    with pytest.raises(
        ConfigError,
        match=r"Brann: uses the same CHAT_TOKEN as Ada; each character needs a bot of "
        r"its own \(make one bot per character\)",
    ):
        claims.claim("t1", "Brann")
    claims.release("t1", "Brann")  # not the holder: nothing happens
    claims.release("t1", "Ada")
    claims.claim("t1", "Brann")


async def test_a_new_room_is_joined_once_and_a_renamed_one_updated(runtime) -> None:  # noqa: F811
    rt = runtime
    heard: list[str] = []

    async def on_joined(event: RoomJoined) -> None:
        heard.append(f"joined:{event.room.name}")

    async def on_updated(event: RoomUpdated) -> None:
        heard.append(f"updated:{event.previous_name}->{event.room.name}")

    rt.on(RoomJoined, on_joined)
    rt.on(RoomUpdated, on_updated)
    room = Room(rt.unique_id("chat:room"), source="chat", type=ChannelType.GROUP, name="general")
    await Connections(rt, "chat").ensure_rooms([room])
    await Connections(rt, "chat").ensure_rooms([room])  # a new run: known, not joined again
    # A name that came with a message is not a rename (it may be a stand-in): the room keeps its own.
    await Connections(rt, "chat").ensure_rooms([Room(room.id, source="chat", type=ChannelType.GROUP, name="#42")])
    connections = Connections(rt, "chat")
    assert await connections.renamed(room.id, "lobby")  # the platform announced a rename
    assert await connections.renamed(room.id, "lobby")  # announced again: nothing new
    assert not await connections.renamed(rt.unique_id("chat:elsewhere"), "x")  # not stored: the caller stores it
    assert heard == ["joined:general", "updated:general->lobby"]
    assert (await rt.store.get_room(room.id)).name == "lobby"


async def test_leaving_a_world_leaves_each_of_its_rooms_once(runtime) -> None:  # noqa: F811
    rt = runtime
    world = World(rt.unique_id("chat:world"), rt.agent_id, name="guild")
    await rt.store.create_world(world)
    rooms = [
        Room(rt.unique_id(f"chat:{n}"), source="chat", type=ChannelType.GROUP, name=n, world_id=world.id)
        for n in ("general", "random")
    ]
    connections = Connections(rt, "chat")
    await connections.ensure_rooms(rooms)
    left: list[tuple[str | None, str]] = []

    async def on_left(event: RoomLeft) -> None:
        left.append((event.room.name, event.status))

    rt.on(RoomLeft, on_left)
    await connections.left_world(world.id, "kicked")
    await connections.left_world(world.id, "kicked")  # delivered again: already left
    assert sorted(left) == [("general", "kicked"), ("random", "kicked")]


async def test_a_renamed_person_is_announced_as_entity_updated(runtime) -> None:  # noqa: F811
    rt = runtime
    updated: list[EntityUpdated] = []

    async def on_updated(event: EntityUpdated) -> None:
        updated.append(event)

    rt.on(EntityUpdated, on_updated)
    person = Entity(rt.unique_id("chat:user:2"), rt.agent_id, names=["Sam"])
    await Connections(rt, "chat").ensure_entity(person)
    await Connections(rt, "chat").ensure_entity(person)  # unchanged: nothing to say
    assert updated == []
    renamed = Entity(person.id, rt.agent_id, names=["Samantha"])
    await Connections(rt, "chat").ensure_entity(renamed)
    assert [(e.entity_id, list(e.names), e.source) for e in updated] == [(person.id, ["Samantha", "Sam"], "chat")]
    await Connections(rt, "chat").ensure_entity(renamed)  # the next run: known by that name already
    assert len(updated) == 1
    await Connections(rt, "chat").ensure_entity(person)  # back to the old name: a change again
    assert [list(e.names) for e in updated] == [["Samantha", "Sam"], ["Sam", "Samantha"]]
