"""``/troupe``: see and set what the character does in this channel, without asking the model;
``/summarize [messages]``: a summary of the channel's last messages; ``/chat message:<text>`` and
``/ask question:<text>``: talk to the character (``_chat.py``).

``/troupe`` shows whether the character follows the channel, is muted in it, or neither;
``/troupe action:follow|unfollow|mute|unmute`` changes it. Changing it is for the server's
owner and admins (Discord Administrator, or the OWNER/ADMIN role troupe records); in a DM the
person may change it for their own conversation. Answers are ephemeral.

``/summarize`` (``messages``: 1 to 500, default 50) is answered in the channel for everyone to
see (a long summary as a Markdown file after a line on what it covers), after a deferral (the
model takes longer than Discord's 3 s).
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot.sdk import (
    CONVERSATION_SUMMARIES,
    SUMMARY_DEFAULT_COUNT,
    SUMMARY_MAX_COUNT,
    ChannelType,
    Reply,
    Role,
    RoomState,
)

from ._chat import answer_command
from ._mapping import channel_type, discord_id

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["register_commands"]

_log = logging.getLogger(__name__)

#: The longest text /chat and /ask take (Discord's own limit for an option is 6000): a long message.
COMMAND_TEXT_MAX = 4000

_CHANGES: dict[str, RoomState | None] = {
    "follow": RoomState.FOLLOWED,
    "unfollow": None,
    "mute": RoomState.MUTED,
    "unmute": None,
}
# Leaving a state only makes sense from that state: "unfollow" must not undo a mute.
_UNDOES = {"unfollow": RoomState.FOLLOWED, "unmute": RoomState.MUTED}
_DESCRIBE = {
    RoomState.FOLLOWED: "follows this channel: it answers without being addressed",
    RoomState.MUTED: "is muted here: it stays silent unless addressed directly",
    RoomState.STOPPED: "was asked to stay out of this conversation: it stays silent until named again",
    None: "answers when addressed, and otherwise decides for itself",
}


async def _may_change(adapter: DiscordAdapter, interaction: discord.Interaction) -> bool:
    if channel_type(interaction.channel) is ChannelType.DM:
        return True
    user = interaction.user
    if isinstance(user, discord.Member) and user.guild_permissions.administrator:
        return True
    if interaction.guild is None:
        return False
    agent = adapter.runtime.agent_id
    world = await adapter.runtime.store.get_world(discord_id(agent, interaction.guild.id))
    roles = (world.metadata.roles or {}) if world is not None else {}
    return roles.get(discord_id(agent, user.id)) in (Role.OWNER, Role.ADMIN)


async def run_command(adapter: DiscordAdapter, interaction: discord.Interaction, action: str | None) -> str:
    """What ``/troupe [action]`` answers; applies the change when allowed."""
    channel = interaction.channel
    if channel is None or not adapter.listens_in(channel):
        return _not_here(adapter)
    store, agent = adapter.runtime.store, adapter.runtime.agent_id
    room_id = await adapter.ensure_room(channel, dm_with=interaction.user)
    current = await store.get_participant_state(room_id, agent)
    if action is None:
        return f"{adapter.name} {_DESCRIBE[current]}."
    if action not in _CHANGES:
        return f"Unknown action {action!r}; use follow, unfollow, mute or unmute."
    if not await _may_change(adapter, interaction):
        return "Only the server's owner or an admin can change that."
    if action in _UNDOES and current is not _UNDOES[action]:
        return f"Nothing to {action}: {adapter.name} {_DESCRIBE[current]}."
    new = _CHANGES[action]
    if not await store.set_participant_state(room_id, agent, new):
        await store.add_participant(agent, room_id)
        await store.set_participant_state(room_id, agent, new)
    return f"Done: {adapter.name} {_DESCRIBE[new]}."


def _not_here(adapter: DiscordAdapter) -> str:
    return f"{adapter.name} doesn't listen in this channel."


async def summarize_channel(adapter: DiscordAdapter, interaction: discord.Interaction, count: int) -> None:
    """Answer ``/summarize``: the channel's last ``count`` messages summarised, a long summary as a file."""
    channel, summaries = interaction.channel, adapter.runtime.get_service(CONVERSATION_SUMMARIES)
    if channel is None or not adapter.listens_in(channel) or summaries is None:
        await interaction.response.send_message(_not_here(adapter), ephemeral=True)
        return
    await interaction.response.defer(thinking=True)
    try:
        room_id = await adapter.ensure_room(channel, dm_with=interaction.user)
        reply = (await summaries.summarize_room(room_id, count)).reply()
    except Exception:  # noqa: BLE001 - the person gets an answer; the cause goes to the log
        _log.exception("%s: /summarize failed", adapter.name)
        reply = Reply(text="I couldn't summarise this channel: something went wrong on my side.")
    files = [discord.File(io.BytesIO(await f.read()), filename=f.filename) for f in reply.files]
    if files:
        await interaction.followup.send(reply.text, files=files)
    else:
        await interaction.followup.send(reply.text)


