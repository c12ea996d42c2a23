"""The web adapter: one character talking with the people who use the console's Chat page.

Incoming: the console hands over what a person typed and uploaded (:meth:`WebAdapter.hear`) or a
button they pressed (:meth:`WebAdapter.press`); each becomes a message of the person's DM room,
handled by the runtime in a task of its own while the page waits for the answer on its event
stream. Outgoing: a reply is published to the pages watching the room (:class:`~._events.Listeners`),
as it is written (the reply channel streams) and then whole, with its files and buttons; the files
stay on the adapter's :class:`~._shelf.Shelf` for the page to fetch.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import (
    ChannelCleared,
    ChannelType,
    Content,
    Entity,
    IncomingMessage,
    Memory,
    PlatformAdapter,
    PlatformReplyChannel,
    Press,
    Reply,
    Room,
    SendError,
    SentMessage,
    ServiceKey,
    TokenClaims,
    TypingIndicator,
    now_ms,
)

from ._events import ChatEvent, Listeners, Partial, Said, Typing
from ._lines import FileRef, Line, file_attachment, file_id_of, line_of
from ._mapping import SOURCE, entity_for, heard, person_name, pressed, room_for, room_id, world_for, world_id
from ._shelf import Shelf, ShelvedFile

if TYPE_CHECKING:
    import asyncio

    from bot.sdk import AgentRuntime

__all__ = ["HISTORY_LINES", "WEB_ADAPTER", "Conversation", "Upload", "WebAdapter"]

_log = logging.getLogger(__name__)

#: Messages of a conversation a page opens with.
HISTORY_LINES = 50
_TYPING_EVERY_S = 4.0


@dataclass(frozen=True, slots=True)
class Conversation:
    """Where a web message goes: one person's DM room with the character."""

    person: str
    room_id: str


@dataclass(frozen=True, slots=True)
class Upload:
    """A file a person sent from the browser."""

    name: str
    content_type: str
    data: bytes


class _Seats(TokenClaims):
    """The web needs no token; each character holds one seat of its own (``web:<agent id>``)."""

    def __init__(self) -> None:
        super().__init__("web seat", "the web platform runs once per character")


