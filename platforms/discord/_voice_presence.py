"""Who is in a character's voice channel, and what follows from it.

- Joining by itself: a character with a voice channel of its own (DISCORD_VOICE_CHANNEL_ID)
  joins it when a person enters it, or at start when people are already there; with
  DISCORD_VOICE_AUTO_JOIN it goes into whichever voice channel of a server a person enters. Only
  while it is in no voice channel of that server: one it was asked into (JOIN_VOICE, ``/join``)
  comes first. A failed join is logged and tried again only when a person next enters.
- Left alone: when no person is in the channel (other bots, other characters included, are not
  company: two characters would otherwise keep each other in an empty channel for ever), the
  character leaves after ``DISCORD_VOICE_ALONE_S`` (0: never); someone back within that time
  keeps it there. With DISCORD_VOICE_STAY its own channel is the exception: it waits there.
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

import discord

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter
    from ._config import DiscordConfig

__all__ = ["AloneTimer", "Company", "alone_with", "channel_to_join", "company", "voice_state_changed"]

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


def channel_to_join(guild: Any, config: DiscordConfig, me_id: int, entered: Any = None) -> Any:
    """The voice channel of ``guild`` the character goes into by itself, or ``None``.

    ``entered`` is the channel a person just entered: it is joined if it is the character's own
    (DISCORD_VOICE_CHANNEL_ID) or, with DISCORD_VOICE_AUTO_JOIN, one it may speak in. Without
    one (at start, or after leaving an empty channel): its own channel if a person is there (with
    DISCORD_VOICE_STAY, always), else with DISCORD_VOICE_AUTO_JOIN the one with the most people.
    """
    own = guild.get_channel(int(config.voice_channel_id)) if config.voice_channel_id else None
    if not isinstance(own, discord.VoiceChannel | discord.StageChannel):
        own = None  # elsewhere, or not a voice channel (said at start: VoiceManager.auto_join)
    if entered is not None:
        if own is not None and entered.id == own.id:
            return own
        return entered if config.voice_auto_join and _free_to_enter(entered, me_id) else None
    if own is not None and (config.voice_stay or company(own, me_id).people):
        return own
    if not config.voice_auto_join:
        return None
    crowds = [(len(company(c, me_id).people), c) for c in guild.voice_channels if _free_to_enter(c, me_id)]
    crowds = [(n, c) for n, c in crowds if n]
    return max(crowds, key=lambda crowd: crowd[0])[1] if crowds else None


def _free_to_enter(channel: Any, me_id: int) -> bool:
    """Whether DISCORD_VOICE_AUTO_JOIN goes into ``channel``: a voice channel (not a stage, not the
    server's AFK channel) it may connect to and speak in. The others are passed over quietly: a
    server fences the character off with permissions, and every entry would otherwise log."""
    guild = channel.guild
    if not isinstance(channel, discord.VoiceChannel) or channel == guild.afk_channel:
        return False
    me = guild.get_member(me_id)
    permissions = channel.permissions_for(me) if me is not None else None
    return bool(permissions is not None and permissions.connect and permissions.speak)


async def voice_state_changed(
    adapter: DiscordAdapter, member: discord.Member, before: discord.VoiceState, after: discord.VoiceState
) -> None:
    """Someone's voice state changed in a server: join a person who entered a channel (see
    :func:`channel_to_join`), follow a move of the bot, end a session someone else disconnected,
    and (re)consider being alone."""
    voice = adapter.voice
    guild_id = member.guild.id
    session = voice.sessions.get(guild_id)
    if session is None:
        entered = after.channel if before.channel != after.channel else None
        if entered is None or member.id == adapter.bot_id:
            return
        if member.bot:
            _log.debug(
                "%s: %s, a bot, entered voice channel %s: not company", adapter.name, member.display_name, entered.name
            )
            return
        await voice.join_by_itself(member.guild, entered)
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
