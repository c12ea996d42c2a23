"""The "Why" page's search: the traces of every character this daemon runs, filtered by a
message (its id, link or platform id), room, person, character and outcome, a page at a time.

What it shows of each is the trace (:mod:`bot.kernel.trace_text` tells it), its room's name and
the message's first words (from the character's memory, while it keeps the message).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.daemon.hosted import HostedAgent
from bot.kernel.ids import is_uuid
from bot.kernel.messages import Status
from bot.kernel.traces import MessageTrace, TraceQuery
from bot.store import Store, look_up_traces, newest_first

__all__ = [
    "Found",
    "MAX_PAGE",
    "PAGE_SIZE",
    "Search",
    "TraceRow",
    "find",
    "first_words",
    "reply_texts",
    "rows_of",
    "running_stores",
    "search_of",
]

#: Traces on one page, unless the search asks for another number (at most MAX_PAGE).
PAGE_SIZE = 50
MAX_PAGE = 200
#: How many words of a message a row shows.
_FIRST_WORDS = 12
#: How many words of a reply the trace's page shows.
_REPLY_WORDS = 80
#: How many people a name may match.
_PEOPLE = 50


class Search(BaseModel):
    """The search form, as the query string gives it (every field optional)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    q: str = Field(default="", max_length=500)
    """A message (its id, a Discord or Telegram link, a platform id) or a room id, as ``troupe why`` takes."""
    room: str = Field(default="", max_length=200)
    """Words of a room's name, or its id."""
    person: str = Field(default="", max_length=200)
    """Words of a person's name, or their id."""
    character: str = Field(default="", max_length=200)
    outcome: Status | None = None
    before: tuple[int, str] | None = None
    """Where the page before ended (``ended_at:message_id``)."""
    limit: int = Field(default=PAGE_SIZE, ge=1, le=MAX_PAGE)

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("before", mode="before")
    @classmethod
    def _before(cls, value: object) -> object:
        if value in ("", None):
            return None
        if isinstance(value, str):
            ended_at, sep, message_id = value.partition(":")
            if sep and ended_at.isdigit() and message_id:
                return int(ended_at), message_id
        raise ValueError("not where a page ends")

    def cursor(self, trace: MessageTrace) -> str:
        """``before`` for the page after one that ended with ``trace``."""
        return f"{trace.ended_at}:{trace.message_id}"


def search_of(query: Mapping[str, str]) -> tuple[Search, list[str]]:
    """The search a query string asks for, and what is wrong with it (a field that is wrong is
    left out, and said why)."""
    try:
        return Search.model_validate(dict(query)), []
    except ValidationError as exc:
        problems = []
        bad = set()
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else "search"
            bad.add(name)
            problems.append(f"{name}: {_problem(name, query.get(name), error['msg'])}")
        return Search.model_validate({k: v for k, v in query.items() if k not in bad}), problems


