"""Letting the troupe's characters hear each other in Telegram groups.

Telegram never delivers one bot's group messages to another bot. When one character sends a
message in a chat where other characters are members, the relay hands that message to each of
them, as if Telegram had delivered it; from there it is an ordinary message from a bot, so the
loop guard applies. Each daemon has one relay (``runtime.shared.instance_of(Relay)``).

The daemon's own characters get the message at once. When several daemons serve the troupe
(PostgreSQL), it is also posted on the troupe's bus (:mod:`bot.kernel.bus`) — the messages as Telegram
returned them, less anything about the people in the chat — and each other daemon's relay hands
it to its characters. A
character that starts serving on a daemon (it moved there, or its daemon restarted) is handed
what was said in its chats in the last ``CATCH_UP_S`` seconds: what it had already heard is
recognised as such by the store (each message is handled once per character, across daemons),
so it hears what it missed while nobody served it, and nothing twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from telegram import Message

from bot.sdk import Bus, Post, StoreError

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["CATCH_UP_S", "TOPIC", "Relay"]

_log = logging.getLogger(__name__)

TOPIC = "telegram:relay"
#: Seconds of the troupe's relayed messages a character starting on a daemon is handed.
CATCH_UP_S = 120.0
_POST_S = 5.0


@dataclass(frozen=True, slots=True)
class _Said:
    """What one bot sent, as posted on the bus."""

    sender: int  # the bot's user id
    messages: list[dict[str, Any]]  # Telegram's Message objects, as JSON (see _for_the_bus)

    def payload(self) -> str:
        return json.dumps({"sender": self.sender, "messages": self.messages})

    @classmethod
    def read(cls, post: Post) -> _Said | None:
        try:
            data = json.loads(post.payload)
            return cls(int(data["sender"]), [dict(m) for m in data["messages"]])
        except (ValueError, KeyError, TypeError):
            _log.warning("a relayed Telegram message from %s could not be read; it is skipped", post.origin)
            return None


class Relay:
    """The Telegram characters of one daemon, by bot."""

    def __init__(self) -> None:
        self._adapters: dict[int, TelegramAdapter] = {}  # by bot user id
        self._bus: Bus | None = None  # subscribed to, once a character joined

    def join(self, adapter: TelegramAdapter) -> None:
        self._adapters[adapter.bot_id] = adapter
        bus = adapter.runtime.shared.bus
        if not bus.spans_daemons:
            return
        if self._bus is None:
            self._bus = bus
            bus.subscribe(TOPIC, self._on_post)
        adapter.runtime.create_task(self._catch_up(adapter, bus), "telegram:relay")

    def leave(self, adapter: TelegramAdapter) -> None:
        if self._adapters.get(adapter.bot_id) is adapter:
            del self._adapters[adapter.bot_id]

    async def deliver(self, sender: TelegramAdapter, messages: list[Message]) -> None:
        """Hand what ``sender`` just sent to every other character in the same chat (in the
        background: the sender's reply does not wait for the others to answer); with other
        daemons, post it for theirs."""
        if not messages or messages[0].chat.type == "private":
            return
        for adapter in list(self._adapters.values()):
            if adapter is not sender:
                adapter.runtime.create_task(self._hand_over(adapter, messages), "telegram:relay")
        bus = sender.runtime.shared.bus
        if bus.spans_daemons:
            said = _Said(sender.bot_id, [_for_the_bus(m) for m in messages])
            try:
                async with asyncio.timeout(_POST_S):
                    await bus.post(TOPIC, said.payload())
            except (StoreError, TimeoutError) as exc:
                _log.warning(
                    "%s: the characters of the other daemons will not hear what was just said in chat %s: %s",
                    sender.name,
                    messages[0].chat.id,
                    str(exc) or "the database did not answer in time",
                )

    async def _on_post(self, post: Post) -> None:
        """Another daemon's character said something: hand it to this daemon's characters."""
        said = _Said.read(post)
        if said is None:
            return
        for adapter in list(self._adapters.values()):
            messages = _messages(adapter, said)
            if messages:
                adapter.runtime.create_task(self._hand_over(adapter, messages), "telegram:relay")

    async def _catch_up(self, adapter: TelegramAdapter, bus: Bus) -> None:
        """What the troupe's characters said lately, in order, for a character that just started
        here (what it heard before is not handled again)."""
        try:
            posts = await bus.recent(TOPIC, CATCH_UP_S)
        except StoreError as exc:
            _log.warning("%s: could not catch up on what the other characters said lately: %s", adapter.name, exc)
            return
        for post in posts:
            said = _Said.read(post)
            messages = _messages(adapter, said) if said is not None else []
            if messages:
                await self._hand_over(adapter, messages)

    @staticmethod
    async def _hand_over(adapter: TelegramAdapter, messages: list[Message]) -> None:
        try:
            if not await adapter.is_member(messages[0].chat.id):
                return
            await adapter.on_relayed(messages)
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("%s: could not take a relayed Telegram message", adapter.name)


# Of what a character sent, what another needs to hear it as Telegram would have delivered it.
_KEPT = ("message_id", "date", "chat", "from", "text", "caption", "entities", "message_thread_id", "is_topic_message")
# Of the message it answered: which one (or album), where, and whether it was that other character's.
_QUOTED_KEPT = ("message_id", "date", "chat", "message_thread_id", "forum_topic_created", "media_group_id")


def _for_the_bus(message: Message) -> dict[str, Any]:
    """``message``, sent by a character, as the relay posts it: its words, its sender, its chat
    and topic, and which bots it mentions or answers — nothing of the people in the chat (what a
    person said, who they are), which the bus would keep for minutes where ``troupe memory
    forget`` does not look."""
    sent = message.to_dict()
    kept = {key: sent[key] for key in _KEPT if key in sent}
    for entity in kept.get("entities", []):
        if not entity.get("user", {}).get("is_bot", True):
            del entity["user"]  # a text mention of a person
    quoted = sent.get("reply_to_message")
    if isinstance(quoted, dict):
        kept["reply_to_message"] = {key: quoted[key] for key in _QUOTED_KEPT if key in quoted}
        if quoted.get("from", {}).get("is_bot"):
            kept["reply_to_message"]["from"] = quoted["from"]
    return kept


def _messages(adapter: TelegramAdapter, said: _Said) -> list[Message]:
    """What another bot said, as ``adapter``'s bot would have received it (nothing for its own
    messages, or a character that is closing)."""
    if said.sender == adapter.bot_id or adapter.app is None or not said.messages:
        return []
    try:
        messages = [Message.de_json(m, adapter.app.bot) for m in said.messages]
    except (ValueError, KeyError, TypeError):
        _log.warning("%s: a relayed Telegram message could not be read; it is skipped", adapter.name)
        return []
    if messages[0].chat.type == "private":
        return []
    return messages
