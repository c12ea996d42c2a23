"""What every platform adapter needs from the store, written once per run.

Platforms see the same rooms and people over and over; :class:`Connections` writes a room, an
entity (refreshing its names when they change) and a participant the first time in a run and
remembers it, so a message costs no writes for them after that. :meth:`Connections.merge_world`
writes a world with the roles the platform reports, keeping roles given through UPDATE_ROLE.
:meth:`Connections.left_world` marks the rooms of a world the agent was removed from and says so
(WORLD_LEFT). :func:`remember_sent` turns what the platform says about messages the agent sent into memories;
:func:`record_sent` stores them and announces them. :class:`TokenClaims` stops two
characters of one daemon from connecting with the same bot token (they would answer twice).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from bot.kernel.buttons import buttons_checked
from bot.kernel.content import Content, MemoryMetadata, MemoryType
from bot.kernel.errors import ConfigError, StoreError
from bot.kernel.outgoing import Reply
from bot.kernel.record_metadata import RoomMetadata
from bot.kernel.types import Entity, Memory, Role, Room, World, now_ms
from bot.runtime.events import (
    EntityUpdated,
    MessageSent,
    RoomJoined,
    RoomLeft,
    RoomUpdated,
    VoiceMessageSent,
    WorldLeft,
)

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["Connections", "SentMessage", "TokenClaims", "merged_world", "record_sent", "remember_sent"]


class Connections:
    """One agent's rooms, entities and participants on one platform, as written this run."""

    def __init__(self, runtime: AgentRuntime, source: str) -> None:
        self.runtime = runtime
        self.source = source
        self._rooms: set[str] = set()
        self._entities: set[str] = set()
        self._participants: set[tuple[str, str]] = set()

    def knows_room(self, room_id: str) -> bool:
        return room_id in self._rooms

    async def ensure_rooms(self, rooms: list[Room]) -> None:
        """Write rooms not written yet this run, with the agent as a participant; a room never
        stored before is announced (ROOM_JOINED). A stored room keeps its name: what a platform
        reports with a message may be a stand-in (a forum topic's number, not its name); only a
        rename the platform announces changes it (:meth:`renamed`)."""
        new = [r for r in rooms if r.id not in self._rooms]
        if not new:
            return
        store = self.runtime.store
        stored = {r.id: r for r in await store.get_rooms_by_ids([r.id for r in new])}
        await store.create_rooms([r for r in new if r.id not in stored])
        for room in new:
            self._written(await store.add_participant(self.runtime.agent_id, room.id))
            self._rooms.add(room.id)
        for room in new:
            if room.id not in stored:
                await self.runtime.emit(RoomJoined(room=room, source=self.source))

    async def renamed(self, room_id: str, name: str) -> bool:
        """The platform renamed a room: the stored room takes the name, and ROOM_UPDATED says so
        when it is new to it. False when the room is not stored yet: the caller stores it."""
        room = await self.runtime.store.get_room(room_id)
        if room is None:
            return False
        if room.name != name:
            previous, room.name = room.name, name
            self._written(await self.runtime.store.update_room(room))
            await self.runtime.emit(RoomUpdated(room=room, previous_name=previous, source=self.source))
        return True

    async def ensure_entity(self, entity: Entity, room_id: str | None = None) -> str:
        """Write the entity (or merge in new names and platform details) once per run, and make
        it a participant of ``room_id``."""
        store = self.runtime.store
        if entity.id not in self._entities:
            existing = await store.get_entity(entity.id)
            if existing is None:
                self._written(await store.create_entities([entity]))
            elif self._refreshed(existing, entity):
                self._written(await store.update_entity(existing))
                await self.runtime.emit(
                    EntityUpdated(
                        entity_id=entity.id,
                        room_id=room_id,
                        source=self.source,
                        names=tuple(existing.names),
                        metadata=existing.metadata.to_json(),
                    )
                )
            self._entities.add(entity.id)
        if room_id is not None and (entity.id, room_id) not in self._participants:
            self._written(await store.add_participant(entity.id, room_id))
            self._participants.add((entity.id, room_id))
        return entity.id

    @staticmethod
    def _refreshed(stored: Entity, reported: Entity) -> bool:
        """Merge the platform's names and details for the person into ``stored`` (the name it
        reports first: theirs now); whether that changed it."""
        names = list(dict.fromkeys([*reported.names, *stored.names]))
        metadata = stored.metadata.merged(reported.metadata)
        if names == stored.names and metadata.to_json() == stored.metadata.to_json():
            return False
        stored.names, stored.metadata = names, metadata
        return True

    def _written(self, ok: bool) -> None:
        """A write that reports failure as False: while the store cannot write, raise, so that
        it is not taken as written for the rest of the run (the caller waits and tries again)."""
        health = self.runtime.store.health
        if not ok and not health.writable:
            raise StoreError(health.reason())

    async def mark_world_rooms(self, world_id: str, left: str | None) -> list[Room]:
        """The world's stored rooms, marked as left (``metadata.left_at``, and ``left_as``: how,
        such as ``kicked``; each newly marked one announced, ROOM_LEFT), or with ``left=None`` no
        longer marked (the agent is back)."""
        rooms = await self.runtime.store.get_rooms_by_world(world_id)
        for room in rooms:
            if left is None:
                await self._mark(room, replace(room.metadata, left_at=None, left_as=None))
            elif room.metadata.left_at is None:
                await self.left_room(room, left)
        return rooms

    async def left_room(self, room: Room, how: str) -> None:
        """The agent is no longer in ``room`` (``how``: ``deleted``, ``kicked``): marked as left,
        and ROOM_LEFT says so."""
        await self._mark(room, replace(room.metadata, left_at=now_ms(), left_as=how))
        await self.runtime.emit(RoomLeft(room=room, status=how, source=self.source))

    async def _mark(self, room: Room, marked: RoomMetadata) -> None:
        if marked != room.metadata:
            room.metadata = marked
            await self.runtime.store.update_room(room)

    async def left_world(self, world_id: str, how: str) -> None:
        """The agent left, or was removed from, a server or group (``how``): its rooms are
        marked (:meth:`mark_world_rooms`), and WORLD_LEFT says so."""
        rooms = await self.mark_world_rooms(world_id, how)
        world = await self.runtime.store.get_world(world_id)
        await self.runtime.emit(WorldLeft(world_id=world_id, world=world, rooms=rooms, status=how, source=self.source))

    async def merge_world(self, reported: World) -> tuple[World, bool]:
        """Write the world as the platform reports it: created if new, else merged into the
        stored one (see :func:`merged_world`) and written only if that changed something.

        Returns the world as stored, and whether it was created.
        """
        store = self.runtime.store
        existing = await store.get_world(reported.id)
        if existing is None:
            await store.create_world(reported)
            return reported, True
        merged = merged_world(existing, reported)
        if merged is None:
            return existing, False
        await store.update_world(merged)
        return merged, False


