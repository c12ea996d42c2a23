"""ENTITIES (dynamic): the people (and bots) taking part in the room, and who sent the message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import Entity, EntityMetadata, Memory, PlatformProfile, Provider, ProviderResult, State

from ._common import UNKNOWN_USER, display_name, find_room

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]


def _profile(entity: Entity, source: str | None) -> dict[str, str]:
    """Profile fields worth showing: the platform's first, then the entity's own."""
    found: dict[str, str] = {}
    places: list[PlatformProfile | EntityMetadata] = [entity.metadata]
    platform = entity.metadata.profile(source)
    if platform is not None:
        places.insert(0, platform)
    for place in places:
        shown = {
            "username": place.username,
            "userName": place.user_name,
            "displayName": place.display_name,
            "handle": place.handle,
        }
        for key, value in shown.items():
            if value and key not in found:
                found[key] = value
    return found


def _name_for(entity: Entity, source: str | None, agent_id: str, agent_name: str) -> str:
    if entity.id == agent_id:
        return agent_name
    platform = entity.metadata.profile(source)
    if platform is not None and platform.name:
        return platform.name
    return display_name(entity)


def _line(entry: Mapping[str, Any]) -> str:
    line = f"- {entry['name']} (id {entry['id']})"
    aliases = [n for n in entry["names"] if n != entry["name"]]
    if aliases:
        line += f", also known as {', '.join(aliases)}"
    profile = entry["profile"]
    handle = profile.get("username") or profile.get("userName") or profile.get("handle")
    if handle and handle != entry["name"]:
        line += f", @{handle}"
    if entry["isAgent"]:
        line += " — this is you"
    return line


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    room = await find_room(runtime, message)
    source = room.source if room else message.content.source
    people = await runtime.store.get_entities_for_room(message.room_id, include_components=True)
    entries = []
    for entity in people:
        merged = entity.metadata.to_json()
        for component in entity.components:
            merged.update(component.data)
        entries.append(
            {
                "id": entity.id,
                "name": _name_for(entity, source, runtime.agent_id, runtime.character.name),
                "names": list(entity.names),
                "profile": _profile(entity, source),
                "metadata": merged,
                "isAgent": entity.id == runtime.agent_id,
            }
        )

    sender = next((e["name"] for e in entries if e["id"] == message.entity_id), None)
    if sender is None:
        if message.entity_id == runtime.agent_id:
            sender = runtime.character.name
        else:
            found = await runtime.store.get_entity(message.entity_id)
            sender = _name_for(found, source, runtime.agent_id, runtime.character.name) if found else UNKNOWN_USER

    if entries:
        text = "# People in the Room\n" + "\n".join(_line(e) for e in entries)
    else:
        text = "# People in the Room\nNo one is known to be in this room yet."
    data = {"entitiesData": entries, "senderName": sender, "room": room}
    return ProviderResult(text=text, values={"entities": text, "senderName": sender}, data=data)


provider = Provider(
    name="ENTITIES",
    get=_get,
    description="The people in the current conversation: names, ids and handles.",
    dynamic=True,
)