class WebAdapter(PlatformAdapter[Conversation, Line, str]):
    """Connects one runtime to the console's Chat page; a reply quotes the message's id."""

    source = SOURCE
    label = "the web"
    where = "conversation"

    def __init__(self, runtime: AgentRuntime) -> None:
        super().__init__(runtime, _Seats, f"web:{runtime.agent_id}")
        self.listeners = Listeners()
        self.shelf = Shelf()
        self._known: set[str] = set()  # people whose rows are written this run

    # -- lifecycle ------------------------------------------------------------------------

    async def connect(self, token: str) -> None:
        await self.runtime.store.create_world(world_for(self.runtime.agent_id))
        if self.runtime.get_service(WEB_ADAPTER) is None:
            self.runtime.register_service(WEB_ADAPTER, self)

    async def disconnect(self) -> None:
        await self.finish_handling()
        self.listeners.close()

    # -- what the console asks --------------------------------------------------------------

    async def open(self, person: str) -> Conversation:
        """The person's conversation, its room and entity written on first use.

        Raises:
            ValueError: not a name a person can give (see :func:`~._mapping.person_name`).
        """
        name = person_name(person)
        conversation = Conversation(name, room_id(self.runtime.agent_id, name))
        if name not in self._known:
            agent, store = self.runtime.agent_id, self.runtime.store
            entity = entity_for(agent, name)
            await store.create_rooms([room_for(agent, name, self.name)])
            await store.create_entities([entity])
            await store.add_participants([entity.id, agent], conversation.room_id)
            self._known.add(name)
        return conversation

    async def history(self, conversation: Conversation, count: int = HISTORY_LINES) -> list[Line]:
        """The conversation's last ``count`` stored messages, oldest first."""
        stored = await self.runtime.store.get_memories(table="messages", room_id=conversation.room_id, count=count)
        agent = self.runtime.agent_id
        return [line_of(m, agent, self.name, conversation.person) for m in sorted(stored, key=_order)]

    @contextlib.contextmanager
    def listen(self, conversation: Conversation) -> Iterator[asyncio.Queue[ChatEvent]]:
        """The conversation's events for as long as the block runs (see :class:`~._events.Listeners`)."""
        with self.listeners.listen(conversation.room_id) as queue:
            yield queue

    def file(self, file_id: str) -> ShelvedFile | None:
        return self.shelf.get(file_id)

    async def hear(self, conversation: Conversation, text: str, uploads: Sequence[Upload] = ()) -> Line:
        """What the person typed and uploaded: shown to the pages watching, then answered in the
        background (the answer comes as events). Its line."""
        files = [self.shelf.put(u.name, u.content_type, u.data) for u in uploads]
        message = heard(self.runtime.agent_id, conversation.person, text, files)
        return self._receive(conversation, message)

    async def press(self, conversation: Conversation, under: str, value: str) -> Line | None:
        """A press of the button carrying ``value`` under the character's message ``under``; None
        when that message is not the character's in this conversation, or has no such button."""
        found = await self.runtime.store.get_memories_by_ids([under], "messages")
        said = found[0] if found else None
        if said is None or said.room_id != conversation.room_id or said.entity_id != self.runtime.agent_id:
            return None
        buttons = [b for b in said.content.buttons or () if b.value is not None]
        if not any(b.value == value for b in buttons):
            return None
        message = pressed(self.runtime.agent_id, conversation.person, Press.find(value, buttons), under)
        return self._receive(conversation, message)

    async def clear(self, conversation: Conversation) -> None:
        """The person asked to start over: CHANNEL_CLEARED for their conversation (the core
        plugin deletes its messages, as elizaOS's web client's "clear" does); what the character
        learnt about them (facts, relationships) stays."""
        await self.runtime.emit(ChannelCleared(room_id=conversation.room_id, source=SOURCE))

    def _receive(self, conversation: Conversation, message: Memory) -> Line:
        """Hand ``message`` to the runtime in a task of its own; its line, shown to the pages.

        Raises:
            SendError: the character is stopping (or stopped) here: nothing was heard.
        """
        channel = _PageChannel(self, conversation, message)
        handling = self.runtime.receive(IncomingMessage(message, channel))
        try:
            task = self.runtime.create_task(handling, "web:message")
        except RuntimeError:  # the runtime is closing
            handling.close()
            raise SendError(f"{self.name} is stopping here; try again in a moment") from None
        self.track_handling(task)
        line = line_of(message, self.runtime.agent_id, self.name, conversation.person)
        self.listeners.publish(conversation.room_id, Said(line))
        return line

    # -- sending ----------------------------------------------------------------------------

    async def send_native(self, target: Conversation, text: str, reply: Reply, quoting: str | None) -> list[Line]:
        files: list[FileRef] = []
        for file in reply.files:
            try:
                data = await file.read()
            except OSError as exc:
                _log.warning("%s: could not read %s to send it: %s", self.name, file.filename, exc.strerror or exc)
                continue
            files.append(self.shelf.put(file.filename, file.content_type, data))
        if not text.strip() and not files:
            return []
        line = Line(
            id=str(uuid.uuid4()),
            author=self.name,
            from_character=True,
            text=text,
            created_at=now_ms(),
            files=tuple(files),
            # No menus on the page: a menu's options are buttons, each a choice of one.
            buttons=(*(reply.menu.options if reply.menu is not None else ()), *reply.buttons),
        )
        return [line]  # shown once stored (remember_sent): a press on it then finds it

    async def remember_sent(
        self,
        sent: list[Line],
        reply: Reply,
        room_id: str,
        world_id: str | None,
        *,
        in_reply_to: str | None = None,
    ) -> list[Memory]:
        memories = await super().remember_sent(sent, reply, room_id, world_id, in_reply_to=in_reply_to)
        for line in sent:
            self.listeners.publish(room_id, Said(line))
        return memories

    def record_of_sent(self, message: Line) -> SentMessage:
        attachments = tuple(file_attachment(f) for f in message.files)
        return SentMessage(
            id=message.id,
            text=message.text,
            created_at=message.created_at,
            content=Content(source=SOURCE, channel_type=ChannelType.DM, attachments=attachments or None),
        )

    def describe_send(self, target: Conversation, quoting: str | None) -> str:
        answer = f" to message {quoting}" if quoting else ""
        return f"a message to {target.person} on the web{answer}"

    async def fetch_attachment(self, quoting: str | None, attachment: Mapping[str, object]) -> bytes:
        url = attachment.get("url")
        file_id = file_id_of(url) if isinstance(url, str) else None
        found = self.shelf.get(file_id) if file_id else None
        if found is None:
            raise LookupError("the web platform no longer holds that file")
        return found.data

    # -- where the Messenger sends -------------------------------------------------------------

    async def room_target(self, room: Room) -> Conversation:
        if not room.channel_id:
            raise SendError("that web conversation has no person")
        return await self.open(room.channel_id)

    async def entity_target(self, entity: Entity, user_id: str) -> tuple[Conversation, str, str | None]:
        conversation = await self.open(user_id)
        return conversation, conversation.room_id, world_id(self.runtime.agent_id)

    async def reply_target(self, message: Memory, text: str) -> tuple[Conversation, str | None] | None:
        room = await self.runtime.store.get_room(message.room_id)
        if room is None or room.source != SOURCE or not room.channel_id:
            _log.warning("%s: no web conversation for a reply to message %s", self.name, message.id)
            return None
        return await self.open(room.channel_id), message.id


def _order(memory: Memory) -> tuple[int, str]:
    return memory.created_at or 0, memory.id or ""


class _PageChannel(PlatformReplyChannel[Conversation, Line, str]):
    """The reply channel of a message from the Chat page: the reply is streamed to the pages
    watching as the model writes it, then sent whole."""

    streams = True

    def __init__(self, adapter: WebAdapter, conversation: Conversation, incoming: Memory) -> None:
        def show_typing() -> None:
            adapter.listeners.publish(conversation.room_id, Typing())

        async def typing_once() -> None:
            show_typing()

        super().__init__(
            adapter,
            conversation,
            incoming.id,
            incoming,
            TypingIndicator(adapter.runtime, typing_once, every_s=_TYPING_EVERY_S, job="web:typing"),
        )
        self.room_id = conversation.room_id
        self.listeners = adapter.listeners

    def stream(self, text_so_far: str) -> None:
        self.listeners.publish(self.room_id, Partial(text_so_far))


#: The key the web adapter is offered under in its runtime (the console's Chat page finds it so).
WEB_ADAPTER: ServiceKey[WebAdapter] = ServiceKey(SOURCE)
