"""``/memory``, "Memory": what a character remembers about the people it knows, a search over its
memories, and forgetting a person after a confirmation (as ``troupe memory forget --entity``)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.daemon.console._audit import Change
from bot.daemon.console._context import NavItem, console_of, record_change
from bot.daemon.console.pages._characters import agent_of, choices, problem, when
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from bot.store import (
    AmbiguousPerson,
    NoSuchPerson,
    Store,
    find_person,
    forgotten_lines,
    known_people,
    person_label,
    person_name,
    recall_person,
    speaker_names,
)

__all__ = ["NAV", "routes"]

NAV = NavItem("Memory", "/memory")

#: Most memories a search shows.
_SEARCH_LIMIT = 30
#: Longest search the page takes (a question, not a document).
_QUERY_LIMIT = 500
#: Most people the list shows; the rest are reached by name (the search, or the CLI).
_PEOPLE_SHOWN = 500


def routes() -> list[web.RouteDef]:
    return [
        web.get("/memory", pick),
        web.get("/memory/{agent}", people),
        web.get("/memory/{agent}/people/{person}", person),
        web.get("/memory/{agent}/people/{person}/forget", confirm_forget),
        web.post("/memory/{agent}/people/{person}/forget", forget),
    ]


@dataclass(frozen=True)
class Line:
    """A memory as a row of the page: when, in which room, who, what."""

    when: str
    room: str
    who: str
    text: str
    table: str
    """Where it is kept: messages, facts, summaries …"""
    type: str
    """What its content says it is: a fact, an opinion, a status …"""


async def _lines(store: Store, memories: list[Memory]) -> list[Line]:
    names = await speaker_names(store, memories)
    room_ids = list(dict.fromkeys(m.room_id for m in memories if m.room_id))
    rooms = {r.id: r.name or r.id[:8] for r in await store.get_rooms_by_ids(room_ids)}
    return [
        Line(
            when(m.created_at),
            rooms.get(m.room_id, "—") if m.room_id else "—",
            names.get(m.entity_id, "someone"),
            m.content.text or "",
            m.table or "",
            m.content.type or "",
        )
        for m in memories
    ]


async def pick(request: web.Request) -> web.StreamResponse:
    """The characters to choose from; with one, its page at once."""
    characters = choices(request)
    if len(characters) == 1:
        raise web.HTTPSeeOther(f"/memory/{characters[0].id}")
    return console_of(request).render(request, "memory.html", {"characters": characters, "chosen": None})


async def people(request: web.Request) -> web.StreamResponse:
    """The people a character knows, and a search over its memories (``?q=``)."""
    chosen, runtime = agent_of(request, "Memory")
    store = runtime.store
    query = request.query.get("q", "").strip()
    error = ""
    found: list[Line] | None = None
    if len(query) > _QUERY_LIMIT:
        error = f"That search is {len(query)} characters long; search with at most {_QUERY_LIMIT}."
    elif query:
        found = await _lines(store, await store.search_all_memories_by_text(query, count=_SEARCH_LIMIT))
    everyone = await known_people(store)
    known = [
        {"id": e.id, "name": person_name(e), "names": ", ".join(dict.fromkeys(n for n in e.names if n)) or "—"}
        for e in everyone[:_PEOPLE_SHOWN]
    ]
    return console_of(request).render(
        request,
        "memory.html",
        {
            "characters": choices(request),
            "chosen": chosen,
            "people": known,
            "more": len(everyone) - len(known),
            "query": query,
            "found": found,
            "error": error,
        },
        status=400 if error else 200,
    )


async def _person_or_404(request: web.Request, runtime: AgentRuntime) -> str:
    """The id of the person the path names (an id, or a name only one person has)."""
    wanted = request.match_info["person"]
    try:
        entity = await find_person(runtime.store, wanted)
    except AmbiguousPerson as exc:
        listed = "; ".join(person_label(e) for e in exc.candidates)
        message = f"{len(exc.candidates)} people are called {wanted!r}: {listed}. Choose one from the list."
        raise problem(request, "Memory", message, 404) from None
    except NoSuchPerson:
        message = f"{runtime.character.name} knows no one called {wanted!r} (perhaps forgotten already)."
        raise problem(request, "Memory", message, 404) from None
    if entity.id == runtime.agent_id:
        raise problem(request, "Memory", "That is the character itself, not a person it knows.", 404)
    return entity.id


async def person(request: web.Request) -> web.StreamResponse:
    """A person: the facts learned from or about them, their relationships, what they wrote."""
    chosen, runtime = agent_of(request, "Memory")
    store = runtime.store
    recalled = await recall_person(store, await _person_or_404(request, runtime))
    if recalled is None:
        raise problem(request, "Memory", "That person was forgotten meanwhile.", 404)
    names = recalled.names
    relationships = [
        {
            "from": names.get(r.source_entity_id, r.source_entity_id),
            "to": names.get(r.target_entity_id, r.target_entity_id),
            "tags": ", ".join(r.tags) or "—",
            "interactions": r.metadata.interactions or 0,
            "last": when(r.metadata.last_interaction_at),
        }
        for r in recalled.relationships
    ]
    return console_of(request).render(
        request,
        "memory_person.html",
        {
            "characters": choices(request),
            "chosen": chosen,
            "person": {
                "id": recalled.person.id,
                "name": person_name(recalled.person),
                "label": person_label(recalled.person),
            },
            "facts": await _lines(store, recalled.facts),
            "relationships": relationships,
            "messages": await _lines(store, recalled.messages),
        },
    )


async def confirm_forget(request: web.Request) -> web.StreamResponse:
    """The confirmation: exactly what forgetting this person deletes, counted (a dry run)."""
    chosen, runtime = agent_of(request, "Memory")
    entity_id = await _person_or_404(request, runtime)
    entity = await runtime.store.get_entity(entity_id)
    planned = await runtime.store.forget_entity(entity_id, dry_run=True)
    return console_of(request).render(
        request,
        "memory_forget.html",
        {
            "characters": choices(request),
            "chosen": chosen,
            "person": {"id": entity_id, "label": person_label(entity) if entity else entity_id},
            "lines": forgotten_lines(planned),
            "total": planned.total,
            "done": False,
        },
    )


async def forget(request: web.Request) -> web.StreamResponse:
    """Forget the person (confirmed): everything about them, in every room; audited by name and id."""
    chosen, runtime = agent_of(request, "Memory")
    entity_id = await _person_or_404(request, runtime)
    entity = await runtime.store.get_entity(entity_id)
    label = person_label(entity) if entity else entity_id
    done = await runtime.store.forget_entity(entity_id)
    emptied = await console_of(request).view.checkpoint()
    await record_change(request, Change.MEMORY_FORGOTTEN, detail=f"{chosen.name}: {label}")
    return console_of(request).render(
        request,
        "memory_forget.html",
        {
            "characters": choices(request),
            "chosen": chosen,
            "person": {"id": entity_id, "label": label},
            "lines": forgotten_lines(done),
            "total": done.total,
            "done": True,
            "emptied": emptied,
        },
    )
