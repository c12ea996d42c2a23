"""Letting the daemon's characters hear each other in Telegram groups.

Telegram never delivers one bot's group messages to another bot. When one character sends a
message in a chat where others of this daemon's characters are members, the relay hands that
message to each of them, as if Telegram had delivered it; from there it is an ordinary message
from a bot, so the loop guard applies. Each daemon has one relay (``runtime.shared.one(Relay)``):
it never hands a message to another daemon's characters.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from telegram import Message

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["Relay"]

_log = logging.getLogger(__name__)


class Relay:
    """The Telegram characters of one daemon, by bot."""

    def __init__(self) -> None:
        self._adapters: dict[int, TelegramAdapter] = {}  # by bot user id

    def join(self, adapter: TelegramAdapter) -> None:
        self._adapters[adapter.bot_id] = adapter

    def leave(self, adapter: TelegramAdapter) -> None:
        if self._adapters.get(adapter.bot_id) is adapter:
            del self._adapters[adapter.bot_id]

    def deliver(self, sender: TelegramAdapter, messages: list[Message]) -> None:
        """Hand what ``sender`` just sent to every other character in the same chat (in the
        background: the sender's reply does not wait for the others to answer)."""
        if not messages or messages[0].chat.type == "private":
            return
        for adapter in list(self._adapters.values()):
            if adapter is not sender:
                adapter.runtime.create_task(self._hand_over(adapter, messages), "telegram:relay")

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
