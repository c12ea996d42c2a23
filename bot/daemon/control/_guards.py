"""What guards the health port: no page of another origin, the token when one is set, errors as JSON."""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Callable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

__all__ = ["authorise", "is_loopback", "json_errors", "same_origin_only"]

# Named after the public module, as before it was split: log lines read the same.
_log = logging.getLogger("bot.daemon.control")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (an IPv4-mapped one too)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Errors as JSON, like every other answer (aiohttp's own are plain text)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return web.json_response({"error": exc.reason}, status=exc.status, headers=headers)
    except Exception:  # noqa: BLE001 -- a bug in one route must answer 500, not drop the connection
        _log.exception("control request %s %s failed", request.method, request.path)
        return web.json_response({"error": "internal error; see the daemon's log"}, status=500)


#: What a browser sends when the page itself is on this endpoint, or when no page is involved.
_FETCH_SITES_ACCEPTED = ("same-origin", "none")
_UNSAFE_METHODS_HINT = (
    "changing the daemon over HTTP needs TROUPE_HEALTH_TOKEN (sent as Authorization: Bearer "
    "<token>); or run `troupe reload` on this machine"
)


def _refused(reason: str) -> web.Response:
    return web.json_response({"error": f"refused: {reason}"}, status=403)


def same_origin_only(
    accepts_host: Callable[[str], bool],
) -> Middleware:
    """Refuse what a web page of another origin makes a browser send (CSRF, DNS rebinding)."""

    @web.middleware
    async def same_origin_only(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            host = request.url.host or ""
        except ValueError:
            host = ""
        if not host or not accepts_host(host):
            return _refused(f"Host {request.host!r} is not this endpoint's address")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            return _refused("requests from web pages of another origin are not served")
        fetch_site = request.headers.get("Sec-Fetch-Site")
        if fetch_site is not None and fetch_site not in _FETCH_SITES_ACCEPTED:
            return _refused("requests from web pages of another origin are not served")
        return await handler(request)

    return same_origin_only


def authorise(token: bytes | None) -> Middleware:
    """With a token, every request carries it; without one, requests only read."""

    @web.middleware
    async def authorise(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token is None:
            if request.method not in ("GET", "HEAD"):
                return web.json_response({"error": f"refused: {_UNSAFE_METHODS_HINT}"}, status=403)
            return await handler(request)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token):
            return web.json_response(
                {"error": "unauthorized: send Authorization: Bearer <TROUPE_HEALTH_TOKEN>"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="troupe"'},
            )
        return await handler(request)

    return authorise
