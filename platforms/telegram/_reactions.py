"""The bot's own reactions on Telegram (``setMessageReaction``).

Telegram lets a bot react only with a fixed set of emoji (python-telegram-bot's
:class:`~telegram.constants.ReactionEmoji`; the Bot API's ``ReactionTypeEmoji``), one per message.
An emoji written with or without its presentation selector (``❤️`` and ``❤``) is the same
reaction; one outside the set is refused before any request, with Telegram's own reason, so the
log says which emoji and why rather than a bare "REACTION_INVALID".
"""

from __future__ import annotations

from telegram import Bot, ReactionTypeEmoji
from telegram.constants import ReactionEmoji
from telegram.error import BadRequest

from bot.sdk import Deadline

from ._outbound import with_retries

__all__ = ["react", "reaction_emoji"]

_SELECTOR = "\ufe0f"  # VARIATION SELECTOR-16: asks for the emoji form, same reaction either way


def _plain(emoji: str) -> str:
    return emoji.strip().replace(_SELECTOR, "")


def reaction_emoji(emoji: str) -> str | None:
    """``emoji`` as Telegram spells it in its set of reactions; None when bots may not use it."""
    wanted = _plain(emoji)
    return next((e.value for e in ReactionEmoji if _plain(e.value) == wanted), None) if wanted else None


async def react(bot: Bot, chat_id: int, message_id: int, emoji: str, *, deadline_s: float) -> None:
    """Set the bot's reaction on message ``message_id`` of ``chat_id`` to ``emoji`` (it replaces
    any the bot had there: a bot has one), waiting out flood control as a send does.

    Raises:
        BadRequest: ``emoji`` is not one Telegram lets bots react with, or Telegram refused it
            (the message deleted, reactions turned off in the chat).
        SendGaveUp: not taken within ``deadline_s``.
    """
    allowed = reaction_emoji(emoji)
    if allowed is None:
        raise BadRequest(f"Telegram lets bots react only with its own set of emoji; {emoji} is not one of them")
    reaction = [ReactionTypeEmoji(allowed)]
    await with_retries(lambda: bot.set_message_reaction(chat_id, message_id, reaction), Deadline.after(deadline_s))
