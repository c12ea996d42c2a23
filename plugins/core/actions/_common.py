"""What the data and admin actions share: who may do what, asking the small model, answering.

Not an action itself (the leading underscore keeps it out of discovery).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    EXTRACTION_TOKENS,
    Button,
    Entity,
    HandlerCallback,
    Memory,
    Menu,
    ModelError,
    ModelType,
    Reply,
    Role,
    Room,
    Settled,
    State,
    World,
)

from .._budget import Cut, FittedPrompt, Piece, Section, fit_prompt
from .._parse import parse_response
from .._placeholders import Placeholders
from .._prompts import template

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "PRIVILEGED",
    "as_list",
    "ask_small_model",
    "entity_label",
    "match_entity",
    "names_of",
    "notify",
    "recent_messages",
    "role_in",
    "room_and_world",
    "sender_text",
]

_log = logging.getLogger(__name__)

PRIVILEGED = frozenset({Role.OWNER, Role.ADMIN})


def role_in(world: World | None, entity_id: str) -> Role:
    """``entity_id``'s role in ``world``: the recorded role, OWNER for the recorded owner, else NONE."""
    return world.metadata.role_of(entity_id) if world is not None else Role.NONE


async def room_and_world(
    runtime: AgentRuntime, message: Memory, state: State | None = None
) -> tuple[Room | None, World | None]:
    """The message's room and its world (either may be ``None``).

    Several actions' validators ask this for the same message at once; the store's shared
    reads (one query per message for identical reads) keep that cheap.
    """
    room = await runtime.store.get_room(message.room_id)
    world_id = (room.world_id if room else None) or message.world_id
    world = await runtime.store.get_world(world_id) if world_id else None
    return room, world


async def ask_small_model(
    runtime: AgentRuntime, template_name: str, values: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Fill the template, ask TEXT_SMALL, parse the answer; ``None`` when the model failed or
    answered nothing readable (logged)."""
    extraction_template = template(runtime.character.templates, template_name)
    slots = _extraction_slots(values)
    prompt = FittedPrompt(
        runtime,
        ModelType.TEXT_SMALL,
        EXTRACTION_TOKENS,
        lambda budget: fit_prompt(extraction_template, values, slots, budget, rng=runtime.rng),
    )
    try:
        raw = await prompt.ask()
    except ModelError as exc:
        _log.warning("%s: %s: no answer from the model: %s", runtime.character.name, template_name, exc)
        return None
    placeholders = Placeholders.of(extraction_template, values)
    parsed = placeholders.without(parse_response(raw), agent=runtime.character.name, kind=template_name)
    if not parsed:
        _log.info("%s: %s: the model's answer did not parse", runtime.character.name, template_name)
    return parsed


# What of an extraction prompt gives way when it is over the small model's budget: the
# conversation, oldest line first, then the lists of people, channels, tasks and settings; the
# request itself is shortened last.
_CONVERSATION = "recentMessages"
_LISTS = ("people", "rooms", "tasks", "settings")
_REQUEST = "request"


def _extraction_slots(values: Mapping[str, Any]) -> dict[str, list[Section]]:
    slots: dict[str, list[Section]] = {}
    conversation = values.get(_CONVERSATION)
    if isinstance(conversation, str) and conversation:
        lines = conversation.split("\n")
        slots[_CONVERSATION] = [Section([Piece(line, Cut.OLD_MESSAGE) for line in lines])]
    for key in _LISTS:
        if isinstance(values.get(key), str) and values[key]:
            slots[key] = [Section.of(values[key], Cut.LONG_SECTION)]
    if isinstance(values.get(_REQUEST), str) and values[_REQUEST]:
        slots[_REQUEST] = [Section.of(values[_REQUEST], Cut.NEWEST_MESSAGE)]
    return slots


def as_list(value: Any, item_key: str) -> list[Mapping[str, Any]]:
    """The items of a parsed collection, whatever shape the model gave it.

    ``<items><item>…</item></items>`` parses as a list, a single item as a mapping, and a
    wrapper the model forgot as ``{item_key: …}``; all become a list of mappings.
    """
    if isinstance(value, Mapping):
        inner = value.get(item_key)
        value = inner if inner is not None else [value]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def entity_label(entity: Entity) -> str:
    return next((n for n in entity.names if n), entity.id)


def match_entity(reference: str, candidates: Iterable[Entity]) -> Entity | None:
    """The candidate ``reference`` names: its id, one of its names, or a unique name prefix
    (case and a leading ``@`` ignored)."""
    wanted = reference.strip().lstrip("@").casefold()
    if not wanted:
        return None
    pool = list(candidates)
    for entity in pool:
        if entity.id.casefold() == wanted:
            return entity
    for entity in pool:
        if any(n.strip().lstrip("@").casefold() == wanted for n in entity.names if n):
            return entity
    prefixed = [e for e in pool if any(n.casefold().startswith(wanted) for n in e.names if n)]
    return prefixed[0] if len(prefixed) == 1 else None


async def notify(
    callback: HandlerCallback,
    text: str,
    action: str,
    message: Memory,
    *,
    buttons: Sequence[Button] = (),
    menu: Menu | None = None,
    settles: Settled | None = None,
) -> None:
    """Tell the person what the action did (or why it did not), with ``buttons`` (and ``menu``)
    under it; ``settles``: for a press, shown on the message pressed instead where the platform can."""
    if not text:
        return
    reply = Reply(text=text, actions=(action,), in_reply_to=message.id, source=source_of(message))
    await callback(replace(reply, buttons=tuple(buttons), menu=menu, settles=settles))


def source_of(message: Memory) -> str | None:
    """The platform ``message`` came from, for the reply to name."""
    source = message.content.source
    return source if isinstance(source, str) else None


def sender_text(message: Memory) -> str:
    return (message.content.text or "").strip()


def recent_messages(state: State) -> str:
    return str(state.values.get("recentMessages") or "")


def names_of(entities: Sequence[Entity]) -> str:
    return "\n".join(f"- {entity_label(e)} (id {e.id})" for e in entities) or "(nobody known)"
