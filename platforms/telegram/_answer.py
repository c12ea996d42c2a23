"""The reply channel of one Telegram message (:class:`bot.messages.ReplyChannel`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from telegram import MaybeInaccessibleMessage

from bot.messages import QuietChannel
from bot.types import JSON, Memory

from ._listening import download
from ._mapping import Translated
from ._outbound import ChatTarget
from ._speaking import Indicator

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["Answer"]


class Answer(QuietChannel):
    """Replies quote the message, in its topic, after "typing…" (``typing_indicator``); with
    ``TELEGRAM_VOICE_REPLIES`` they are also said as a voice note."""

    def __init__(
        self, adapter: TelegramAdapter, message: MaybeInaccessibleMessage, seen: Translated, typing: Indicator
    ) -> None:
        self.adapter, self.message, self.incoming = adapter, message, seen.memory
        self.thread = seen.thread_id
        self.typing_indicator = typing
        mode = adapter.config.voice_replies
        self.speak = mode == "always" or (mode == "auto" and bool(seen.memory.content.get("isVoiceMessage")))

    async def send(self, content: JSON) -> list[Memory]:
        await self.typing_indicator.stop()
        text = str(content.get("text") or "").strip()
        if not text and not content.get("files"):
            return []
        adapter, message, incoming = self.adapter, self.message, self.incoming
        target = ChatTarget(message.chat.id, self.thread, message.chat.title)
        memories, whole = await adapter.answer(target, text, content, message.message_id, incoming)
        if self.speak and text and memories and whole:
            await adapter._speak(message.chat, text, memories[-1], reply_to=message.message_id, thread=self.thread)
        return memories

    async def typing(self) -> None:
        await self.typing_indicator.start()

    async def fetch(self, attachment: Mapping[str, object]) -> bytes:
        assert self.adapter.app is not None
        return await download(self.adapter.app.bot, attachment)
