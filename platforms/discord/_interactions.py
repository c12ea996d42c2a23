"""Every interaction the bot receives, sorted: a slash command is the command tree's to answer
and is announced here (INTERACTION_RECEIVED with its :class:`SlashCommand`); a troupe button,
menu or modal is ``_presses.py``'s; anything else (another view's components) is left alone.

``/chat`` and ``/ask`` are announced by the pipeline instead, after the MESSAGE_RECEIVED of the
message they become (``_chat.py`` hands the command over with it). A command in a channel the
character does not listen in (CHANNEL_IDS) is not announced, as a press there is not heard.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import InteractionReceived, SlashCommand

from ._mapping import SOURCE, discord_id
from ._presses import take_press

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["PIPELINE_COMMANDS", "announce_command", "interaction_used", "slash_command"]

#: Commands that talk to the character: announced with the message they become.
PIPELINE_COMMANDS = frozenset({"chat", "ask"})
_SUBCOMMAND, _GROUP = 1, 2  # option types that hold options of their own


def _options(given: Iterable[Any]) -> dict[str, object]:
    """The options given, by name; a subcommand's own taken in its place."""
    found: dict[str, object] = {}
    for option in given:
        if not isinstance(option, dict):
            continue
        if option.get("type") in (_SUBCOMMAND, _GROUP):
            found.update(_options(option.get("options") or ()))
        elif isinstance(option.get("value"), (str, int, float, bool)):
            found[str(option.get("name"))] = option["value"]
    return found


def slash_command(agent_id: str, interaction: discord.Interaction) -> SlashCommand:
    """The slash command ``interaction`` uses, as troupe's events carry it (pure)."""
    data: dict[str, Any] = dict(interaction.data or {})
    guild_id = interaction.guild_id
    return SlashCommand(
        name=str(data.get("name") or ""),
        options=_options(data.get("options") or ()),
        entity_id=discord_id(agent_id, interaction.user.id),
        room_id=discord_id(agent_id, interaction.channel_id or 0),
        world_id=discord_id(agent_id, guild_id) if guild_id is not None else None,
        interaction_id=str(interaction.id),
    )


async def announce_command(adapter: DiscordAdapter, interaction: discord.Interaction) -> None:
    """INTERACTION_RECEIVED for a slash command used where the character listens."""
    if interaction.channel is None or not adapter.listens_in(interaction.channel):
        return
    command = slash_command(adapter.runtime.agent_id, interaction)
    await adapter.runtime.emit(InteractionReceived(source=SOURCE, command=command))


async def interaction_used(adapter: DiscordAdapter, interaction: discord.Interaction) -> None:
    """Sort one interaction (see the module docstring); the command itself runs in the tree."""
    if interaction.type is discord.InteractionType.application_command:
        data: dict[str, Any] = dict(interaction.data or {})
        if data.get("name") not in PIPELINE_COMMANDS:
            await announce_command(adapter, interaction)
        return
    await take_press(adapter, interaction)
