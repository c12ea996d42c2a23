"""Server-sent events, as the console's live pages send them (Chat's conversation, the log tail)."""

from __future__ import annotations

from aiohttp import web

__all__ = ["KEEP_ALIVE", "KEEP_ALIVE_S", "event", "open_stream"]

#: A quiet stream gets a comment line this often, so proxies and the browser keep it open.
KEEP_ALIVE_S = 15.0
KEEP_ALIVE = b": still here\n\n"


async def open_stream(request: web.Request) -> web.StreamResponse:
    """A ``text/event-stream`` response to ``request``, its head sent."""
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx: pass each event on at once
        }
    )
    await response.prepare(request)
    return response


def event(data: str, *, name: str = "", id: str = "") -> bytes:
    """One event: ``data`` (one line: JSON), with its ``event:`` name and ``id:`` when given."""
    head = (f"id: {id}\n" if id else "") + (f"event: {name}\n" if name else "")
    return f"{head}data: {data}\n\n".encode()
