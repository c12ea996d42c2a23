"""UPDATE_CONTACT: remember someone's details on another platform or channel (an email address,
a handle, a phone number) when they are shared in the conversation.

Details are stored as a component of the person's entity, one per kind (``email``, ``twitter``,
``phone`` …), and recorded as *what the sender said*: the component carries the sender as its
source, so one person cannot overwrite what another person told the agent. Asking again with new
fields adds to the details already known.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from bot.sdk import Action, ActionContext, ActionResult, Component, now_ms

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

__all__ = ["action", "clean_details", "clean_kind"]

NAME = "UPDATE_CONTACT"
_MAX_FIELDS = 20
_MAX_KEY_CHARS = 64
_MAX_VALUE_CHARS = 500
_KIND = re.compile(r"[^a-z0-9_.-]+")


def clean_kind(value: Any) -> str:
    """A component type from what the model wrote: lower case, no spaces, at most 32 characters."""
    return _KIND.sub("_", str(value or "").strip().lower()).strip("_.-")[:32]


def clean_details(value: Any) -> dict[str, str]:
    """The fields to store: a mapping of short string keys to short string values.

    The model may give a mapping, JSON text, or bare text (stored as ``value``); anything beyond
    the limits is dropped rather than stored.
    """
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("{") else {"value": text} if text else {}
        except ValueError:
            value = {"value": text}
    if not isinstance(value, Mapping):
        return {}
    details: dict[str, str] = {}
    for key, item in list(value.items())[:_MAX_FIELDS]:
        if isinstance(item, (Mapping, list)):
            item = json.dumps(item, ensure_ascii=False)
        text = "" if item is None else str(item).strip()
        name = str(key).strip()[:_MAX_KEY_CHARS]
        if name and text:
            details[name] = text[:_MAX_VALUE_CHARS]
    return details


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, state = context.runtime, context.message, context.state
    store = runtime.store
    room, world = await room_and_world(runtime, message)
    people = [e for e in await store.get_entities_for_room(message.room_id) if e.id != runtime.agent_id]
    if not any(e.id == message.entity_id for e in people) and (sender := await store.get_entity(message.entity_id)):
        people.append(sender)

    parsed = (
        await ask_small_model(
            runtime,
            "componentTemplate",
            {
                "agentName": runtime.character.name,
                "people": names_of(people),
                "senderId": message.entity_id,
                "recentMessages": recent_messages(state),
                "request": sender_text(message),
            },
        )
        or {}
    )
    reference = str(parsed.get("entity") or "").strip()
    target = (
        match_entity(reference, people) if reference else next((e for e in people if e.id == message.entity_id), None)
    )
    if target is None:
        await notify(
            context.reply, "I'm not sure whose details those are. Tell me their name as it appears here.", NAME, message
        )
        return ActionResult(success=False, error="no known person matched the request")
    kind = clean_kind(parsed.get("kind") or parsed.get("source") or parsed.get("type"))
    details = clean_details(parsed.get("details") if "details" in parsed else parsed.get("data"))
    if not kind or not details:
        await notify(
            context.reply,
            'I couldn\'t tell which details to save. Say what they are, for example "my email is sam@example.com".',
            NAME,
            message,
        )
        return ActionResult(success=False, error="no details found in the request")

    world_id = world.id if world else message.world_id
    existing = await store.get_component(target.id, kind, world_id, source_entity_id=message.entity_id)
    name = entity_label(target)
    if existing is not None:
        existing.data = {**existing.data, **details}
        await store.update_component(existing)
        text = f"I've updated the {kind} details for {name}."
    else:
        await store.create_component(
            Component(
                id=str(uuid.uuid4()),
                entity_id=target.id,
                agent_id=runtime.agent_id,
                room_id=room.id if room else message.room_id,
                world_id=world_id,
                type=kind,
                data=details,
                source_entity_id=message.entity_id,
                created_at=now_ms(),
            )
        )
        text = f"I've saved the {kind} details for {name}."
    await notify(context.reply, text, NAME, message)
    return ActionResult(
        text=text,
        values={"contactUpdated": True},
        data={"actionName": NAME, "entityId": target.id, "kind": kind, "fields": sorted(details)},
    )


action = Action(
    name=NAME,
    handler=_handler,
    description="Remember someone's contact details or accounts elsewhere (email, phone, a handle on another "
    "platform) when they are shared.",
    similes=("UPDATE_ENTITY", "SAVE_CONTACT", "UPDATE_CONTACT_INFO", "ADD_CONTACT"),
)
