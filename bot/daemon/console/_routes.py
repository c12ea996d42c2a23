"""The one place the console's pages are registered: a new page is a module in ``pages`` and a line here."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from bot.daemon.console._context import NavItem
from bot.daemon.console.pages import characters, chat, knowledge, login, logs, memory, setup, status, why

__all__ = ["NAV", "STATIC", "add_routes"]

STATIC = Path(__file__).parent / "static"
#: The nav bar, in order.
NAV: list[NavItem] = [status.NAV, chat.NAV, why.NAV, characters.NAV, memory.NAV, knowledge.NAV, logs.NAV]


def add_routes(app: web.Application) -> None:
    pages = (login, setup, status, chat, why, characters, memory, knowledge, logs)
    app.router.add_routes([route for page in pages for route in page.routes()])
    app.router.add_static("/static/", STATIC, append_version=False)
