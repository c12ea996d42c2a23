"""Where Telegram keeps a message: the block a memory's metadata holds under the platform's name
(``"telegram"``), in its ``extra`` (the kernel knows no platform). Read and written here only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from telegram import Chat, User

from bot.sdk import FrozenMap, Memory, MemoryMetadata

__all__ = ["TelegramMessageRef"]

_KEY: Final = "telegram"
"""The block's key in the metadata: the platform's name (``SOURCE``)."""


def _whole(value: object) -> int | None:
    """A stored id as a number; None for none (an id is never 0)."""
    return int(value) if isinstance(value, (int, str)) and value else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class TelegramMessageRef:
    """A message's place on Telegram: its chat, its id there, its sender, its forum topic."""

    chat_id: str
    chat_type: str | None
    """``private``, ``group``, ``supergroup`` or ``channel``."""
    message_id: int | None
    """Telegram's id of the message, unique within its chat."""
    user_id: str | None
    """Who sent it."""
    thread_id: int | None
    """Its forum topic; None outside forum topics (stored as ``null``)."""
    callback_query_id: str | None = None
    """The press it is, for a press of a button."""
    media_group_id: str | None = None
    """The album it is, for an album's parts heard as one message."""
    album_message_ids: tuple[int, ...] | None = None
    """Telegram's ids of the album's parts, in the order sent."""

    @classmethod
    def heard(
        cls, chat: Chat, message_id: int, sender: User, thread_id: int | None, *, callback_query_id: str | None = None
    ) -> TelegramMessageRef:
        """Where a message (or a press under it) was heard: ``message_id`` in ``chat`` from ``sender``."""
        return cls(str(chat.id), str(chat.type), message_id, str(sender.id), thread_id, callback_query_id)

    @classmethod
    def of(cls, memory: Memory) -> TelegramMessageRef | None:
        """Where Telegram keeps ``memory``; None for a memory from elsewhere, or without its chat."""
        block = memory.metadata.extra.get(_KEY)
        if not isinstance(block, Mapping) or not block.get("chatId"):
            return None
        parts = block.get("albumMessageIds")
        return cls(
            chat_id=str(block["chatId"]),
            chat_type=_text(block.get("chatType")),
            message_id=_whole(block.get("messageId")),
            user_id=_text(block.get("userId")),
            thread_id=_whole(block.get("threadId")),
            callback_query_id=_text(block.get("callbackQueryId")),
            media_group_id=_text(block.get("mediaGroupId")),
            album_message_ids=tuple(parts)
            if isinstance(parts, list) and all(isinstance(p, int) for p in parts)
            else None,
        )

    def to_json(self) -> dict[str, object]:
        """The block as stored: its five keys always (``threadId`` ``null`` outside forum
        topics), the others when set."""
        out: dict[str, object] = {
            "chatId": self.chat_id,
            "chatType": self.chat_type,
            "messageId": self.message_id,
            "userId": self.user_id,
            "threadId": self.thread_id,
        }
        if self.callback_query_id is not None:
            out["callbackQueryId"] = self.callback_query_id
        if self.media_group_id is not None:
            out["mediaGroupId"] = self.media_group_id
        if self.album_message_ids is not None:
            out["albumMessageIds"] = list(self.album_message_ids)
        return out

    def kept_in(self, metadata: MemoryMetadata) -> MemoryMetadata:
        """``metadata`` holding this block (in place of any it held)."""
        return replace(metadata, extra=FrozenMap({**metadata.extra, _KEY: self.to_json()}))
