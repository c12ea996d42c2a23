"""REFLECTION: every so often, learn facts and relationships from the conversation.

Runs after the agent replied, once more than a quarter of the conversation length of new
messages has arrived in the room since it last ran. Facts go to the ``facts`` table (an exact
repeat of a known fact is skipped; near-repeats are marked non-unique by the store's
similarity check); relationships between people in the room are created or strengthened, with
the time of the latest interaction (``metadata.lastInteractionAt``).

A fact is stored under the person it is about (``entity_id``; the sender when the model names
no one in the room, the agent for facts about itself) and records in its metadata who it is
about (``entityIds``) and whose message it was learned from (``sourceEntityId``): the FACTS
provider finds facts about the sender by it, and ``troupe memory forget`` finds everything
learned from or about a person.

The cadence: a reflection whose answer does not parse, or whose findings could not all be
stored, still counts as one — asking again on the next message would cost the same call for
the same answer. A model outage does not count (the conversation since the last reflection
stays due) but is not retried on every message either: see :class:`_Cadence`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    REFLECTION_TOKENS,
    ActionContext,
    Content,
    Entity,
    Evaluator,
    JSONValue,
    Memory,
    MemoryMetadata,
    ModelError,
    ModelType,
    RelationshipMetadata,
    State,
    is_uuid,
    now_ms,
)

from .._budget import Cut, FittedPrompt, Piece, Section, fit_prompt
from .._parse import parse_response
from .._parse_rate import AnswerKind, count_answer
from .._placeholders import Placeholders
from .._prompts import template
from .._schemas import REFLECTION, schema_for

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["evaluator"]

_log = logging.getLogger(__name__)
FACTS = "facts"
_KNOWN_FACTS = 30


# After a model outage, the first retry in a room waits this long; each further outage doubles it.
_RETRY_BASE_MS = 60_000
_RETRY_CAP_MS = 3_600_000


def _cache_key(room_id: str) -> str:
    return f"{room_id}-reflection-last-processed"


@dataclass(frozen=True, slots=True)
class _Cadence:
    """Where reflection stands in one room, kept in the agent's cache.

    Stored as the id of the message last reflected on (what elizaOS stores) — or, while the model
    is down, as ``{"last", "failures", "retryAt"}``: an outage leaves ``last`` where it was, so
    the conversation since stays due and the next reflection reads it (its prompt shows the whole
    conversation length, four times the cadence), but no reflection is tried in the room before
    ``retryAt``: a minute after the first outage, doubling up to an hour. Without that, an outage
    would cost a failing call (up to the model timeout) after every reply.
    """

    last: str | None = None
    """The message last reflected on."""
    failures: int = 0
    """Model outages in a row since."""
    retry_at: int = 0
    """No reflection before this time (ms, the runtime's clock)."""

    @classmethod
    def of(cls, value: JSONValue) -> _Cadence:
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            last, failures, retry_at = value.get("last"), value.get("failures"), value.get("retryAt")
            return cls(
                last if isinstance(last, str) else None,
                failures if isinstance(failures, int) else 0,
                retry_at if isinstance(retry_at, int) else 0,
            )
        return cls()

    def after_outage(self, now: int) -> _Cadence:
        failures = self.failures + 1
        return _Cadence(self.last, failures, now + min(_RETRY_CAP_MS, _RETRY_BASE_MS * 2 ** min(failures - 1, 32)))

    def to_json(self) -> JSONValue:
        if not self.failures:
            return self.last
        return {"last": self.last, "failures": self.failures, "retryAt": self.retry_at}


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    threshold = math.ceil(runtime.conversation_length / 4)
    # Enough to know whether more than `threshold` messages came after the last one reflected on
    # (only their ids matter). Both reads at once: this runs after every reply.
    recent, stored = await asyncio.gather(
        runtime.store.get_recent_memory_ids(table="messages", room_id=message.room_id, limit=threshold + 1),
        runtime.store.get_cache(_cache_key(message.room_id)),
    )
    cadence = _Cadence.of(stored)
    if cadence.failures and runtime.clock() < cadence.retry_at:
        return False
    return len(recent) > threshold and cadence.last not in recent


def _falsy(value: Any) -> bool:
    return value is False or str(value).strip().lower() in ("false", "no", "0", "")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _resolve(ref: Any, entities: Sequence[Entity], agent: Entity) -> str | None:
    """An entity id for what the model wrote: an id, or a name of someone in the room."""
    text = str(ref or "").strip()
    if not text:
        return None
    people = [*entities, agent]
    for entity in people:
        if entity.id == text.lower():
            return entity.id
    if is_uuid(text):
        return None  # an id of nobody here: the model made it up
    lowered = text.lower()
    for entity in people:
        if any(lowered == n.lower() for n in entity.names):
            return entity.id
    return None


async def _handler(context: ActionContext) -> None:
    runtime, message = context.runtime, context.message
    store = runtime.store
    # Independent reads, run together rather than one trip to the database after another.
    known, entities, relationships, recent = await asyncio.gather(
        store.get_memories(table=FACTS, room_id=message.room_id, count=_KNOWN_FACTS, unique=True),
        store.get_entities_for_room(message.room_id),
        store.get_relationships(message.entity_id),
        # Only the conversation (now with the reply) and the people, over the plan's state: the
        # other providers' values are those the plan saw, not run a second time for one message.
        runtime.compose_state(message, ["RECENT_MESSAGES", "ENTITIES"], only_include=True),
    )
    sender = next((e for e in entities if e.id == message.entity_id), None)
    values = {
        **recent.values,
        "agentName": runtime.character.name,
        "entitiesInRoom": json.dumps([{"id": e.id, "names": e.names} for e in entities], ensure_ascii=False),
        "senderName": (sender.names[0] if sender and sender.names else "someone"),
        "senderId": message.entity_id,
    }
    relations = json.dumps(
        [
            {"sourceEntityId": r.source_entity_id, "targetEntityId": r.target_entity_id, "tags": r.tags}
            for r in relationships
        ]
    )
    # Short of room, the oldest lines go first, then the longest facts; the newest line stays.
    slots = {
        "recentMessages": _conversation(recent),
        "knownFacts": [Section([Piece(f.content.text or "", Cut.LONG_SECTION) for f in known])],
        "existingRelationships": [Section.of(relations, Cut.LONG_SECTION)],
    }
    templates, name = runtime.character.templates, "reflectionTemplate"
    reflection_template = template(templates, name)
    prompt = FittedPrompt(
        runtime,
        ModelType.TEXT_SMALL,
        REFLECTION_TOKENS,
        lambda budget: fit_prompt(reflection_template, values, slots, budget, rng=runtime.rng),
        schema_for(templates, name, REFLECTION),
    )
    key = _cache_key(message.room_id)
    try:
        raw = await prompt.ask()
    except ModelError:  # model_calls logged why
        cadence = _Cadence.of(await store.get_cache(key)).after_outage(runtime.clock())
        await store.set_cache(key, cadence.to_json())
        _log.info(
            "%s: no reflection (the model is unreachable); next try in this room in %d s at the earliest",
            runtime.character.name,
            (cadence.retry_at - runtime.clock()) // 1000,
        )
        return
    placeholders = Placeholders.of(reflection_template, values)
    parsed = placeholders.without(parse_response(raw), agent=runtime.character.name, kind="reflection")
    count_answer(runtime, AnswerKind.REFLECTION, parsed=parsed is not None)
    try:
        await _learn(runtime, message, parsed, known, entities)
    finally:  # counts as a reflection even if storing what it found failed (see the module docstring)
        await store.set_cache(key, _Cadence(message.id).to_json())


def _conversation(state: State) -> list[Section]:
    """The conversation as RECENT_MESSAGES gave it (``recentMessages``), in lines that can be cut."""
    result = state.providers.get("RECENT_MESSAGES")
    lines = result.data.get("lines") if result is not None else None
    if result is None or not isinstance(lines, list) or not lines:
        return [Section.of(str(state.values.get("recentMessages") or ""))]
    pieces = [Piece(str(line), Cut.OLD_MESSAGE) for line in lines[:-1]]
    return [
        Section([*pieces, Piece(str(lines[-1]), Cut.NEWEST_MESSAGE)], heading=str(result.data.get("heading") or ""))
    ]


async def _learn(
    runtime: AgentRuntime,
    message: Memory,
    parsed: dict[str, Any] | None,
    known: Sequence[Memory],
    entities: Sequence[Entity],
) -> None:
    """Store the facts and relationships of a parsed reflection."""
    if not parsed:
        _log.info("%s: reflection output did not parse; nothing learned", runtime.character.name)
        return
    store = runtime.store
    agent = Entity(runtime.agent_id, runtime.agent_id, names=[runtime.character.name])
    known_texts = {(f.content.text or "").strip().lower() for f in known}
    stored = 0
    for fact in _as_list(parsed.get("facts")):
        if not isinstance(fact, dict):
            continue
        claim = str(fact.get("claim") or "").strip()
        if not claim or claim.lower() in known_texts:
            continue
        if not (_falsy(fact.get("in_bio", False)) and _falsy(fact.get("already_known", False))):
            continue
        known_texts.add(claim.lower())
        about = _resolve(fact.get("about"), entities, agent) or message.entity_id
        memory = Memory(
            entity_id=about,
            agent_id=runtime.agent_id,
            room_id=message.room_id,
            world_id=message.world_id,
            content=Content(text=claim, type=str(fact.get("type") or "fact")),
            created_at=now_ms(),
            metadata=MemoryMetadata(entity_ids=(about,), source_entity_id=message.entity_id),
        )
        if runtime.has_model(ModelType.TEXT_EMBEDDING):
            try:
                memory = replace(memory, embedding=await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": claim}))
            except Exception as exc:  # a fact without a vector is still a fact
                _log.debug("%s: could not embed a fact: %s", runtime.character.name, exc)
        await store.create_memory(memory, FACTS)
        stored += 1

    for rel in _as_list(parsed.get("relationships")):
        if not isinstance(rel, dict):
            continue
        source = _resolve(rel.get("sourceEntityId"), entities, agent)
        target = _resolve(rel.get("targetEntityId"), entities, agent)
        if source is None or target is None or source == target:
            continue
        raw_tags = rel.get("tags") or []
        tags = [t.strip() for t in (raw_tags.split(",") if isinstance(raw_tags, str) else raw_tags) if str(t).strip()]
        existing = await store.get_relationship(source, target)
        now = runtime.clock()
        if existing is None:
            await store.create_relationship(
                source, target, tags=tags, metadata=RelationshipMetadata(interactions=1, last_interaction_at=now)
            )
        else:
            existing.tags = sorted(set(existing.tags) | set(tags))
            existing.metadata = replace(
                existing.metadata, interactions=(existing.metadata.interactions or 0) + 1, last_interaction_at=now
            )
            await store.update_relationship(existing)

    _log.debug("%s: reflection stored %d new facts", runtime.character.name, stored)


evaluator = Evaluator(
    name="REFLECTION",
    handler=_handler,
    validate=_validate,
    description="Reflect on the conversation; remember new facts about people and how they relate.",
)
