"""The reply channel of one Discord message (:class:`bot.messages.ReplyChannel`): replies quote
it, "typing…" shows while one is prepared, and in a voice session whose text side its channel
is, replies are said aloud too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import discord

from bot.adapters import TypingIndicator
from bot.messages import QuietChannel
from bot.types import JSON, Memory

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["Answer", "TYPING_EVERY_S"]

TYPING_EVERY_S = 5.0  # Discord shows "typing…" for about 10 s; discord.py renews it every 5


class Answer(QuietChannel):
    """The reply channel of one Discord message."""

    def __init__(self, adapter: DiscordAdapter, message: discord.Message, incoming: Memory) -> None:
        self.adapter, self.message, self.incoming = adapter, message, incoming
        self.typing_indicator = TypingIndicator(
            adapter.runtime, message.channel.typing, every_s=TYPING_EVERY_S, job="discord:typing"
        )

    async def send(self, content: JSON) -> list[Memory]:
        await self.typing_indicator.stop()
        adapter, incoming = self.adapter, self.incoming
        text = str(content.get("text") or "")
        memories, whole = await adapter.answer(self.message.channel, text, content, self.message, incoming)
        session = adapter.voice.session_for_text_channel(self.message.channel.id)
        if session is not None and whole and text.strip():  # in voice with this channel as its text side: say it too
            session.say(text)
        return memories

    async def typing(self) -> None:
        await self.typing_indicator.start()

    async def fetch(self, attachment: Mapping[str, object]) -> bytes:
        for item in self.message.attachments:
            if str(item.id) == str(attachment.get("id")):
                return await item.read()
        raise LookupError("no such attachment on the message")