def merged_world(stored: World, reported: World) -> World | None:
    """``stored`` with what the platform reports about it now: its name, its metadata, and the
    roles the platform gives (OWNER, ADMIN) added to the stored roles. A role given through
    UPDATE_ROLE is kept over the platform's — except the owner's: whoever owns the server or chat
    on the platform is OWNER. ``None`` when nothing changes (nothing to write)."""
    roles = {**(reported.metadata.roles or {}), **(stored.metadata.roles or {})}
    owner = reported.metadata.owner_id
    if owner:
        roles[owner] = Role.OWNER
    metadata = replace(stored.metadata.merged(reported.metadata), roles=roles)
    name = reported.name
    if metadata == stored.metadata and name == stored.name:
        return None
    return World(
        stored.id,
        stored.agent_id,
        name=name,
        server_id=stored.server_id,
        metadata=metadata,
        created_at=stored.created_at,
    )


class TokenClaims:
    """Which character holds each bot token of one platform in one daemon (a platform keeps its
    claims in ``runtime.shared``)."""

    def __init__(self, setting: str, advice: str) -> None:
        self.setting, self.advice = setting, advice
        self._holders: dict[str, str] = {}

    def claim(self, token: str, agent: str) -> None:
        """Raises ConfigError when another character already connected with ``token``."""
        holder = self._holders.get(token)
        if holder is not None and holder != agent:
            raise ConfigError(
                f"uses the same {self.setting} as {holder}; each character needs a bot of its own ({self.advice})",
                agent=agent,
            )
        self._holders[token] = agent

    def release(self, token: str, agent: str) -> None:
        if self._holders.get(token) == agent:
            del self._holders[token]


