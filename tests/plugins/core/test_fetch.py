"""Reading linked pages: the address checks, redirects, bounds, and nothing identifying sent.

Pages are served by the test on 127.0.0.1. "Public" names are made by replacing the system
resolver with a table, and by letting :func:`refusal` take 127.0.0.1 for a public address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from plugins.core import _fetch
from plugins.core._fetch import FetchLimits, FetchRefused, fetch_page, refusal
from plugins.core._html_text import html_to_text
from tests.fakes.web_site import FakeWebSite, Handler, page, redirect

PAGE = """<html><head><title>Otters &amp; rivers</title><style>body{color:red}</style>
<script>var secret = "do not read";</script></head>
<body><nav>Home | About | Login</nav><h1>Otters</h1><p>Otters hold hands
while they sleep.</p><p>They live in rivers.</p><footer>© 2026</footer></body></html>"""


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback address"),
        ("10.1.2.3", "private address"),
        ("172.16.0.9", "private address"),
        ("192.168.1.1", "private address"),
        ("169.254.169.254", "link-local address"),  # the cloud metadata endpoint
        ("0.0.0.0", "unspecified address"),
        ("224.0.0.1", "multicast address"),
        ("240.0.0.1", "reserved address"),
        ("100.64.0.1", "non-public address"),  # carrier-grade NAT
        ("::1", "loopback address"),
        ("::", "unspecified address"),
        ("fe80::1", "link-local address"),
        ("fc00::1", "private address"),
        ("ff02::1", "multicast address"),
        ("::ffff:127.0.0.1", "loopback address"),  # IPv4-mapped
        ("::ffff:10.0.0.1", "private address"),
        ("::ffff:169.254.169.254", "link-local address"),
        ("::10.0.0.1", "private address"),  # IPv4-compatible (deprecated)
        ("93.184.215.14", None),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", None),
        ("::ffff:93.184.215.14", None),
    ],
)
def test_addresses_are_judged_with_ipv4_inside_ipv6_unwrapped(address: str, reason: str | None) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


def test_html_becomes_its_title_and_visible_text() -> None:
    title, text = html_to_text(PAGE)
    assert title == "Otters & rivers"
    assert text == "Otters\nOtters hold hands while they sleep.\nThey live in rivers.\n© 2026"
    assert html_to_text("<p>unclosed <b>tags<script>x") == ("", "unclosed tags")


@pytest.fixture
async def site() -> AsyncIterator[Callable[[dict[str, Handler]], Awaitable[FakeWebSite]]]:
    """``await site(routes)``: a fake web site on 127.0.0.1, closed after the test."""
    sites: list[FakeWebSite] = []

    async def serve(routes: dict[str, Handler]) -> FakeWebSite:
        fake = FakeWebSite(routes)
        await fake.start()
        sites.append(fake)
        return fake

    yield serve
    for fake in sites:
        await fake.close()


ALLOWED = FetchLimits(allow_private=True)


async def test_a_local_page_is_refused_unless_private_addresses_are_allowed(site) -> None:
    fake = await site({"/otters": page(PAGE)})
    with pytest.raises(FetchRefused, match="^loopback address$"):
        await fetch_page(fake.url("/otters"), FetchLimits())
    assert fake.requests == []  # refused before connecting
    read = await fetch_page(fake.url("/otters"), ALLOWED)
    assert read.content_type == "text/html" and b"Otters hold hands" in read.body and not read.truncated


@pytest.fixture
def public_names(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Names resolved from a table, and 127.0.0.1 judged public (the test's stand-in for the internet)."""
    table = {"public.example": "127.0.0.1", "internal.example": "10.0.0.5"}

    class TableResolver:
        async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[dict[str, Any]]:
            if host not in table:
                raise OSError(f"no such name {host}")
            return [
                {"hostname": host, "host": table[host], "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}
            ]

        async def close(self) -> None:
            pass

    real = refusal
    monkeypatch.setattr(_fetch, "DefaultResolver", TableResolver)
    monkeypatch.setattr(_fetch, "refusal", lambda address: None if str(address) == "127.0.0.1" else real(address))
    return table


async def test_a_redirect_from_a_public_page_to_a_private_address_is_refused(site, public_names) -> None:
    fake = await site({"/a": redirect("http://internal.example/admin"), "/b": redirect("http://169.254.169.254/")})
    with pytest.raises(FetchRefused, match="^private address$"):
        await fetch_page(f"http://public.example:{fake.port}/a", FetchLimits())
    with pytest.raises(FetchRefused, match="^link-local address$"):
        await fetch_page(f"http://public.example:{fake.port}/b", FetchLimits())
    assert fake.paths == ["/a", "/b"]


async def test_public_redirects_are_followed_at_most_three_times_without_cookies(site, public_names) -> None:
    routes = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(4)}
    fake = await site({**routes, "/r4": page(PAGE)})
    read = await fetch_page(f"http://public.example:{fake.port}/r1", FetchLimits())  # three redirects
    assert read.url == f"http://public.example:{fake.port}/r4" and b"Otters" in read.body
    assert all("Cookie" not in headers for _, headers in fake.requests)  # each redirect set one
    with pytest.raises(FetchRefused, match="^more than 3 redirects$"):
        await fetch_page(f"http://public.example:{fake.port}/r0", FetchLimits())


