"""``/chat message:<text>`` and ``/ask question:<text>``: talking to the character with a slash
command, answered through the pipeline as the interaction's follow-ups.

elizaOS's documents register ``chat`` (option ``message``) and ``ask`` (option ``question``) and
handle both the same way: the text goes through the agent like any message, and the answer is
sent back for everyone in the channel to see. troupe does the same for both: neither is
ephemeral, and both are a direct address (``is_mention``), answered like a DM or an @-mention.

The interaction is deferred first ("<bot> is thinking…"), bounded, within Discord's 3 s, before
the model is asked; the answer then comes as follow-ups (the first replaces "thinking…"), split
under 2000 characters as every reply is (:func:`._outbound.send_chunks`). When nothing is said
(the character chose silence, or the model failed) the "thinking…" message says so instead of
spinning until Discord gives up. An interaction Discord no longer knows (10062: deferred too
late) is still answered, as a plain message in the channel.

INTERACTION_RECEIVED follows the message's MESSAGE_RECEIVED, with the command (its name, its
text as an option, who and where) beside the message. The message's id comes from the interaction's id: a redelivered INTERACTION_CREATE (its second
deferral refused with 40060) is claimed once by the pipeline and answered once. After a crash, an
unanswered one is taken up like any stored message (:meth:`DiscordAdapter.reply_to`): a plain
message in the channel, since the interaction's token (valid 15 minutes, a credential) is never
stored.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import (
    ChannelType,
    Content,
    IncomingMessage,
    InteractionReceived,
    Memory,
    MemoryMetadata,
    MemoryType,
    NativeRef,
    PlatformReplyChannel,
    Reply,
    Status,
    TypingIndicator,
    repair_text,
    unique_uuid,
)

from ._adapter import TYPING_EVERY_S
from ._interactions import slash_command
from ._mapping import SOURCE, channel_type, discord_id, user_names
from ._outbound import describe
from ._presses import acknowledge

if TYPE_CHECKING:
    from discord.abc import MessageableChannel

    from ._adapter import DiscordAdapter

__all__ = ["answer_command", "command_text", "Followups", "nothing_said", "translate_command"]

_log = logging.getLogger(__name__)

_CLOSE_TIMEOUT_S = 30.0  # saying why nothing came: no hurry, the deferral holds for 15 minutes

#: Statuses whose answer is another delivery's to give (or was given before a crash).
_ANSWERED_ELSEWHERE = frozenset({Status.REPLIED, Status.DUPLICATE, Status.SENT_BEFORE_CRASH})
_CHOSE_SILENCE = frozenset(
    {Status.IGNORED, Status.STOPPED, Status.MUTED, Status.LOOP_GUARD, Status.NOT_TAKEN_UP, Status.SUPERSEDED}
)


class Followups:
    """The follow-ups of a deferred slash command as the place a reply goes: what
    :func:`._outbound.send_chunks` calls (``send(**kwargs)``), with its channel's ``id``,
    ``name`` and ``guild`` for upload limits, logs and voice. A follow-up takes no nonce and
    quotes nothing: those are dropped."""

    def __init__(self, interaction: discord.Interaction, channel: Any) -> None:
        self.interaction, self.channel = interaction, channel

    @property
    def id(self) -> int:
        return int(self.channel.id)

    @property
    def name(self) -> str | None:
        return getattr(self.channel, "name", None)

    @property
    def guild(self) -> discord.Guild | None:
        return getattr(self.channel, "guild", None)

    async def send(self, **kwargs: Any) -> discord.WebhookMessage:
        for dropped in ("nonce", "reference", "mention_author"):
            kwargs.pop(dropped, None)
        given = {key: value for key, value in kwargs.items() if value is not None}
        return await self.interaction.followup.send(**given, wait=True)


class CommandReplyChannel(
    PlatformReplyChannel["MessageableChannel | Followups", discord.Message, "discord.Message | discord.PartialMessage"]
):
    """The reply channel of a slash command: its follow-ups (no "typing…": Discord shows
    "thinking…"), or the channel itself when the deferral failed. Remembers whether anything
    went out."""

    answered = False

    async def send(self, reply: Reply) -> list[Memory]:
        sent = await super().send(reply)
        self.answered = self.answered or bool(sent)
        return sent

    async def typing(self) -> None:
        if not isinstance(self.target, Followups):
            await super().typing()


def command_text(text: str | None) -> str:
    """An option's text as the pipeline takes it: repaired, without NULs, trimmed."""
    return repair_text(text or "").replace("\x00", "").strip()