def register_commands(adapter: DiscordAdapter, tree: app_commands.CommandTree) -> None:
    @app_commands.command(name="troupe", description=f"What {adapter.name} does in this channel; follow or mute it")
    @app_commands.describe(action="leave empty to see the current state")
    @app_commands.choices(action=[app_commands.Choice(name=name, value=name) for name in _CHANGES])
    async def troupe(interaction: discord.Interaction, action: app_commands.Choice[str] | None = None) -> None:
        answer = await run_command(adapter, interaction, action.value if action else None)
        await interaction.response.send_message(answer, ephemeral=True)

    @app_commands.command(name="summarize", description=f"{adapter.name} sums up this channel's last messages")
    @app_commands.describe(
        messages=f"how many of the last messages (1 to {SUMMARY_MAX_COUNT}; {SUMMARY_DEFAULT_COUNT} if left empty)"
    )
    async def summarize(
        interaction: discord.Interaction,
        messages: app_commands.Range[int, 1, SUMMARY_MAX_COUNT] = SUMMARY_DEFAULT_COUNT,
    ) -> None:
        await summarize_channel(adapter, interaction, messages)

    @app_commands.command(name="chat", description=f"Chat with {adapter.name}")
    @app_commands.describe(message=f"what you say to {adapter.name}")
    async def chat(interaction: discord.Interaction, message: app_commands.Range[str, 1, COMMAND_TEXT_MAX]) -> None:
        await answer_command(adapter, interaction, "chat", "message", message)

    @app_commands.command(name="ask", description=f"Ask {adapter.name} a question")
    @app_commands.describe(question="your question")
    async def ask(interaction: discord.Interaction, question: app_commands.Range[str, 1, COMMAND_TEXT_MAX]) -> None:
        await answer_command(adapter, interaction, "ask", "question", question)

    tree.add_command(troupe)
    tree.add_command(summarize)
    tree.add_command(chat)
    tree.add_command(ask)
    if adapter.config.voice_enabled:
        _register_voice_commands(adapter, tree)


def _register_voice_commands(adapter: DiscordAdapter, tree: app_commands.CommandTree) -> None:
    from ._voice import VoiceError

    @app_commands.command(name="join", description=f"{adapter.name} joins a voice channel (yours if none is given)")
    @app_commands.describe(channel="the voice channel; leave empty for the one you are in")
    async def join(
        interaction: discord.Interaction, channel: discord.VoiceChannel | discord.StageChannel | None = None
    ) -> None:
        member = interaction.user
        target = channel or (member.voice.channel if isinstance(member, discord.Member) and member.voice else None)
        if interaction.guild is None or target is None:
            await interaction.response.send_message(
                "Join which voice channel? Name one, or join one first.", ephemeral=True
            )
            return
        await interaction.response.defer(ephemeral=True)  # connecting can take longer than Discord's 3 s
        resolved = interaction.guild.get_channel(target.id) or target
        try:
            await adapter.voice.join(resolved, text_channel=interaction.channel)
        except VoiceError as exc:
            await interaction.followup.send(str(exc), ephemeral=True)
            return
        await interaction.followup.send(f"Joined {resolved.name}.", ephemeral=True)

    @app_commands.command(name="leave", description=f"{adapter.name} leaves the voice channel")
    async def leave(interaction: discord.Interaction) -> None:
        left = await adapter.voice.leave(interaction.guild) if interaction.guild is not None else None
        answer = f"Left {left}." if left else "I'm not in a voice channel here."
        await interaction.response.send_message(answer, ephemeral=True)

    tree.add_command(join)
    tree.add_command(leave)
