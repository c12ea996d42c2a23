"""What platform adapters share: rooms and entities written once per run, one bot per token."""

from __future__ import annotations

import pytest

from bot.kernel.content import Content
from bot.kernel.errors import ConfigError
from bot.kernel.record_metadata import EntityMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Room
from bot.runtime.connections import Connections, TokenClaims, record_sent
from bot.runtime.events import MessageSent

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
