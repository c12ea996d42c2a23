"""JOIN_VOICE and LEAVE_VOICE: a character asked in a text channel to come into voice, or to leave.

Which channel is meant is worked out cheaply first: a voice channel named in the request ("the
General voice channel"), else the channel the person asking is in ("the channel I'm in", "join
me"); only when neither tells does the small model pick from the server's voice channels.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    SHORT_ANSWER_TOKENS,
    Action,
    ActionContext,
    ActionResult,
    Memory,
    ModelError,
    ModelType,
    Reply,
    State,
)

from ._mapping import SOURCE
from ._service import DISCORD_ADAPTER
from ._voice import VoiceError

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["find_voice_channel", "join_voice", "leave_voice"]

_log = logging.getLogger(__name__)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def find_voice_channel(channels: Sequence[Any], request: str, requester_channel: Any = None) -> Any:
    """The voice channel ``request`` names (longest name first), else the requester's, else ``None``."""
    said = f" {_norm(request)} "
    for channel in sorted(channels, key=lambda c: len(c.name), reverse=True):
        name = _norm(channel.name)
        if name and f" {name} " in said:
            return channel
    return requester_channel


def _is_discord_guild_message(runtime: AgentRuntime, message: Memory) -> bool:
    return (
        message.content.source == SOURCE
        and bool(message.metadata.server_id)
        and runtime.get_service(DISCORD_ADAPTER) is not None
    )


def _native_id(value: str | None) -> int:
    """A Discord id a guild message's metadata always holds (the validators checked it is one)."""
    assert value is not None
    return int(value)


async def _ask_model(runtime: AgentRuntime, request: str, channels: Sequence[Any]) -> Any:
    names = "\n".join(f"- {c.name}" for c in channels)
    prompt = (
        f'Someone asked {runtime.character.name}: "{request}"\n\nThe server\'s voice channels are:\n{names}\n\n'
        "Which voice channel do they want joined? Answer with the channel's name exactly as listed, or none."
    )
    try:
        params = {"prompt": prompt, "max_tokens": SHORT_ANSWER_TOKENS}
        answer = str(await runtime.use_model(ModelType.TEXT_SMALL, params))
    except ModelError as exc:
        _log.warning("%s: JOIN_VOICE: no answer from the model: %s", runtime.character.name, exc)
        return None
    return find_voice_channel(channels, answer)


async def _join(context: ActionContext) -> ActionResult:
    runtime, message, options, responses = context.runtime, context.message, context.options, context.responses
    adapter = runtime.get_service(DISCORD_ADAPTER)
    assert adapter is not None and adapter.client is not None  # the validator checked it is connected
    guild = adapter.client.get_guild(_native_id(message.metadata.server_id))
    if guild is None:
        return ActionResult(success=False, error="that server is not available")
    channels = [*guild.voice_channels, *guild.stage_channels]
    author = guild.get_member(int(message.metadata.author_id or 0))
    here = author.voice.channel if author is not None and author.voice is not None else None
    request = message.content.text or ""
    channel = None
    if options.get("channelId"):
        channel = guild.get_channel(int(options["channelId"]))
    channel = channel or find_voice_channel(channels, request, here)
    if channel is None and channels:
        channel = await _ask_model(runtime, request, channels)
    replied = any(a.upper() == "REPLY" for a in (responses[0].content.actions or ())) if responses else False
    if channel is None:
        await context.reply(Reply(text="I couldn't figure out which voice channel you meant.", actions=("JOIN_VOICE",)))
        return ActionResult(success=False, error="no voice channel matched the request")
    text_channel = guild.get_channel_or_thread(_native_id(message.metadata.channel_id))
    try:
        await adapter.voice.join(channel, text_channel=text_channel)
    except VoiceError as exc:
        await context.reply(Reply(text=str(exc), actions=("JOIN_VOICE",)))
        return ActionResult(success=False, error=str(exc))
    if not replied:
        await context.reply(Reply(text=f"Joining {channel.name}.", actions=("JOIN_VOICE",)))
    return ActionResult(
        text=f"joined the voice channel {channel.name}", data={"actionName": "JOIN_VOICE", "channelId": str(channel.id)}
    )


async def _leave(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    adapter = runtime.get_service(DISCORD_ADAPTER)
    assert adapter is not None and adapter.client is not None  # the validator checked it is connected
    guild = adapter.client.get_guild(_native_id(message.metadata.server_id))
    left = await adapter.voice.leave(guild) if guild is not None else None
    if left is None:
        return ActionResult(success=False, error="not in a voice channel in this server")
    return ActionResult(text=f"left the voice channel {left}", data={"actionName": "LEAVE_VOICE"})


async def _validate_join(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return _is_discord_guild_message(runtime, message)


async def _validate_leave(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    if not _is_discord_guild_message(runtime, message):
        return False
    adapter = runtime.get_service(DISCORD_ADAPTER)
    return adapter is not None and _native_id(message.metadata.server_id) in adapter.voice.sessions


join_voice = Action(
    name="JOIN_VOICE",
    handler=_join,
    validate=_validate_join,
    description="Join a voice channel of this server to listen and talk aloud: the one named in the request, or the "
    "one the person asking is in. Use with REPLY to say you're coming.",
    similes=("JOIN_VC", "JOIN_VOICE_CHAT", "JOIN_VOICE_CHANNEL", "JOIN_CALL", "JOIN_MEETING"),
)

leave_voice = Action(
    name="LEAVE_VOICE",
    handler=_leave,
    validate=_validate_leave,
    description="Leave the voice channel you are in on this server.",
    similes=("LEAVE_VC", "LEAVE_VOICE_CHAT", "LEAVE_VOICE_CHANNEL", "LEAVE_CALL", "LEAVE_MEETING"),
)
