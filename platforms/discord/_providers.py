"""channelState and voiceState: where on Discord the character is talking, and who is with it in
voice. Both give nothing for messages from elsewhere (another platform, the console)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.sdk import ChannelType, Memory, Provider, ProviderResult, State

from ._mapping import SOURCE
from ._service import DISCORD_ADAPTER
from ._voice_presence import company

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

    from ._adapter import DiscordAdapter

__all__ = ["channel_state", "voice_state"]


def _adapter(runtime: AgentRuntime, message: Memory) -> DiscordAdapter | None:
    if message.content.source != SOURCE:
        return None
    adapter = runtime.get_service(DISCORD_ADAPTER)
    return adapter if adapter is not None and adapter.client is not None else None


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


async def _channel_state(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    adapter = _adapter(runtime, message)
    if adapter is None:
        return ProviderResult()
    assert adapter.client is not None
    me = runtime.character.name
    kind = str(message.content.channel_type or "")
    if kind == ChannelType.DM.value:
        sender = message.metadata.entity_name or "someone"
        text = (
            f"{me} is in a direct message conversation with {sender} on Discord: everything said here is said to {me}."
        )
        return ProviderResult(text=text, values={"channelType": kind}, data={"channelType": kind})
    channel_id = message.metadata.channel_id or ""
    channel = adapter.client.get_channel(int(channel_id)) if channel_id.isdigit() else None
    guild = getattr(channel, "guild", None)
    channel_name = str(getattr(channel, "name", "") or channel_id)
    server_name = str(getattr(guild, "name", "") or message.metadata.server_id or "")
    if kind == ChannelType.VOICE_GROUP.value:
        where = f"{me} is talking aloud in the voice channel {channel_name} on the Discord server {server_name}."
    else:
        where = f"{me} is in the channel #{channel_name} on the Discord server {server_name}."
    text = (
        f"{where}\n{me} is in a room with other people and answers when addressed, or when the "
        "conversation concerns them."
    )
    values = {"channelType": kind, "channelName": channel_name, "serverName": server_name, "channelId": channel_id}
    data: dict[str, Any] = {**values, "serverId": message.metadata.server_id or ""}
    return ProviderResult(text=text, values=values, data=data)


async def _voice_state(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    adapter = _adapter(runtime, message)
    server = message.metadata.server_id or ""
    if adapter is None or not server.isdigit():
        return ProviderResult(values={"isInVoiceChannel": False}, data={"isInVoiceChannel": False})
    me = runtime.character.name
    session = adapter.voice.sessions.get(int(server))
    if session is None:
        text = f"{me} is not in a voice channel in this server."
        return ProviderResult(text=text, values={"isInVoiceChannel": False}, data={"isInVoiceChannel": False})
    channel = session.channel
    others = company(channel, adapter.bot_id)
    if others.people or others.bots:
        with_whom = [*others.people, *(f"{bot} (a bot)" for bot in others.bots)]
        text = f"{me} is in the voice channel {channel.name}, with {_names(tuple(with_whom))}."
    else:
        text = f"{me} is in the voice channel {channel.name}, alone."
    values = {"isInVoiceChannel": True, "voiceChannelName": channel.name, "voiceChannelId": str(channel.id)}
    data = {**values, "people": list(others.people), "bots": list(others.bots)}
    return ProviderResult(text=f"# Voice\n{text}", values=values, data=data)


channel_state = Provider(
    name="channelState",
    get=_channel_state,
    description="Where on Discord the character is talking: a DM, a text channel or a voice channel, and the server",
)
voice_state = Provider(
    name="voiceState",
    get=_voice_state,
    description="The Discord voice channel the character is in, and who is there with it",
)
