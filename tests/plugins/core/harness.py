"""A runtime with scripted models in one Discord-like guild room, for pipeline and action tests.

``harness(room_type, **character)`` makes an agent "Ada" with a world (guild), one room
("general") and two known entities: Sam (a person) and Brann (another bot). ``h.say(text)``
delivers a message and returns the pipeline's outcome; what the agent sent is in ``h.sent``, the
emoji it reacted with in ``h.reactions``.
Model answers are scripted by appending to ``h.small`` / ``h.large`` (strings, exceptions, or
callables of the params).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.kernel.content import Attachment, Content, MemoryMetadata
from bot.kernel.messages import IncomingMessage, NativeRef, Outcome, QuietChannel, Reacted
from bot.kernel.models import ModelType
from bot.kernel.outgoing import Reply
from bot.kernel.types import ChannelType, Entity, Memory, Room, RoomState, World
from bot.runtime.agent import AgentRuntime
from bot.runtime.shared import Shared
from bot.store import Database, StoreBackend

HUMAN = "00000000-0000-0000-0000-0000000000b1"
OTHER_BOT = "00000000-0000-0000-0000-0000000000b2"


def plan(text: str = "", actions: str = "REPLY", thought: str = "thinking") -> str:
    return f"<response><thought>{thought}</thought><actions>{actions}</actions><text>{text}</text></response>"


@dataclass
class Harness:
    rt: AgentRuntime
    room: str
    world: str = ""
    small: list[Any] = field(default_factory=list)  # scripted answers, popped in order
    large: list[Any] = field(default_factory=list)
    small_calls: int = 0
    large_calls: int = 0
    sent: list[dict] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)  # every prompt either model was given
    platform_down: bool = False  # the platform takes nothing: sends return no messages
    reactions: list[str] = field(default_factory=list)  # every emoji the agent put on a message, in order
    reactions_refused: bool = False  # the platform refuses reactions (no permission, the message deleted)
    on_sent: Callable[[str], Coroutine[Any, Any, None]] | None = None  # told each text sent (a relay to the others)

    async def say(
        self,
        text: str,
        *,
        entity: str = HUMAN,
        room: str | None = None,
        id: str | None = None,
        attachments: Sequence[Attachment] | None = None,
        fetch: Callable[[Mapping[str, Any]], Awaitable[bytes]] | None = None,
        on_responding: Callable[[], Awaitable[None]] | None = None,
        native: NativeRef | None = None,
        metadata: MemoryMetadata | None = None,
    ) -> Outcome:
        content = Content(
            text=text, source="discord", attachments=tuple(attachments) if attachments is not None else None
        )
        message = Memory(
            id=id or str(uuid.uuid4()),
            entity_id=entity,
            room_id=room or self.room,
            content=content,
            metadata=metadata or MemoryMetadata(),
        )
        return await self.deliver(message, fetch=fetch, on_responding=on_responding, native=native)

    async def say_streamed(self, text: str, *, id: str | None = None) -> tuple[Outcome, StreamingChannel]:
        """Sam says ``text`` on a channel that shows the reply as it is written: the outcome,
        and the channel, whose ``streamed`` holds every text it was shown."""
        message = Memory(
            id=id or str(uuid.uuid4()), entity_id=HUMAN, room_id=self.room, content=Content(text=text, source="discord")
        )
        channel = StreamingChannel(self, self.room, None, None)
        return await self.rt.receive(IncomingMessage(message, channel)), channel

    async def deliver(
        self,
        message: Memory,
        *,
        fetch: Callable[[Mapping[str, Any]], Awaitable[bytes]] | None = None,
        on_responding: Callable[[], Awaitable[None]] | None = None,
        native: NativeRef | None = None,
    ) -> Outcome:
        """Hand ``message`` to the runtime as a platform would; what is sent lands in ``sent``."""
        channel = _Channel(self, message.room_id, fetch, on_responding)
        return await self.rt.receive(IncomingMessage(message, channel, native=native))

    async def room_state(self) -> RoomState | None:
        return await self.rt.store.get_participant_state(self.room, self.rt.agent_id)


class _Channel(QuietChannel):
    """The reply channel of one message said in the harness: what is sent lands in ``h.sent``."""

    def __init__(
        self,
        harness: Harness,
        room: str,
        fetch: Callable[[Mapping[str, Any]], Awaitable[bytes]] | None,
        on_responding: Callable[[], Awaitable[None]] | None,
    ) -> None:
        self.harness, self.room = harness, room
        self._fetch, self._on_responding = fetch, on_responding

    async def send(self, reply: Reply) -> list[Memory]:
        h = self.harness
        content = reply.to_json()  # as a platform's channel takes it: what the tests read
        h.sent.append(content)
        if h.platform_down:
            return []
        if h.on_sent is not None:
            h.rt.create_task(h.on_sent(reply.text), "test:relay")
        return [
            Memory(id=str(uuid.uuid4()), entity_id=h.rt.agent_id, room_id=self.room, content=Content.from_json(content))
        ]

    async def typing(self) -> None:
        if self._on_responding is not None:
            await self._on_responding()

    async def react(self, emoji: str) -> Reacted:
        h = self.harness
        if h.reactions_refused:
            return Reacted.REFUSED
        h.reactions.append(emoji)
        return Reacted.DONE

    async def fetch(self, attachment: Mapping[str, Any]) -> bytes:
        if self._fetch is None:
            raise LookupError("no attachments in this test")
        return await self._fetch(attachment)


class StreamingChannel(_Channel):
    """A channel that shows the reply as it is written (as voice and the console's Chat do)."""

    streams = True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.streamed: list[str] = []

    def stream(self, text_so_far: str) -> None:
        self.streamed.append(text_so_far)


async def _answer(script: list[Any], params: dict) -> Any:
    item = script.pop(0) if script else plan("default reply")
    if isinstance(item, BaseException):
        raise item
    if callable(item):
        item = item(params)
        if asyncio.iscoroutine(item):
            item = await item
    return item


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with Database(tmp_path / "t.db") as db, harnesses(db, tmp_path) as make:
        yield make


@contextlib.asynccontextmanager
async def harnesses(db: StoreBackend, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """What the ``harness`` fixture gives, on ``db`` (e.g. a PostgreSQL database): each call
    makes a runtime, closed at the end."""
    runtimes: list[AgentRuntime] = []

    async def make(
        room_type: ChannelType = ChannelType.GROUP, *, shared: Shared | None = None, **character: Any
    ) -> Harness:
        """A character (Ada unless ``name`` says otherwise); characters given one ``shared``
        are one daemon's troupe."""
        data = {"name": "Ada", "bio": "A test character.", **character}
        path = tmp_path / f"{str(data['name']).lower()}.json"
        path.write_text(json.dumps(data))
        loaded = load_character(path, environ={})
        char = loaded.raise_for_problems()
        # The plugins the file lists, as the daemon loads them (the models here are scripted).
        rt = AgentRuntime(char, db.for_agent(char.agent_id), environ={}, plugins=loaded.plugins, shared=shared)
        h = Harness(rt, rt.unique_id("discord:room-1"), rt.unique_id("discord:guild-1"))

        async def small(runtime: AgentRuntime, params: dict) -> Any:
            h.small_calls += 1
            h.prompts.append(params.get("prompt", ""))
            return await _answer(h.small, params)

        async def large(runtime: AgentRuntime, params: dict) -> Any:
            h.large_calls += 1
            h.prompts.append(params.get("prompt", ""))
            return await _answer(h.large, params)

        rt.register_model(ModelType.TEXT_SMALL, small, "script")
        rt.register_model(ModelType.TEXT_LARGE, large, "script")
        await rt.start()
        runtimes.append(rt)
        world = h.world
        await rt.store.create_world(World(world, rt.agent_id, name="Guild", server_id="guild-1"))
        await rt.store.create_rooms([Room(h.room, source="discord", type=room_type, name="general", world_id=world)])
        await rt.store.create_entities(
            [Entity(HUMAN, rt.agent_id, names=["Sam"]), Entity(OTHER_BOT, rt.agent_id, names=["Brann"])]
        )
        for entity in (HUMAN, OTHER_BOT, rt.agent_id):
            await rt.store.add_participant(entity, h.room)
        return h

    try:
        yield make
    finally:
        for rt in runtimes:
            await rt.close()
