"""ROLES: who owns and administers the server, from ``world.metadata.roles``.

Only shown in group rooms: in a DM, roles of a server are nobody's business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, Role, State

from ._common import GROUP_TYPES, UNKNOWN_USER, entity_names, find_room

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_SECTIONS = ((Role.OWNER, "Owners"), (Role.ADMIN, "Administrators"), (Role.NONE, "Members"))


def _result(text: str, roles: list[dict[str, str]] | None = None) -> ProviderResult:
    return ProviderResult(text=text, values={"roles": text}, data={"roles": roles or []})


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    room = await find_room(runtime, message)
    if room is None:
        return _result("# Roles\nNo role information: this room is not known.")
    if room.type not in GROUP_TYPES:
        return _result("# Roles\nRoles are only shown in group conversations.")
    world = await runtime.store.get_world(room.world_id) if room.world_id else None
    raw = world.metadata.roles if world is not None else None
    if not raw:
        return _result("# Roles\nNo role information is available for this server.")

    names = await entity_names(runtime, list(raw))
    roles = [{"entityId": k, "name": names.get(k, UNKNOWN_USER), "role": v.value} for k, v in raw.items()]
    lines = [f"# Roles in {world.name or 'this server'}" if world is not None else "# Roles"]
    for role, title in _SECTIONS:
        members = [r for r in roles if r["role"] == role.value]
        if members:
            lines.append(f"## {title}")
            lines.extend(f"- {r['name']} ({r['entityId']})" for r in members)
    return _result("\n".join(lines), roles)


provider = Provider(
    name="ROLES",
    get=_get,
    description="Who owns and administers the server (group conversations only).",
)
