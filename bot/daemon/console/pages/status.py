"""``/``, "Troupe": each character with its platforms and their state, the store and the daemon."""

from __future__ import annotations

from aiohttp import web

from bot.daemon.console._context import NavItem, console_of

__all__ = ["NAV", "routes"]

NAV = NavItem("Troupe", "/")


def routes() -> list[web.RouteDef]:
    return [web.get("/", page), web.get("/parts/status", part)]


async def _values(request: web.Request) -> dict[str, object]:
    view = console_of(request).view
    status = dict(view.status())
    troupe = await view.troupe()
    return {"status": status, "troupe": troupe}


async def page(request: web.Request) -> web.StreamResponse:
    if console_of(request).view.setup_needs:  # nothing configured yet: the console opens on its setup
        raise web.HTTPSeeOther("/setup")
    return console_of(request).render(request, "status.html", await _values(request))


async def part(request: web.Request) -> web.StreamResponse:
    """The page's body alone: htmx fetches it every few seconds."""
    return console_of(request).render(request, "status_part.html", await _values(request))
