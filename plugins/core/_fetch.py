"""Fetching a web page someone linked to, safely: bounded, and never inside the host's network.

A link in a chat message is chosen by whoever wrote it, so the fetch must not become a way to
reach what only the daemon can reach (server-side request forgery: a cloud metadata endpoint,
an admin page on localhost, a router). Every address is checked before connecting: a literal
IP in the URL at once, a name by resolving it here (:class:`_CheckedResolver`) and handing
aiohttp only the checked addresses, so there is no second lookup an attacker's DNS could answer
differently. Redirects are followed by hand, at most :data:`FetchLimits.max_redirects`, each
target checked the same way.

Nothing identifying is sent: no cookies (a dummy jar), no credentials (user:password in a URL is
dropped, no netrc, no proxy from the environment), no Authorization header, a plain User-Agent.
The body is streamed and reading stops at the size cap; the whole fetch has one deadline.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

__all__ = ["FetchLimits", "FetchRefused", "Page", "fetch_page", "readable", "refusal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_USER_AGENT = "troupe-link-reader/1.0"
_CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchRefused(Exception):
    """The link is not read; the message is a short reason fit to show (``"private address"``)."""


@dataclass(frozen=True, slots=True)
class FetchLimits:
    timeout_s: float = 10.0
    max_bytes: int = 2 * 1024 * 1024
    max_redirects: int = 3
    allow_private: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    url: str  # where it was read from, after redirects
    content_type: str  # lower-case, without parameters ("text/html")
    charset: str | None
    body: bytes  # empty unless the type is one we read
    truncated: bool  # reading stopped at the size cap
    size: int | None  # Content-Length, when the server said


def refusal(address: IPAddress) -> str | None:
    """Why a connection to ``address`` is refused (``"loopback address"`` …), or None if it is public.

    An IPv4 address written as IPv6 (``::ffff:127.0.0.1``, ``::127.0.0.1``, 6to4 and NAT64 forms
    aside) is judged as the IPv4 address it stands for.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return refusal(address.ipv4_mapped)
        if address.packed[:12] == bytes(12) and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
            return refusal(ipaddress.IPv4Address(address.packed[12:]))
    for reason, hit in (
        ("unspecified address", address.is_unspecified),
        ("loopback address", address.is_loopback),
        ("link-local address", address.is_link_local),
        ("multicast address", address.is_multicast),
        ("reserved address", address.is_reserved),
        ("private address", address.is_private),
    ):
        if hit:
            return reason
    if not address.is_global:  # shared address space (100.64/10), benchmarking and the like
        return "non-public address"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


class _CheckedResolver(AbstractResolver):
    """Resolves with the system resolver and returns only the addresses :func:`refusal` allows."""

    def __init__(self, allow_private: bool) -> None:
        self._inner = DefaultResolver()
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if self._allow_private:
            return results
        reasons = [(r, refusal(ipaddress.ip_address(r["host"].split("%", 1)[0]))) for r in results]
        allowed = [r for r, reason in reasons if reason is None]
        if not allowed:
            raise FetchRefused(next((reason for _, reason in reasons if reason), "no address"))
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def _checked_url(raw: str | URL, allow_private: bool) -> URL:
    url = URL(raw) if isinstance(raw, str) else raw
    if url.scheme not in ("http", "https") or not url.host:
        raise FetchRefused("not an http(s) link")
    host = url.host
    url = url.with_user(None)  # credentials in a link are never sent
    address = _literal(host)
    if address is not None and not allow_private and (reason := refusal(address)):
        raise FetchRefused(reason)
    return url


def readable(content_type: str) -> bool:
    """Whether a page of ``content_type`` is read (HTML and text); others are described."""
    return content_type.startswith("text/") or content_type == "application/xhtml+xml"


async def fetch_page(url: str, limits: FetchLimits) -> Page:
    """Read ``url`` within ``limits``; a page of a type other than HTML or text comes back with
    an empty body (its type and size describe it).

    Raises:
        FetchRefused: the address, the scheme or the redirects are not allowed.
        TimeoutError: the deadline passed.
        aiohttp.ClientError: the server could not be reached or broke off.
    """
    target = _checked_url(url, limits.allow_private)
    connector = aiohttp.TCPConnector(resolver=_CheckedResolver(limits.allow_private), limit=2)
    async with (
        asyncio.timeout(limits.timeout_s),
        aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            headers={"User-Agent": _USER_AGENT, "Accept": "text/html, text/plain;q=0.9, */*;q=0.1"},
            timeout=aiohttp.ClientTimeout(total=limits.timeout_s),
            trust_env=False,  # no proxy settings, no netrc credentials
        ) as session,
    ):
        for _ in range(limits.max_redirects + 1):
            async with session.get(target, allow_redirects=False) as response:
                if response.status in _REDIRECTS and "Location" in response.headers:
                    target = _checked_url(target.join(URL(response.headers["Location"])), limits.allow_private)
                    continue
                if response.status >= 400:
                    raise FetchRefused(f"the site answered {response.status} {response.reason or ''}".strip())
                content_type = response.content_type.lower()
                body, truncated = b"", False
                if readable(content_type):
                    body, truncated = await _read_capped(response, limits.max_bytes)
                return Page(str(target), content_type, response.charset, body, truncated, response.content_length)
        raise FetchRefused(f"more than {limits.max_redirects} redirects")


async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
    pieces: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        pieces.append(chunk)
        size += len(chunk)
        if size >= cap:
            return b"".join(pieces)[:cap], True  # stop reading: the rest is never downloaded
    return b"".join(pieces), False
