"""SEND_MESSAGE: send a message to another channel of this server, or privately to someone.

The small model reads the request and names the target (a person or a channel), the platform
and the message itself; the platform's :class:`~bot.components.Messenger` (registered as a
service under its source name) delivers it. Unlike upstream, the message sent is the body the
model extracted, not the requester's whole text, and channels are looked up in the requester's
own server only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bot.components import Action, ActionContext, ActionResult, Messenger, State
from bot.errors import SendError
from bot.types import Entity, Memory, Room

from ._common import (
    ask_small_model,
    entity_label,
    match_entity,
    names_of,
    notify,
    recent_messages,
    room_and_world,
    sender_text,
)

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["action", "find_room_named"]

_log = logging.getLogger(__name__)

NAME = "SEND_MESSAGE"
ERROR = "SEND_MESSAGE_ERROR"
_MAX_CHARS = 4000


def _messengers(runtime: AgentRuntime) -> dict[str, Messenger]:
    # Asked for every prompt (validate), and isinstance against a runtime-checkable Protocol costs
    # tens of microseconds per service: services without the method are passed over first.
    return {name: s for name, s in runtime.services.items() if hasattr(s, "send_to_room") and isinstance(s, Messenger)}


def find_room_named(rooms: list[Room], name: str) -> Room | None:
    """The room called ``name`` (case, a leading ``#`` and surrounding spaces ignored)."""
    wanted = name.strip().lstrip("#").strip().casefold()
    if not wanted:
        return None
    return next((r for r in rooms if (r.name or "").strip().lstrip("#").strip().casefold() == wanted), None)


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return bool(_messengers(runtime))


async def _people(runtime: AgentRuntime, message: Memory, reference: str) -> list[Entity]:
    people = {e.id: e for e in await runtime.store.get_entities_for_room(message.room_id) if e.id != runtime.agent_id}
    if reference:
        for entity in await runtime.store.search_entities_by_name(reference.lstrip("@"), limit=10):
            people.setdefault(entity.id, entity)
    return list(people.values())


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, state, responses = context.runtime, context.message, context.state, context.responses
    messengers = _messengers(runtime)
    room, world = await room_and_world(runtime, message)
    rooms = [r for r in await runtime.store.get_rooms_by_world(world.id) if r.name] if world else []
    here_source = str(message.content.get("source") or (room.source if room else ""))
    here = [e for e in await runtime.store.get_entities_for_room(message.room_id) if e.id != runtime.agent_id]
    parsed = (
        await ask_small_model(
            runtime,
            "targetExtractionTemplate",
            {
                "agentName": runtime.character.name,
                "platforms": ", ".join(sorted(messengers)) or "none",
                "currentPlatform": here_source,
                "rooms": "\n".join(f"- {r.name} ({r.source})" for r in rooms) or "(no named channels)",
                "people": names_of(here),
                "recentMessages": recent_messages(state),
                "request": sender_text(message),
            },
        )
        or {}
    )

    kind = str(parsed.get("targetType") or "").strip().lower()
    target = str(parsed.get("target") or "").strip()
    body = str(parsed.get("message") or "").strip()[:_MAX_CHARS]
    source = str(parsed.get("source") or "").strip().lower() or here_source
    if kind not in ("user", "room") or not target:
        await notify(
            context.reply, "I couldn't tell where to send that. Name the person or the channel.", ERROR, message
        )
        return ActionResult(success=False, error="no target found in the request")
    if not body:
        await notify(context.reply, f"What should the message to {target} say?", ERROR, message)
        return ActionResult(success=False, error="no message text found in the request")
    messenger = messengers.get(source)
    if messenger is None:
        await notify(context.reply, f"I can't send messages on {source or 'that platform'}.", ERROR, message)
        return ActionResult(success=False, error=f"no messenger for {source!r}")

    content: dict[str, Any] = {"text": body, "source": source, "actions": [NAME]}
    files = responses[0].content.get("files") if responses else None
    if files:  # what an earlier step of the plan attached goes with the message
        content["files"] = files
    try:
        if kind == "room":
            destination = find_room_named([r for r in rooms if r.source == source], target)
            if destination is None:
                await notify(context.reply, f"I couldn't find a channel called {target} here.", ERROR, message)
                return ActionResult(success=False, error=f"no room named {target!r}")
            label = f"#{(destination.name or '').lstrip('#')}"
            await messenger.send_to_room(destination, content)
        else:
            person = match_entity(target, await _people(runtime, message, target))
            if person is None:
                await notify(context.reply, f"I don't know anyone called {target}.", ERROR, message)
                return ActionResult(success=False, error=f"no entity named {target!r}")
            label = entity_label(person)
            await messenger.send_to_entity(person, content)
    except SendError as exc:
        await notify(context.reply, f"I couldn't send it: {exc}", ERROR, message)
        return ActionResult(success=False, error=str(exc))
    except Exception as exc:
        _log.exception("%s: sending a message on %s failed", runtime.character.name, source)
        await notify(context.reply, f"I couldn't send the message to {target}; please try again later.", ERROR, message)
        return ActionResult(success=False, error=f"send failed: {exc.__class__.__name__}")

    text = f"Message sent to {label} on {source}."
    await notify(context.reply, text, NAME, message)
    return ActionResult(text=text, data={"actionName": NAME, "targetType": kind, "target": label, "source": source})


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Send a message to another channel or privately to a person, when asked to pass something on.",
    similes=("DM", "MESSAGE", "SEND_DM", "POST_MESSAGE", "DIRECT_MESSAGE"),
)
