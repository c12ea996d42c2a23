"""UPDATE_ROLE: a server's owner or admins give people roles, by asking the agent.

Roles live in ``world.metadata.roles`` (entity id → OWNER / ADMIN / NONE) of the room's
world. The rules are ours: upstream compares the *target's* role with the requester's (so no
admin can ever change another admin) and reads the world from a setting rather than the room.

- Only an OWNER or ADMIN may change roles. Anyone else who asks is told so and nothing changes
  (the action is not even offered to them; the check is repeated in case the model names it).
- Nobody changes their own role, and the server's recorded owner stays OWNER.
- An OWNER may give any role to anyone else.
- An ADMIN may make members ADMIN (or leave them members), but may not grant OWNER nor change
  an OWNER's or another ADMIN's role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.sdk import Action, ActionContext, ActionResult, Entity, Memory, Role, State, World

from ..providers._common import GROUP_TYPES
from ._common import (
    PRIVILEGED,
    as_list,
    ask_small_model,
    entity_label,
    match_entity,
    notify,
    role_in,
    room_and_world,
    sender_text,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action", "parse_role", "refusal"]

NAME = "UPDATE_ROLE"
_ROLE_WORDS = {
    "OWNER": Role.OWNER,
    "ADMIN": Role.ADMIN,
    "ADMINISTRATOR": Role.ADMIN,
    "NONE": Role.NONE,
    "MEMBER": Role.NONE,
    "USER": Role.NONE,
    "REGULAR": Role.NONE,
    "NORMAL": Role.NONE,
}
_LABELS = {Role.OWNER: "an owner", Role.ADMIN: "an admin", Role.NONE: "a member"}


def parse_role(value: Any) -> Role | None:
    """OWNER, ADMIN or NONE from what the model wrote (``admin``, ``Member`` …); None if unknown."""
    return _ROLE_WORDS.get(str(value or "").strip().upper().replace(" ", "_"))


def refusal(requester: Role, requester_id: str, target_id: str, current: Role, new: Role, world: World) -> str | None:
    """Why ``requester`` may not change ``target``'s role from ``current`` to ``new``; None if allowed."""
    if requester not in PRIVILEGED:
        return "only the server's owner or an admin can change roles"
    if target_id == requester_id:
        return "nobody can change their own role"
    if world.metadata.owner_id == target_id and new is not Role.OWNER:
        return "the server's owner always stays an owner"
    if requester is Role.ADMIN:
        if new is Role.OWNER:
            return "only an owner can make someone an owner"
        if current in PRIVILEGED:
            return f"only an owner can change the role of {_LABELS[current]}"
    return None


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    room, world = await room_and_world(runtime, message, state)
    if room is None or world is None or room.type not in GROUP_TYPES:
        return False
    return role_in(world, message.entity_id) in PRIVILEGED


def _people(entities: Sequence[Entity], world: World) -> str:
    return "\n".join(f"- {entity_label(e)} (id {e.id}): {role_in(world, e.id).value}" for e in entities)


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    store = runtime.store
    room, world = await room_and_world(runtime, message)
    if room is None or world is None or room.type not in GROUP_TYPES:
        await notify(context.reply, "Roles belong to a server; ask me in one of its channels.", NAME, message)
        return ActionResult(success=False, error="not in a server room")
    requester = role_in(world, message.entity_id)
    if requester not in PRIVILEGED:
        await notify(context.reply, "Only the server's owner or an admin can change roles.", NAME, message)
        return ActionResult(success=False, error="the requester is neither owner nor admin")

    entities = [e for e in await store.get_entities_for_room(room.id) if e.id != runtime.agent_id]
    assignments = await _ask_assignments(runtime, message, entities, world)
    if not assignments:
        await notify(
            context.reply,
            "I couldn't tell whose role to change. Name the person and the role: owner, admin or member.",
            NAME,
            message,
        )
        return ActionResult(success=False, error="no role assignment found in the request")

    roles = dict(world.metadata.roles or {})
    lines: list[str] = []
    changed: dict[str, str] = {}
    for item in assignments:
        line, change = _assignment(item, entities, world, requester, message.entity_id)
        lines.append(line)
        if change is not None:
            target_id, new = change
            roles[target_id] = new
            changed[target_id] = new.value

    if changed:
        world.metadata = replace(world.metadata, roles=roles)
        await store.update_world(world)
    await notify(context.reply, "\n".join(lines), NAME, message)
    return ActionResult(
        success=bool(changed),
        text="\n".join(lines),
        values={"rolesChanged": len(changed)},
        data={"actionName": NAME, "changes": changed},
        error=None if changed else "no role was changed",
    )


async def _ask_assignments(
    runtime: AgentRuntime, message: Memory, entities: Sequence[Entity], world: World
) -> list[Mapping[str, Any]]:
    """The role changes the small model read in the request: who, and which role."""
    sender = next((e for e in entities if e.id == message.entity_id), None)
    parsed = await ask_small_model(
        runtime,
        "roleExtractionTemplate",
        {
            "agentName": runtime.character.name,
            "senderName": entity_label(sender) if sender else "the sender",
            "people": _people(entities, world),
            "request": sender_text(message),
        },
    )
    return as_list((parsed or {}).get("assignments"), "assignment")


def _assignment(
    item: Mapping[str, Any], entities: Sequence[Entity], world: World, requester: Role, requester_id: str
) -> tuple[str, tuple[str, Role] | None]:
    """What to say of one assignment asked for, and the change it makes (the person's id and
    new role), if it is allowed and changes anything."""
    reference = str(item.get("entity") or item.get("entityId") or item.get("name") or "")
    target = match_entity(reference, entities)
    new = parse_role(item.get("role") or item.get("newRole"))
    if target is None:
        return f"I don't know who {reference.strip() or 'that'} is in this channel.", None
    name = entity_label(target)
    if new is None:
        return f'"{item.get("role")}" is not a role; use owner, admin or member.', None
    current = role_in(world, target.id)
    if (reason := refusal(requester, requester_id, target.id, current, new, world)) is not None:
        return f"I can't make {name} {_LABELS[new]}: {reason}.", None
    if current is new:
        return f"{name} is already {_LABELS[new]}.", None
    return f"{name} is now {_LABELS[new]}.", (target.id, new)


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Change people's roles in this server (owner, admin or member) when its owner or an admin asks.",
    similes=("CHANGE_ROLE", "SET_ROLE", "SET_PERMISSIONS", "ASSIGN_ROLE", "MAKE_ADMIN"),
)