def _problem(name: str, given: str | None, said: str) -> str:
    if name == "outcome":
        return f"{given!r} is none of {', '.join(s.value for s in Status)}"
    if name == "limit":
        return f"{given!r} is not a number from 1 to {MAX_PAGE}"
    if name == "before":
        return "not where a page ends: follow the page's own links"
    return said


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One trace as the page lists it."""

    trace: MessageTrace
    room_name: str
    first_words: str


@dataclass(frozen=True, slots=True)
class Found:
    """One page of traces, and how to get the next one."""

    traces: list[MessageTrace]
    looked_for: str = ""
    """What a message search looked for (``Discord message 123``), to say when nothing was found."""
    next_before: str | None = None


def running_stores(agents: Mapping[str, HostedAgent], character: str = "") -> list[Store]:
    """The stores of the running characters (of ``character`` alone, when it names one)."""
    wanted = character.casefold()
    return [
        hosted.runtime.store
        for hosted in agents.values()
        if hosted.runtime is not None and (not wanted or hosted.name.casefold() == wanted)
    ]


async def find(agents: Mapping[str, HostedAgent], search: Search) -> Found:
    """The page of traces ``search`` asks for, newest first, across the characters."""
    stores = running_stores(agents, search.character)
    if search.q:
        looked = await look_up_traces(stores, search.q, limit=search.limit)
        traces = [t for t in looked.traces if search.outcome is None or t.status is search.outcome]
        return Found(traces, looked_for=looked.looked_for)
    listed = await asyncio.gather(*(_listed(store, search) for store in stores))
    merged = newest_first([t for ts in listed for t in ts])
    page = merged[: search.limit]
    if len(merged) > search.limit:
        last = page[-1]
        # The next page starts after the last one's (ended_at, message_id): a message heard by
        # several characters is shown whole on this page.
        page += [t for t in merged[search.limit :] if (t.ended_at, t.message_id) == (last.ended_at, last.message_id)]
        more = len(merged) > len(page)
        return Found(page, next_before=search.cursor(last) if more else None)
    return Found(page)


async def _listed(store: Store, search: Search) -> list[MessageTrace]:
    room_ids = await _rooms(store, search.room) if search.room else None
    entity_ids = await _people(store, search.person) if search.person else None
    query = TraceQuery(
        room_ids=room_ids,
        entity_ids=entity_ids,
        statuses=None if search.outcome is None else (search.outcome,),
        before=search.before,
    )
    return await store.find_traces(query, limit=search.limit + 1)


async def _rooms(store: Store, words: str) -> tuple[str, ...]:
    wanted = words.casefold()
    rooms = await store.get_rooms_with_counts()
    return tuple(room.id for room, _ in rooms if room.id == wanted or wanted in (room.name or "").casefold())


async def _people(store: Store, words: str) -> tuple[str, ...]:
    people = [e.id for e in await store.search_entities_by_name(words, limit=_PEOPLE) if e.id is not None]
    return tuple(dict.fromkeys([*people, *([words.lower()] if is_uuid(words) else [])]))


async def rows_of(agents: Mapping[str, HostedAgent], traces: Sequence[MessageTrace]) -> list[TraceRow]:
    """Each trace with its room's name and its message's first words."""
    stores = {hosted.runtime.agent_id: hosted.runtime.store for hosted in agents.values() if hosted.runtime}
    by_agent: dict[str, list[MessageTrace]] = {}
    for trace in traces:
        by_agent.setdefault(trace.agent_id, []).append(trace)
    known = await asyncio.gather(*(_names_and_words(stores.get(a), ts) for a, ts in by_agent.items()))
    rooms = {k: v for names, _ in known for k, v in names.items()}
    words = {k: v for _, said in known for k, v in said.items()}
    return [
        TraceRow(t, rooms.get((t.agent_id, t.room_id), ""), words.get((t.agent_id, t.message_id), "")) for t in traces
    ]


async def _names_and_words(
    store: Store | None, traces: Iterable[MessageTrace]
) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    if store is None:  # the character stopped since: its traces are still shown, without names
        return {}, {}
    traces = list(traces)
    rooms = await store.get_rooms_by_ids(list(dict.fromkeys(t.room_id for t in traces)))
    memories = await store.get_memories_by_ids([t.message_id for t in traces])
    names = {(store.agent_id, r.id): r.name or "" for r in rooms if r.id is not None}
    said = {(store.agent_id, m.id): first_words(m.content.text or "") for m in memories if m.id is not None}
    return names, said


async def reply_texts(agents: Mapping[str, HostedAgent], trace: MessageTrace) -> list[str]:
    """What the reply to ``trace``'s message said (its first words), as the character keeps it."""
    hosted = agents.get(trace.agent_id)
    if hosted is None or hosted.runtime is None or not trace.reply_ids:
        return []
    memories = await hosted.runtime.store.get_memories_by_ids(list(trace.reply_ids))
    said = {m.id: m.content.text or "" for m in memories}
    return [first_words(said[r], _REPLY_WORDS) for r in trace.reply_ids if said.get(r)]


def first_words(text: str, count: int = _FIRST_WORDS) -> str:
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")
