"""SETTINGS: the server's configuration (``world.metadata.settings``), never its secrets.

In a group room it shows the current configuration of the room's world. In a DM it shows the
worlds the sender owns, with the required settings still missing, so the agent can help its
owner finish the set-up. A setting marked ``secret`` (or whose name looks like a credential, or
whose value is one of the character's secrets) is always shown masked, in every room: the
model never needs the value, only whether it is set. Character settings are never read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import ChannelType, Memory, Provider, ProviderResult, Setting, State, World

from ._common import UNKNOWN_USER, entity_names, find_room

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["MASK", "character_secrets", "is_secret_setting", "provider"]

MASK = "****************"
_CREDENTIAL = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.IGNORECASE)
_DM_TYPES = frozenset({ChannelType.DM, ChannelType.VOICE_DM})


def _result(text: str, settings: list[dict[str, Any]] | None = None, **extra: Any) -> ProviderResult:
    return ProviderResult(text=text, values={"settings": text}, data={"settings": settings or [], **extra})


def character_secrets(runtime: AgentRuntime) -> list[str]:
    """The character's secret values, to recognise (and mask) them wherever they turn up."""
    character = runtime.character
    values = []
    for key in character.secret_keys():
        secret = character.secret(key)
        if secret is not None and secret.get_secret_value():
            values.append(secret.get_secret_value())
    return values


def is_secret_setting(key: str, setting: Setting, secrets: list[str]) -> bool:
    """Whether a setting's value must be masked: marked secret, named like a credential, or
    holding one of the character's secrets."""
    text = "" if setting.value is None else str(setting.value)
    return bool(setting.secret) or bool(_CREDENTIAL.search(key)) or any(s in text for s in secrets if len(s) >= 4)


def _entries(world: World, secrets: list[str]) -> list[dict[str, Any]]:
    """The world's settings, normalised and with every secret value already masked."""
    entries = []
    for key, setting in (world.metadata.settings or {}).items():
        value = setting.value
        is_set = setting.is_set
        text = "" if value is None else str(value)
        hidden = is_secret_setting(key, setting, secrets)
        entries.append(
            {
                "key": key,
                "name": setting.name or key,
                "description": setting.usage_description or setting.description or "",
                "required": bool(setting.required),
                "secret": hidden,
                "set": is_set,
                "value": (MASK if is_set else "") if hidden else text,
            }
        )
    return entries


def _line(entry: Mapping[str, Any]) -> str:
    shown = entry["value"] if entry["set"] else "not set"
    line = f"- {entry['name']} ({entry['key']}): {shown}"
    if entry["required"] and not entry["set"]:
        line += " (required)"
    if entry["description"]:
        line += f" — {entry['description']}"
    return line


async def _owned_worlds(runtime: AgentRuntime, owner_id: str) -> list[World]:
    owned = []
    for world in await runtime.store.get_worlds_with_settings():
        if world.metadata.owner_id == owner_id:
            owned.append(world)
    return owned


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    room = await find_room(runtime, message)
    if room is None:
        return _result("# Settings\nNo settings: this room is not known.")
    secrets = character_secrets(runtime)

    if room.type in _DM_TYPES:
        worlds = [w for w in await _owned_worlds(runtime, message.entity_id) if w.metadata.settings]
        if not worlds:
            return _result("# Settings\nNo server settings to show in this conversation.")
        names = await entity_names(runtime, [message.entity_id])
        sender = names.get(message.entity_id, UNKNOWN_USER)
        world = worlds[0]
        entries = _entries(world, secrets)
        missing = [e for e in entries if e["required"] and not e["set"]]
        lines = [f"# Settings of {world.name or 'your server'}"]
        if missing:
            lines.append(
                f"{sender} owns this server and {len(missing)} required setting"
                f"{'' if len(missing) == 1 else 's'} still need{'s' if len(missing) == 1 else ''} a value. "
                "Help them set it up, one setting at a time."
            )
            if "UPDATE_SETTINGS" in runtime.actions:
                lines.append("When they give a value, use the UPDATE_SETTINGS action to save it.")
        else:
            lines.append(f"{sender} owns this server; every required setting has a value.")
        lines.append("## Current Configuration")
        lines.extend(_line(e) for e in entries)
        return _result("\n".join(lines), entries, worldId=world.id, onboarding=bool(missing))

    room_world = await runtime.store.get_world(room.world_id) if room.world_id else None
    if room_world is None:
        return _result("# Settings\nNo settings: this room belongs to no known server.")
    entries = _entries(room_world, secrets)
    if not entries:
        return _result("# Settings\nThis server has not been configured yet.", worldId=room_world.id)
    lines = [f"# Settings of {room_world.name or 'this server'}", "## Current Configuration"]
    lines.extend(_line(e) for e in entries)
    return _result("\n".join(lines), entries, worldId=room_world.id)


provider = Provider(
    name="SETTINGS",
    get=_get,
    description="The server's configuration, with secret values hidden.",
)