async def record_sent(runtime: AgentRuntime, memories: list[Memory], source: str) -> list[Memory]:
    """Store the memories of messages the agent just sent, and emit MESSAGE_SENT for each (and
    VOICE_MESSAGE_SENT after it for one it said aloud)."""
    runtime.metrics.messages_sent.labels(agent=runtime.character.name, platform=source).inc(len(memories))
    store = runtime.store
    for memory in memories:
        # What went out is part of the conversation: while the store cannot write, it waits.
        await store.health.retry(
            functools.partial(store.create_memory, memory, "messages", unique=False), going_on=lambda: runtime.accepting
        )
        await runtime.emit(MessageSent(message=memory, source=source))
        if memory.content.is_voice_message:
            await runtime.emit(VoiceMessageSent(message=memory, source=source))
    return memories


def _said(reply: Reply, source: str) -> Content:
    """What every message of ``reply`` stored says besides its own text: what the reply carried
    along (``extra``, as stored), the fields it set, and the platform."""
    kept = {k: v for k, v in reply.extra.items() if k not in ("files", "attachments", "buttons")}
    said = Content.from_json(kept)  # keys a plugin sent along, kept as it gave them
    return replace(
        said,
        actions=reply.actions or said.actions,
        in_reply_to=reply.in_reply_to if reply.in_reply_to is not None else said.in_reply_to,
        thought=reply.thought if reply.thought is not None else said.thought,
        source=source,
    )


@dataclass(frozen=True, slots=True)
class SentMessage:
    """What a platform says about one message the agent sent, for :func:`remember_sent`."""

    id: str  # the memory's id, from the platform's message id
    text: str  # as it went out (one piece of a long reply)
    created_at: int  # ms, as the platform stamped it
    content: Content = field(default_factory=Content)  # platform fields for the content (a URL, the channel type)
    metadata: MemoryMetadata = field(default_factory=MemoryMetadata)  # platform fields (the native id)


async def remember_sent(
    runtime: AgentRuntime,
    source: str,
    sent: Iterable[SentMessage],
    reply: Reply,
    room_id: str,
    world_id: str | None,
    *,
    in_reply_to: str | None = None,
) -> list[Memory]:
    """Store what went out of ``reply`` (one memory per message the platform sent) and announce
    it (:func:`record_sent`). The files to upload are not part of what was said: each message's
    own ``content.attachments`` (from the platform) says what files it carried. The last message
    keeps the buttons, as they were shown (a menu's options first)."""
    agent, memories, messages = runtime.agent_id, [], list(sent)
    said = _said(reply, source)
    buttons = (*(reply.menu.options if reply.menu is not None else ()), *buttons_checked(reply.buttons))
    for index, message in enumerate(messages):
        # Buttons go under the last message of a reply: that one keeps them, as they were shown.
        shown = buttons if buttons and index == len(messages) - 1 else None
        content = replace(said, text=message.text, buttons=shown).merged(message.content)
        if in_reply_to is not None:
            content = replace(content, in_reply_to=in_reply_to)
        memories.append(
            Memory(
                id=message.id,
                entity_id=agent,
                agent_id=agent,
                room_id=room_id,
                world_id=world_id,
                content=content,
                created_at=message.created_at,
                metadata=MemoryMetadata(type=MemoryType.MESSAGE).merged(message.metadata),
            )
        )
    return await record_sent(runtime, memories, source)
