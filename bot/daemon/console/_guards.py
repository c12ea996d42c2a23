"""The console's own guards: a login for every page, a CSRF token on every form."""

from __future__ import annotations

import hmac

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.daemon.console._context import console_of, current_session, is_htmx

__all__ = ["check_csrf", "require_login"]

_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _is_public(path: str) -> bool:
    """What is served without a login: the login page itself and the static files."""
    return path == "/login" or path.startswith("/static/")


@web.middleware
async def require_login(request: web.Request, handler: Handler) -> web.StreamResponse:
    """No session: a page goes to /login, htmx and API calls get 401."""
    if current_session(request) is None and not _is_public(request.path):
        if is_htmx(request) or "application/json" in request.headers.get("Accept", ""):
            return web.json_response(
                {"error": "not logged in: open /login"}, status=401, headers={"HX-Redirect": "/login"}
            )
        raise web.HTTPSeeOther("/login")
    return await handler(request)


@web.middleware
async def check_csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every change (a POST) carries its session's CSRF token, in the form or in X-CSRF-Token."""
    if request.method in _SAFE_METHODS or request.path == "/login":
        # The login form has no session yet; Origin and SameSite keep other sites off it.
        return await handler(request)
    session = current_session(request)
    given = request.headers.get("X-CSRF-Token")
    if given is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        field = (await request.post()).get("csrf")
        given = field if isinstance(field, str) else None
    if session is None or not given or not hmac.compare_digest(given.encode(), session.csrf.encode()):
        return console_of(request).render(request, "stale.html", status=403)
    return await handler(request)
