"""WORLD (dynamic): the server or group the room belongs to, and its channels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.sdk import ChannelType, Memory, Provider, ProviderResult, Room, State

from ._common import find_room

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_MAX_LISTED = 20  # channels listed per kind; the counts still cover all of them

_KINDS: dict[ChannelType, str] = {
    ChannelType.GROUP: "text",
    ChannelType.VOICE_GROUP: "voice",
    ChannelType.VOICE_DM: "voice",
    ChannelType.DM: "dm",
    ChannelType.FEED: "feed",
    ChannelType.THREAD: "thread",
    ChannelType.FORUM: "thread",
}
_ORDER = ("text", "voice", "dm", "feed", "thread", "other")


def _failure(reason: str) -> ProviderResult:
    text = f"# World\nNo world information: {reason}."
    return ProviderResult(
        text=text, values={"worldName": "", "currentChannelName": "", "worldInfo": text}, data={"error": reason}
    )


def _room_info(room: Room) -> dict[str, Any]:
    return {"id": room.id, "name": room.name or room.id, "type": str(room.type), "channelId": room.channel_id}


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    room = await find_room(runtime, message)
    if room is None:
        return _failure("this room is not known")
    if not room.world_id:
        return _failure("this room belongs to no world")
    world = await runtime.store.get_world(room.world_id)
    if world is None:
        return _failure("the room's world is not known")

    rooms = await runtime.store.get_rooms_by_world(world.id)
    channels: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _ORDER}
    for other in rooms:
        channels[_KINDS.get(ChannelType(other.type), "other")].append(_room_info(other))
    participants = await runtime.store.get_participants_for_room(room.id)
    current = {**_room_info(room), "participantCount": len(participants)}

    world_name = world.name or world.id
    channel_name = room.name or room.id
    lines = [
        f"# World: {world_name}",
        f"Current channel: {channel_name} ({room.type}, {len(participants)} "
        f"participant{'' if len(participants) == 1 else 's'})",
    ]
    stats = ", ".join(f"{len(channels[k])} {k}" for k in _ORDER if channels[k])
    lines.append(f"Channels: {len(rooms)} in total ({stats})" if stats else "Channels: none known")
    for kind in _ORDER:
        listed = channels[kind][:_MAX_LISTED]
        if listed:
            more = len(channels[kind]) - len(listed)
            suffix = f" and {more} more" if more else ""
            lines.append(f"{kind.capitalize()} channels: {', '.join(c['name'] for c in listed)}{suffix}")
    text = "\n".join(lines)
    data = {
        "world": {
            "id": world.id,
            "name": world.name,
            "serverId": world.server_id,
            "currentRoom": current,
            "channels": channels,
            "channelStats": {kind: len(v) for kind, v in channels.items()},
        }
    }
    return ProviderResult(
        text=text,
        values={"worldName": world_name, "currentChannelName": channel_name, "worldInfo": text},
        data=data,
    )


provider = Provider(
    name="WORLD",
    get=_get,
    description="The server or group this conversation is in: its name and channels.",
    dynamic=True,
)
