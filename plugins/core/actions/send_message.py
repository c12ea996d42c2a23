"""SEND_MESSAGE: send a message to another channel of this server, or privately to someone.

The small model reads the request and names the target (a person or a channel), the platform
and the message itself; the platform's :class:`~bot.runtime.components.Messenger` (registered as a
service under its source name) delivers it. Unlike upstream, the message sent is the body the
model extracted, not the requester's whole text, and channels are looked up in the requester's
own server only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    Action,
    ActionContext,
    ActionResult,
    Entity,
    Memory,
    Messenger,
    OutgoingFile,
    Reply,
    Room,
    SendError,
    State,
)

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
    from bot.sdk import AgentRuntime

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
    runtime, message, state = context.runtime, context.message, context.state
    messengers = _messengers(runtime)
    room, world = await room_and_world(runtime, message)
    rooms = [r for r in await runtime.store.get_rooms_by_world(world.id) if r.name] if world else []
    here_source = message.content.source or (room.source if room else "")
    parsed = await _ask_target(runtime, message, state, messengers, rooms, here_source)
    try:
        request = _Request.of(parsed, here_source)
        messenger = messengers.get(request.source)
        if messenger is None:
            raise _Refused(
                f"I can't send messages on {request.source or 'that platform'}.", f"no messenger for {request.source!r}"
            )
        label = await _send(runtime, message, messenger, request, rooms, _reply(request, context.attached))
    except _Refused as refused:
        await notify(context.reply, refused.said, ERROR, message)
        return ActionResult(success=False, error=refused.error)
    text = f"Message sent to {label} on {request.source}."
    await notify(context.reply, text, NAME, message)
    return ActionResult(
        text=text,
        data={"actionName": NAME, "targetType": request.kind.value, "target": label, "source": request.source},
    )


class _Refused(Exception):
    """The message cannot go: what to tell the requester, and the error to record."""

    def __init__(self, said: str, error: str) -> None:
        super().__init__(error)
        self.said, self.error = said, error


class _TargetType(StrEnum):
    USER = "user"  # privately to a person
    ROOM = "room"  # to a channel of this server


@dataclass(frozen=True, slots=True)
class _Request:
    """Where the requester asked the message to go, and what it says."""

    kind: _TargetType
    target: str
    body: str
    source: str
    """The platform to send on."""

    @classmethod
    def of(cls, parsed: Mapping[str, Any], here_source: str) -> _Request:
        """The request the small model read, or why it cannot be sent (:class:`_Refused`)."""
        kind = str(parsed.get("targetType") or "").strip().lower()
        target = str(parsed.get("target") or "").strip()
        body = str(parsed.get("message") or "").strip()[:_MAX_CHARS]
        source = str(parsed.get("source") or "").strip().lower() or here_source
        if kind not in {t.value for t in _TargetType} or not target:
            raise _Refused(
                "I couldn't tell where to send that. Name the person or the channel.", "no target found in the request"
            )
        if not body:
            raise _Refused(f"What should the message to {target} say?", "no message text found in the request")
        return cls(_TargetType(kind), target, body, source)


async def _ask_target(
    runtime: AgentRuntime,
    message: Memory,
    state: State,
    messengers: Mapping[str, Messenger],
    rooms: list[Room],
    here_source: str,
) -> dict[str, Any]:
    """The small model's reading of the request: target type, target, platform and message."""
    here = [e for e in await runtime.store.get_entities_for_room(message.room_id) if e.id != runtime.agent_id]
    parsed = await ask_small_model(
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
    return parsed or {}


def _reply(request: _Request, attached: Sequence[OutgoingFile]) -> Reply:
    # What an earlier step of the plan attached goes with the message.
    return Reply(text=request.body, actions=(NAME,), source=request.source, files=tuple(attached))


async def _send(
    runtime: AgentRuntime,
    message: Memory,
    messenger: Messenger,
    request: _Request,
    rooms: list[Room],
    reply: Reply,
) -> str:
    """Send ``reply`` to the room or person asked for; how the destination is called."""
    target, source = request.target, request.source
    try:
        if request.kind is _TargetType.ROOM:
            destination = find_room_named([r for r in rooms if r.source == source], target)
            if destination is None:
                raise _Refused(f"I couldn't find a channel called {target} here.", f"no room named {target!r}")
            await messenger.send_to_room(destination, reply)
            return f"#{(destination.name or '').lstrip('#')}"
        person = match_entity(target, await _people(runtime, message, target))
        if person is None:
            raise _Refused(f"I don't know anyone called {target}.", f"no entity named {target!r}")
        await messenger.send_to_entity(person, reply)
        return entity_label(person)
    except _Refused:
        raise
    except SendError as exc:
        raise _Refused(f"I couldn't send it: {exc}", str(exc)) from exc
    except Exception as exc:
        _log.exception("%s: sending a message on %s failed", runtime.character.name, source)
        raise _Refused(
            f"I couldn't send the message to {target}; please try again later.",
            f"send failed: {exc.__class__.__name__}",
        ) from exc


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Send a message to another channel or privately to a person, when asked to pass something on.",
    similes=("DM", "MESSAGE", "SEND_DM", "POST_MESSAGE", "DIRECT_MESSAGE"),
)
