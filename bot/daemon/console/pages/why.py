"""``/why``, "Why": how each message a character heard ended, and why — searchable, a page at a
time — and ``/why/<message id>``, one message's whole trace (what ``troupe why`` prints)."""

from __future__ import annotations

import asyncio
from urllib.parse import quote, urlencode

from aiohttp import web

from bot.daemon.console._context import NavItem, console_of
from bot.daemon.console._trace_search import PAGE_SIZE, Search, find, reply_texts, rows_of, running_stores, search_of
from bot.kernel.messages import Status
from bot.kernel.trace_text import heading, outcome, trace_lines, when
from bot.store import look_up_traces

__all__ = ["NAV", "routes", "trace_path"]

NAV = NavItem("Why", "/why")


def routes() -> list[web.RouteDef]:
    return [web.get("/why", page), web.get("/why/{message}", trace_page)]


def trace_path(message_id: str) -> str:
    """The page of one message's traces."""
    return f"/why/{quote(message_id, safe='')}"


def _page_link(search: Search, before: str) -> str:
    values = {
        "q": search.q,
        "room": search.room,
        "person": search.person,
        "character": search.character,
        "outcome": search.outcome.value if search.outcome is not None else "",
        "limit": str(search.limit) if search.limit != PAGE_SIZE else "",
        "before": before,
    }
    return "/why?" + urlencode({k: v for k, v in values.items() if v})


async def page(request: web.Request) -> web.StreamResponse:
    console = console_of(request)
    agents = console.view.agents
    search, problems = search_of(request.query)
    found = await find(agents, search)
    rows = await rows_of(agents, found.traces)
    return console.render(
        request,
        "why.html",
        {
            "search": search,
            "problems": problems,
            "rows": rows,
            "looked_for": found.looked_for,
            "next": _page_link(search, found.next_before) if found.next_before else "",
            "first_page": _page_link(search, "") if search.before is not None else "",
            "characters": sorted({hosted.name for hosted in agents.values()}, key=str.casefold),
            "outcomes": [s.value for s in Status],
            "when": when,
            "outcome": outcome,
            "trace_path": trace_path,
        },
    )


async def trace_page(request: web.Request) -> web.StreamResponse:
    """One message's traces, one per character that heard it; a link or platform id as the search
    box takes it works here too (a room's id goes to the list of its messages)."""
    console = console_of(request)
    agents = console.view.agents
    target = request.match_info["message"]
    stores = running_stores(agents)
    found = await look_up_traces(stores, target, limit=PAGE_SIZE)
    if found.of_room and found.traces:
        raise web.HTTPSeeOther("/why?" + urlencode({"q": target}))
    if not found.traces:
        return console.render(request, "why_trace.html", {"target": target, "looked_for": found.looked_for}, status=404)
    rows = await rows_of(agents, found.traces)
    said = await asyncio.gather(*(reply_texts(agents, t) for t in found.traces))
    return console.render(
        request,
        "why_trace.html",
        {
            "target": target,
            "looked_for": found.looked_for,
            "traces": [
                {
                    "heading": heading(row.trace),
                    "trace": row.trace,
                    "first_words": row.first_words,
                    "lines": trace_lines(row.trace, room_name=row.room_name),
                    "replies": replies,
                }
                for row, replies in zip(rows, said, strict=True)
            ],
        },
    )
