"""Who is in a character's voice channel, and what follows from it.

- Left alone: when no person is in the channel (other bots, other characters included, are not
  company: two characters would otherwise keep each other in an empty channel for ever), the
  character leaves after ``DISCORD_VOICE_ALONE_S`` (0: never). The channel it was told to sit in
  (DISCORD_VOICE_CHANNEL_ID) is the exception: it waits there for people.
- Moved: when the bot's own voice state changes channel (an admin dragged it), its voice
  session follows and the room it hears and speaks in becomes the new channel's.
- Disconnected by someone else: the session ends, as if it had left.
- One to one: speech from the only other member of the channel is for the character, as a DM is.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import discord

    from ._adapter import DiscordAdapter

__all__ = ["AloneTimer", "Company", "alone_with", "company", "voice_state_changed"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Company:
    """Who is in a voice channel besides the character: display names (an uncached member is
    counted as a person, by id)."""

    people: tuple[str, ...]
    bots: tuple[str, ...]
    ids: tuple[int, ...]


def company(channel: Any, me_id: int) -> Company:
    """Everyone in ``channel`` (a voice channel) but the bot ``me_id``, from discord.py's cache of
    voice states (kept with the ``voice_states`` intent)."""
    people: list[str] = []
    bots: list[str] = []
    ids: list[int] = []
    for user_id in channel.voice_states:
        if user_id == me_id:
            continue
        ids.append(user_id)
        member = channel.guild.get_member(user_id)
        if member is not None and member.bot:
            bots.append(member.display_name)
        else:
            people.append(member.display_name if member is not None else str(user_id))
    return Company(tuple(people), tuple(bots), tuple(ids))


def alone_with(channel: Any, me_id: int, user_id: int) -> bool:
    """Whether ``user_id`` is the only other member of ``channel``."""
    return company(channel, me_id).ids == (user_id,)


async def voice_state_changed(
    adapter: DiscordAdapter, member: discord.Member, before: discord.VoiceState, after: discord.VoiceState
) -> None:
    """Someone's voice state changed in a server: follow a move of the bot, end a session someone
    else disconnected, and (re)consider being alone."""
    voice = adapter.voice
    guild_id = member.guild.id
    session = voice.sessions.get(guild_id)
    if session is None:
        return
    if member.id == adapter.bot_id:
        if after.channel is not None and after.channel.id != session.channel.id:
            await voice.follow(after.channel)
        elif after.channel is None and before.channel is not None and before.channel.id == session.channel.id:
            _log.info("%s: disconnected from voice channel %s by someone else", adapter.name, session.channel.name)
            await voice.disconnected(guild_id)
            return
    voice.consider_company(guild_id)


class AloneTimer:
    """One session's countdown to leaving an empty channel."""

    def __init__(self) -> None:
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def cancel(self) -> None:
        # The countdown itself ends its session (which cancels the timer): never cancel oneself.
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
        self.task = None