def translate_command(agent_id: str, interaction: discord.Interaction, channel: Any, text: str) -> Memory:
    """A ``/chat`` or ``/ask`` in ``channel`` as the message the pipeline receives (pure): from
    the person who used it, addressed to the character."""
    user, guild = interaction.user, interaction.guild
    kind = channel_type(channel) or (ChannelType.GROUP if guild is not None else ChannelType.DM)
    return Memory(
        id=unique_uuid(agent_id, f"{SOURCE}:command:{interaction.id}"),
        entity_id=discord_id(agent_id, user.id),
        agent_id=agent_id,
        room_id=discord_id(agent_id, channel.id),
        world_id=discord_id(agent_id, guild.id) if guild is not None else None,
        content=Content(text=text, source=SOURCE, channel_type=kind),
        created_at=int(interaction.created_at.timestamp() * 1000),
        metadata=MemoryMetadata(
            type=MemoryType.MESSAGE,
            entity_name=(user_names(user) or [str(user.id)])[0],
            author_is_bot=bool(user.bot),
            is_mention=True,  # a command to this bot: a direct address
            is_reply=False,
            author_id=str(user.id),
            channel_id=str(channel.id),
            server_id=str(guild.id) if guild is not None else None,
            interaction_id=str(interaction.id),
        ),
    )


def nothing_said(name: str, status: Status) -> str | None:
    """What "thinking…" becomes when the pipeline (``status``) sent no follow-up; None when the
    answer is another delivery's, or went out."""
    if status in _ANSWERED_ELSEWHERE:
        return None
    if status in _CHOSE_SILENCE:
        return f"{name} has nothing to say to that."
    if status is Status.ACTED:
        return "Done."
    if status is Status.CLOSING:
        return f"{name} is going offline; please ask again later."
    return f"{name} couldn't answer that just now; please try again in a moment."


async def answer_command(
    adapter: DiscordAdapter, interaction: discord.Interaction, command: str, option: str, given: str | None
) -> None:
    """Answer ``/command option:given`` through the pipeline (see the module docstring)."""
    channel = interaction.channel
    if channel is None or not adapter.listens_in(channel):
        await interaction.response.send_message(f"{adapter.name} doesn't listen in this channel.", ephemeral=True)
        return
    used = slash_command(adapter.runtime.agent_id, interaction)
    text = command_text(given)
    if not text:
        await interaction.response.send_message(
            f"Nothing to answer: write something after /{command}, as in `/{command} {option}:hello`.",
            ephemeral=True,
        )
        await adapter.runtime.emit(InteractionReceived(source=SOURCE, command=used))  # no message to announce it with
        return
    deferred = await acknowledge(interaction, adapter.name, thinking=True)
    memory = translate_command(adapter.runtime.agent_id, interaction, channel, text)
    room_id = await adapter.ensure_room(channel, dm_with=interaction.user)
    await adapter.ensure_entity(interaction.user, room_id)
    messageable: MessageableChannel = channel  # type: ignore[assignment]  # a command's channel takes messages
    target: MessageableChannel | Followups = Followups(interaction, channel) if deferred else messageable
    typing = TypingIndicator(adapter.runtime, messageable.typing, every_s=TYPING_EVERY_S, job="discord:typing")
    replies = CommandReplyChannel(adapter, target, None, memory, typing)
    native = NativeRef(
        SOURCE, str(channel.id), f"command:{interaction.id}", str(interaction.user.id), str(adapter.bot_id)
    )
    try:
        outcome = await adapter.runtime.receive(IncomingMessage(memory, replies, native=native, command=used))
    finally:
        await typing.stop()
    note = nothing_said(adapter.name, outcome.status) if deferred and not replies.answered else None
    if note is None:
        return
    try:
        async with asyncio.timeout(_CLOSE_TIMEOUT_S):
            await interaction.edit_original_response(content=note)
    except (discord.DiscordException, OSError, TimeoutError) as exc:
        _log.info("%s: could not close /%s %s on Discord (%s)", adapter.name, command, interaction.id, describe(exc))
