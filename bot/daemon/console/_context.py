"""What every page's handlers reach through the request: the daemon, the sessions, the templates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import jinja2
from aiohttp import web

from bot.config.settings import DaemonSettings
from bot.daemon.console._audit import AuditLog, Change
from bot.daemon.console._history import MetricHistory
from bot.daemon.console._log_ring import LogRing
from bot.daemon.console._sessions import Session, Sessions
from bot.daemon.console._token import ConsoleToken
from bot.daemon.console._view import ConsoleView

__all__ = [
    "COOKIE",
    "CONSOLE",
    "Console",
    "NavItem",
    "console_of",
    "current_session",
    "is_htmx",
    "record_change",
    "session_of",
]

#: The session cookie's name.
COOKIE = "troupe_console"


@dataclass(frozen=True)
class NavItem:
    """One entry of the nav bar."""

    title: str
    path: str


@dataclass
class Console:
    """The console's state, shared by its pages."""

    view: ConsoleView
    settings: DaemonSettings
    token: ConsoleToken
    sessions: Sessions
    audit: AuditLog
    templates: jinja2.Environment
    #: The last hour of the metrics, a sample a minute (the Troupe page's plots).
    history: MetricHistory
    #: The recent log lines (the Logs page).
    logs: LogRing
    nav: list[NavItem] = field(default_factory=list)
    #: How long a wrong token waits before its answer: guessing is slow.
    failed_login_delay_s: float = 1.0

    def render(
        self, request: web.Request, template: str, values: Mapping[str, object] | None = None, *, status: int = 200
    ) -> web.Response:
        """A page of ``template`` with the base layout's values (the nav, the session's CSRF token)."""
        session = self.sessions.find(request.cookies.get(COOKIE))
        context: Mapping[str, object] = {
            "nav": self.nav,
            "path": request.path,
            "csrf": session.csrf if session is not None else "",
            "logged_in": session is not None,
            **(values or {}),
        }
        text = self.templates.get_template(template).render(context)
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


CONSOLE = web.AppKey("console", Console)


def console_of(request: web.Request) -> Console:
    return request.app[CONSOLE]


def current_session(request: web.Request) -> Session | None:
    """The request's session, if its cookie names one still open."""
    return console_of(request).sessions.find(request.cookies.get(COOKIE))


def session_of(request: web.Request) -> Session:
    """The logged-in session (every route but the public ones has one: the login guard saw to it)."""
    session = current_session(request)
    if session is None:
        raise web.HTTPSeeOther("/login")  # ended between the guard and here (a logout meanwhile)
    return session


async def record_change(request: web.Request, what: Change, detail: str = "") -> None:
    """Write a change made through the console to the audit log: who (the session), from where, what."""
    await console_of(request).audit.record(
        what, session=session_of(request).label, remote=request.remote, detail=detail
    )


def is_htmx(request: web.Request) -> bool:
    """Whether htmx sent this request (it wants a fragment, or a status, not a redirect)."""
    return request.headers.get("HX-Request") == "true"
