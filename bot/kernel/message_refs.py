"""A message as its platform names it — a Discord or Telegram link, or a bare platform id — and
the ids troupe keeps it under, for ``troupe why`` and the console's "Why" page.

troupe keeps a message under an id of its own, one per character:
``unique_uuid(agent_id, "discord:<message id>")`` for Discord, and
``unique_uuid(agent_id, "telegram:message:<chat id>:<message id>")`` for Telegram, whose message
ids are unique only within a chat (the platforms' mappings make them; tests check these match).
A Telegram link by a chat's public name does not say the chat's number, nor does a bare id, so
those are looked for in every Telegram chat the character is in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from bot.kernel.ids import unique_uuid

__all__ = ["Platform", "PlatformRef", "parse_platform_ref"]


class Platform(StrEnum):
    """Where a message reference comes from; ANY for a bare id, which could be either's."""

    DISCORD = "discord"
    TELEGRAM = "telegram"
    ANY = "any"


_DISCORD_LINK = re.compile(
    r"^(?:https?://)?(?:(?:www|ptb|canary)\.)?discord(?:app)?\.com/channels/(?:\d+|@me)/(\d+)/(\d+)/?(?:[?#].*)?$",
    re.IGNORECASE,
)
# t.me/c/<chat>/<id> (a private chat, by number) or t.me/<name>/<id> (a public one, by name);
# either may name a forum topic before the message: t.me/c/<chat>/<topic>/<id>.
_TELEGRAM_PRIVATE = re.compile(r"^(?:https?://)?(?:t|telegram)\.me/c/(\d+)/(?:\d+/)?(\d+)/?(?:[?#].*)?$", re.IGNORECASE)
_TELEGRAM_PUBLIC = re.compile(
    r"^(?:https?://)?(?:t|telegram)\.me/([A-Za-z]\w{3,31})/(?:\d+/)?(\d+)/?(?:[?#].*)?$", re.IGNORECASE
)
_BARE_ID = re.compile(r"^\d{1,20}$")


@dataclass(frozen=True, slots=True)
class PlatformRef:
    """A message named as its platform names it."""

    platform: Platform
    message: str
    """The platform's id of the message."""
    chat: str | None = None
    """Telegram: the chat's number (``-100…``), when the link says it."""
    chat_name: str | None = None
    """Telegram: the chat's public name, from a ``t.me/<name>/<id>`` link."""

    @property
    def needs_chats(self) -> bool:
        """Whether the ids depend on which Telegram chats the character is in (no chat number)."""
        return self.platform is not Platform.DISCORD and self.chat is None

    def __str__(self) -> str:
        if self.platform is Platform.DISCORD:
            return f"Discord message {self.message}"
        if self.chat is not None:
            return f"Telegram message {self.message} of chat {self.chat}"
        if self.chat_name is not None:
            return f"Telegram message {self.message} of @{self.chat_name} (looked for in every Telegram chat of the characters)"
        return f"message {self.message} (a Discord id, or a Telegram id in any of the characters' chats)"

    def message_ids(self, agent_id: str, telegram_chats: Iterable[str] = ()) -> list[str]:
        """The ids agent ``agent_id`` would keep this message under; ``telegram_chats`` are the
        numbers of its Telegram chats, for a reference that does not say its chat."""
        ids: list[str] = []
        if self.platform in (Platform.DISCORD, Platform.ANY):
            ids.append(unique_uuid(agent_id, f"discord:{self.message}"))
        if self.platform in (Platform.TELEGRAM, Platform.ANY):
            chats = [self.chat] if self.chat is not None else list(dict.fromkeys(telegram_chats))
            ids += [unique_uuid(agent_id, f"telegram:message:{chat}:{self.message}") for chat in chats]
        return ids


def parse_platform_ref(text: str) -> PlatformRef | None:
    """``text`` as a platform's reference to a message, or None when it is none (a troupe id)."""
    text = text.strip()
    if found := _DISCORD_LINK.match(text):
        return PlatformRef(Platform.DISCORD, found.group(2))
    if found := _TELEGRAM_PRIVATE.match(text):
        # A private chat's link drops the "-100" every supergroup and channel number starts with.
        return PlatformRef(Platform.TELEGRAM, found.group(2), chat=f"-100{found.group(1)}")
    if found := _TELEGRAM_PUBLIC.match(text):
        return PlatformRef(Platform.TELEGRAM, found.group(2), chat_name=found.group(1))
    if _BARE_ID.match(text):
        return PlatformRef(Platform.ANY, text)
    return None
