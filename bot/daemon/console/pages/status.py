"""``/``, "Troupe": each character with its platforms and their state, its models' health, the
store and the daemon; in a cluster, who serves which character under which lease; and plots of
the last hour (``/parts/series``, drawn by the page's script)."""

from __future__ import annotations

import time
from typing import cast

from aiohttp import web

from bot.daemon.console._context import NavItem, console_of
from bot.daemon.console._model_health import model_health
from bot.daemon.control import TroupeStatus

__all__ = ["NAV", "ago", "cluster_rows", "routes", "span"]

NAV = NavItem("Troupe", "/")


def routes() -> list[web.RouteDef]:
    return [web.get("/", page), web.get("/parts/status", part), web.get("/parts/series", series)]


def ago(seconds: float | None) -> str:
    """``just now``, ``45 s ago``, ``3 min ago``, ``2 h ago``; ``-`` for never."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 2:
        return "just now"
    if s < 60:
        return f"{s} s ago"
    if s < 3600:
        return f"{s // 60} min ago"
    return f"{s // 3600} h ago"


def span(seconds: float | None) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 07 min``; ``-`` when not known."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def cluster_rows(troupe: TroupeStatus) -> dict[str, object]:
    """The troupe as the page's two tables show it: its daemons, and each character with the
    daemon serving it and its lease."""
    daemons = [
        {
            "id": d["id"],
            "this": d["this"],
            "host": d["host"],
            "pid": d["pid"],
            "alive": d["alive"],
            "heartbeat": "-" if d["heartbeat_s"] is None else f"{span(d['heartbeat_s'])} ago",
            "connections": "-" if d["connections"] is None else d["connections"],
            "serves": d["serves"],
            "shards": d["shards"],
        }
        for d in troupe.get("daemons", [])
    ]
    characters = [
        {
            "name": c["name"],
            "state": "waiting for a daemon" if c["state"] == "waiting" else c["state"],
            "daemon": c["daemon"] or "-",
            "epoch": "-" if c["epoch"] is None else c["epoch"],
            "held": span(c["held_s"]),
            "expires": span(c["expires_s"]),
            "differs": ", ".join(c["differs"]),
            "shards": ", ".join(f"{k}: {v or 'nobody'}" for k, v in c["shards"].items()),
        }
        for c in troupe.get("characters", [])
    ]
    return {
        "error": troupe.get("error", ""),
        "daemons": daemons,
        "characters": characters,
        "warnings": troupe.get("warnings", []),
    }


async def _values(request: web.Request) -> dict[str, object]:
    console = console_of(request)
    view = console.view
    status = dict(view.status())
    troupe = await view.troupe()
    now = time.time()
    models = {
        name: {
            "state": str(health.state),
            "providers": ", ".join(health.providers),
            "last_call": ago(None if health.last_call_at is None else now - health.last_call_at),
            "last_error": ago(None if health.last_error_at is None else now - health.last_error_at),
            "calls": health.calls_last_hour,
            "errors": health.errors_last_hour,
        }
        for name, health in model_health(console.history).items()
    }
    # The view answers a TroupeStatus (bot/daemon/control/_answers.py), as JSON-able mapping.
    cluster = cluster_rows(cast(TroupeStatus, troupe)) if troupe is not None else None
    return {"status": status, "troupe": troupe, "cluster": cluster, "models": models}


async def page(request: web.Request) -> web.StreamResponse:
    if console_of(request).view.setup_needs:  # nothing configured yet: the console opens on its setup
        raise web.HTTPSeeOther("/setup")
    return console_of(request).render(request, "status.html", await _values(request))


async def part(request: web.Request) -> web.StreamResponse:
    """The page's body alone: htmx fetches it every few seconds."""
    return console_of(request).render(request, "status_part.html", await _values(request))


async def series(request: web.Request) -> web.StreamResponse:
    """The last hour, minute by minute, as JSON: what the page's plots draw."""
    return web.json_response(console_of(request).history.series().to_json())
