"""``/login`` and ``/logout``: the token, compared in constant time, for a session cookie."""

from __future__ import annotations

import asyncio
import hmac
import logging

from aiohttp import web

from bot.daemon.console._audit import Change
from bot.daemon.console._context import COOKIE, console_of, session_of

__all__ = ["routes"]

_log = logging.getLogger("bot.daemon.console")


def routes() -> list[web.RouteDef]:
    return [web.get("/login", login_page), web.post("/login", login), web.post("/logout", logout)]


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _secure(request: web.Request) -> bool:
    # Behind a reverse proxy that speaks HTTPS, the proxy says so; trusting it only makes the cookie stricter.
    return request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"


async def login_page(request: web.Request) -> web.StreamResponse:
    """The form; or, with ``?token=`` (the link printed at start), the login itself."""
    token = request.query.get("token")
    if token is not None:
        return await _try(request, token)
    return console_of(request).render(request, "login.html")


async def login(request: web.Request) -> web.StreamResponse:
    field = (await request.post()).get("token")
    return await _try(request, field if isinstance(field, str) else "")


async def _try(request: web.Request, given: str) -> web.StreamResponse:
    console = console_of(request)
    if not hmac.compare_digest(given.strip().encode(), console.token.value.encode()):
        _log.info("console: a wrong login token from %s", request.remote)
        await console.audit.record(Change.FAILED_LOGIN, session="", remote=request.remote)
        await asyncio.sleep(console.failed_login_delay_s)
        return console.render(
            request,
            "login.html",
            {
                "error": "That token is not the console's. Use the link the daemon printed at start, or "
                f"the token in {console.token.source}."
            },
            status=401,
        )
    session = console.sessions.open()
    await console.audit.record(Change.LOGIN, session=session.label, remote=request.remote)
    _log.info("console: logged in from %s", request.remote)
    response = _see_other("/")  # a redirect, so the token leaves the address bar
    response.set_cookie(
        COOKIE,
        session.id,
        httponly=True,
        samesite="Strict",
        path="/",
        secure=_secure(request),
        # No Max-Age: a browser session's cookie; the server ends the session after idle hours.
    )
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    console = console_of(request)
    session = session_of(request)
    console.sessions.end(session.id)
    await console.audit.record(Change.LOGOUT, session=session.label, remote=request.remote)
    response = _see_other("/login")
    response.del_cookie(COOKIE, path="/")
    return response
