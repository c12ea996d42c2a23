"""``/logs``, "Logs": the daemon's log as it is written, filtered by character and level.

The page's script reads ``/parts/logs/stream`` with an EventSource (server-sent events): first
the recent lines the daemon kept, then each new one. A browser that falls behind is not waited
for: lines are dropped for it, and it is told how many (a ``dropped`` event).
"""

from __future__ import annotations

import contextlib
import json
import logging

from aiohttp import web

from bot.daemon.console._context import NavItem, console_of
from bot.daemon.console._events import KEEP_ALIVE, KEEP_ALIVE_S, event, open_stream
from bot.daemon.console._log_ring import NO_AGENT, LogFilter, LogLine, Pending
from bot.kernel.logs import LEVELS

__all__ = ["NAV", "routes"]

NAV = NavItem("Logs", "/logs")

#: How long a browser waits before reconnecting to a stream that ended (milliseconds).
_RETRY_MS = 3000


def routes() -> list[web.RouteDef]:
    return [web.get("/logs", page), web.get("/parts/logs/stream", stream)]


async def page(request: web.Request) -> web.StreamResponse:
    console = console_of(request)
    try:
        wanted = LogFilter.from_query(request.query)
        error = ""
    except ValueError as exc:
        wanted, error = LogFilter(), str(exc)
    names = {agent.name for agent in console.view.agents.values()} | set(console.logs.agents())
    agents = sorted(names - {NO_AGENT}, key=str.casefold)
    return console.render(
        request,
        "logs.html",
        {
            "agents": agents,
            "no_agent": NO_AGENT,
            "levels": LEVELS[:-1],
            "agent": wanted.agent or "",
            "level": logging.getLevelName(wanted.level),
            "error": error,
        },
        status=400 if error else 200,
    )


def _event(line: LogLine) -> bytes:
    return event(json.dumps(line.to_json()), id=str(line.seq))


def _dropped(count: int) -> bytes:
    return event(json.dumps({"dropped": count}), name="dropped")


async def stream(request: web.Request) -> web.StreamResponse:
    """The lines that match ``?agent=&level=``, as server-sent events, until the browser goes or
    the console closes."""
    console = console_of(request)
    try:
        wanted = LogFilter.from_query(request.query)
    except ValueError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    after = request.headers.get("Last-Event-ID", "")
    response = await open_stream(request)
    with (
        console.logs.subscribe(wanted, after=int(after) if after.isdigit() else None) as reader,
        contextlib.suppress(ConnectionError),  # the browser went away
    ):
        await response.write(f"retry: {_RETRY_MS}\n\n".encode())
        for line in reader.backlog:
            await response.write(_event(line))
        while (pending := await reader.next(KEEP_ALIVE_S)) is not None:
            await response.write(_chunk(pending) if pending else KEEP_ALIVE)
    return response


def _chunk(pending: list[Pending]) -> bytes:
    """The lines waiting, each followed by how many were dropped after it, if any."""
    out = bytearray()
    for entry in pending:
        out += _event(entry.line)
        if entry.dropped_after:
            out += _dropped(entry.dropped_after)
    return bytes(out)
