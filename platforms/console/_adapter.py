"""The console adapter: one person talking to one character in a terminal.

The terminal is a world with one DM room; the person is an entity. Lines typed reach the
runtime as incoming messages like any platform's, and replies come back through the same reply
channel contract (:mod:`bot.kernel.messages`): the adapter shows them and stores what it "sent".

A terminal shows no pictures: a file sent is named. A text file (a long summary or transcript,
which Discord and Telegram get as a document) is printed below its name, like ``cat``: actions
send the same reply everywhere, and the console shows it as well as a terminal can.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from io import TextIOBase
from typing import TYPE_CHECKING, TextIO

from bot.sdk import (
    Attachment,
    ChannelType,
    Content,
    Entity,
    EntityMetadata,
    IncomingMessage,
    Memory,
    MemoryMetadata,
    MessageSent,
    Outcome,
    OutgoingFile,
    PlatformProfile,
    QuietChannel,
    Reply,
    Room,
    SendError,
    ServiceKey,
    World,
    ask,
    now_ms,
    repair_text,
)

from ._notices import ConversationLog

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["CONSOLE_ADAPTER", "ConsoleAdapter"]

_log = logging.getLogger(__name__)
SOURCE = "console"
_SHOWN_TEXT_BYTES = 256 * 1024  # a text file larger than this is named only: a terminal is no pager


class ConsoleAdapter:
    """Connects one runtime to a terminal (or any line source, for tests).

    It is also the runtime's ``console`` :class:`~bot.runtime.components.Messenger`: SEND_MESSAGE can
    reach the one person and the one room a terminal has.
    """

    def __init__(
        self,
        runtime: AgentRuntime,
        *,
        user: str = "you",
        output: TextIO | TextIOBase | None = None,
        notices: ConversationLog | None = None,
    ) -> None:
        self.runtime = runtime
        self.user = user
        self.output = output or sys.stdout
        self.notices = notices
        """Where problems go when they are shown in the conversation rather than logged."""
        self._said = 0  # lines the character has said: tells whether a turn got an answer
        self.world_id = runtime.unique_id(f"{SOURCE}:world")
        self.room_id = runtime.unique_id(f"{SOURCE}:room:{user}")
        self.entity_id = runtime.unique_id(f"{SOURCE}:user:{user}")
        self._connected = False

    async def connect(self) -> None:
        """Create the world, room and person rows (idempotent)."""
        store = self.runtime.store
        await store.create_world(World(self.world_id, self.runtime.agent_id, name="console", server_id=SOURCE))
        await store.create_rooms(
            [
                Room(
                    self.room_id,
                    source=SOURCE,
                    type=ChannelType.DM,
                    name=f"console with {self.user}",
                    world_id=self.world_id,
                    server_id=SOURCE,
                    channel_id=self.user,
                )
            ]
        )
        await store.create_entities(
            [
                Entity(
                    self.entity_id,
                    self.runtime.agent_id,
                    names=[self.user],
                    metadata=EntityMetadata(platforms={SOURCE: PlatformProfile(name=self.user)}),
                )
            ]
        )
        await store.add_participants([self.entity_id, self.runtime.agent_id], self.room_id)
        if self.runtime.get_service(CONSOLE_ADAPTER) is None:
            self.runtime.register_service(CONSOLE_ADAPTER, self)
        self._connected = True

    async def send(self, text: str) -> Outcome:
        """Deliver one line from the person; returns how its handling ended."""
        if not self._connected:
            await self.connect()
        # A terminal's bytes that are not UTF-8 arrive as lone surrogates (surrogateescape).
        message = Memory(
            id=str(uuid.uuid4()),
            entity_id=self.entity_id,
            room_id=self.room_id,
            world_id=self.world_id,
            content=Content(text=repair_text(text), source=SOURCE, channel_type=ChannelType.DM),
            metadata=MemoryMetadata(entity_name=self.user),
            created_at=now_ms(),
        )
        return await self.runtime.receive(IncomingMessage(message, _Terminal(self)))

    async def show(self, reply: Reply) -> list[Memory]:
        """Print a reply and store it as what the character said."""
        text = repair_text(reply.text).strip()  # a terminal may not print a lone surrogate
        files = reply.files
        if not text and not files:
            return []
        # A terminal shows no pictures: each file is named (text files printed), and stored as what was sent.
        shown = [text] if text else []
        shown += [f"[file: {f.filename}, {f.content_type}]" for f in files]
        printed = [f"{self.runtime.character.name}: {' '.join(shown)}"]
        for file in files:
            body = await _readable_text(file)
            if body is not None:
                printed += [f"--- {file.filename} ---", body.rstrip(), f"--- end of {file.filename} ---"]
        print("\n".join(printed), file=self.output, flush=True)
        self._said += 1
        # What a plugin sent along, as it gave it, and the fields the reply set; a terminal shows no buttons.
        said = Content.from_json(reply.extra)
        sent = Memory(
            id=str(uuid.uuid4()),
            entity_id=self.runtime.agent_id,
            room_id=self.room_id,
            world_id=self.world_id,
            content=replace(
                said,
                text=text,
                actions=reply.actions or said.actions,
                in_reply_to=reply.in_reply_to if reply.in_reply_to is not None else said.in_reply_to,
                thought=reply.thought if reply.thought is not None else said.thought,
                source=SOURCE,
                attachments=tuple(Attachment.from_json({**f.record(), "source": SOURCE}) for f in files)
                if files
                else said.attachments,
            ),
            created_at=now_ms(),
        )
        await self.runtime.store.create_memory(sent, "messages", unique=False)
        await self.runtime.emit(MessageSent(message=sent, source=SOURCE))
        return [sent]

    async def send_to_room(self, room: Room, reply: Reply) -> list[Memory]:
        if room.id != self.room_id:
            raise SendError("the console has only this conversation")
        return await self.show(reply)

    async def send_to_entity(self, entity: Entity, reply: Reply) -> list[Memory]:
        if entity.id != self.entity_id:
            raise SendError(f"on the console I can only write to {self.user}")
        return await self.show(reply)

    async def run(self, read_line: Callable[[], Awaitable[str | None]] | None = None) -> None:
        """Read lines until end of input or ``/quit``; each line is answered before the next."""
        read = read_line or _stdin_line
        await self.connect()
        while True:
            line = await read()
            if line is None or line.strip() in ("/quit", "/exit"):
                return
            if line.strip():
                await self._turn(line.strip())

    async def _turn(self, text: str) -> None:
        """Send one line; if the character could not answer it, say why in one line."""
        if self.notices is None:
            await self.send(text)
            return
        said = self._said
        with self.notices.turn() as problems:
            await self.send(text)
        if problems and self._said == said:
            self.notices.show(f"{self.runtime.character.name} could not answer: {problems[-1]}")


async def _readable_text(file: OutgoingFile) -> str | None:
    """A text file's words for the terminal; None for any other file, a large or unreadable one."""
    size = file.size()
    if not file.content_type.startswith("text/") or size is None or size > _SHOWN_TEXT_BYTES:
        return None
    try:
        return repair_text((await file.read()).decode("utf-8", errors="replace"))
    except OSError:
        return None


async def _stdin_line() -> str | None:
    # Lines from a pipe have nobody to prompt: the prompt would only run into the output.
    return await ask("> " if sys.stdin.isatty() else "")


class _Terminal(QuietChannel):
    """The reply channel of a line typed in the terminal: replies are printed (and stored)."""

    def __init__(self, adapter: ConsoleAdapter) -> None:
        self.adapter = adapter

    async def send(self, reply: Reply) -> list[Memory]:
        return await self.adapter.show(reply)


#: The key the console adapter is offered under in its runtime (a Messenger: SEND_MESSAGE reaches the terminal).
CONSOLE_ADAPTER: ServiceKey[ConsoleAdapter] = ServiceKey(SOURCE)