async def test_no_credentials_and_a_plain_user_agent_are_sent(site, public_names) -> None:
    fake = await site({"/p": page(PAGE)})
    await fetch_page(f"http://alice:hunter2@public.example:{fake.port}/p", FetchLimits())
    ((_, headers),) = fake.requests
    assert "Authorization" not in headers and "Cookie" not in headers
    assert headers["User-Agent"].startswith("troupe-link-reader/")


async def test_other_schemes_and_unknown_names_are_not_read(public_names) -> None:
    with pytest.raises(FetchRefused, match="^not an http\\(s\\) link$"):
        await fetch_page("file:///etc/passwd", FetchLimits())
    with pytest.raises(aiohttp.ClientConnectorError, match="Cannot connect to host nowhere.example"):
        await fetch_page("http://nowhere.example/", FetchLimits())


async def test_a_large_page_is_read_only_up_to_the_cap(site) -> None:
    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(400):  # 40 MB if it were all read
            await response.write(b"x" * 100_000)
        return response

    fake = await site({"/huge": huge})
    read = await fetch_page(fake.url("/huge"), FetchLimits(max_bytes=300_000, allow_private=True))
    assert read.truncated and len(read.body) == 300_000


async def test_a_slow_page_gives_up_at_the_deadline(site) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(2)
        return web.Response(text="late")

    fake = await site({"/slow": slow})
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await fetch_page(fake.url("/slow"), FetchLimits(timeout_s=0.3, allow_private=True))
    assert time.monotonic() - started < 2


async def test_a_file_that_is_not_a_page_is_described_not_downloaded(site) -> None:
    async def archive(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"PK" * 50_000, content_type="application/zip")

    fake = await site({"/a.zip": archive})
    read = await fetch_page(fake.url("/a.zip"), ALLOWED)
    assert read.content_type == "application/zip" and read.body == b"" and read.size == 100_000


async def test_an_error_status_is_a_refusal_that_says_it(site) -> None:
    fake = await site({})
    with pytest.raises(FetchRefused, match="^the site answered 404 Not Found$"):
        await fetch_page(fake.url("/missing"), ALLOWED)


async def test_the_resolver_hands_on_only_public_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {
        "mixed.example": ["10.0.0.1", "93.184.215.14", "::ffff:127.0.0.1", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
        "sneaky.example": ["::ffff:169.254.169.254", "fe80::1%eth0"],
    }

    class Answers:
        async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[dict[str, Any]]:
            return [
                {"hostname": host, "host": a, "port": port, "family": 0, "proto": 0, "flags": 0} for a in answers[host]
            ]

        async def close(self) -> None:
            pass

    monkeypatch.setattr(_fetch, "DefaultResolver", Answers)
    resolver = _fetch._CheckedResolver(allow_private=False)
    assert [r["host"] for r in await resolver.resolve("mixed.example", 443)] == [
        "93.184.215.14",
        "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    ]
    with pytest.raises(FetchRefused, match="^link-local address$"):
        await resolver.resolve("sneaky.example", 443)
    allowing = _fetch._CheckedResolver(allow_private=True)
    assert len(await allowing.resolve("sneaky.example", 443)) == 2
