"""Links in a message the character answers: each page's gist becomes a ``link`` attachment.

At most :data:`MAX_LINKS` links a message are read, through :mod:`._fetch` (bounded, and refusing
private addresses unless ``TROUPE_FETCH_ALLOW_PRIVATE`` is true for the character or the daemon).
A link that cannot be read is still an attachment, whose description says why ("link not read:
private address"), so the model knows and nothing fails. What was read is kept in the store's
cache for :data:`CACHE_MS`, so a link pasted again costs no fetch.

:class:`LinkPages` reads one page on demand the same way (the ``LINK_READER`` service): for the
``read_link`` tool, and for the knowledge plugin learning a page.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
from yarl import URL

from bot.sdk import ConfigError, LinkNotRead, PageText, SettingReader, now_ms

from ._delivery import bound_text
from ._fetch import FetchLimits, FetchRefused, Page, fetch_page, readable
from ._html_text import html_to_text

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "ALLOW_PRIVATE",
    "CACHE_MS",
    "LinkPages",
    "MAX_GIST_CHARS",
    "MAX_LINKS",
    "allow_private",
    "find_links",
    "read_links",
]

_log = logging.getLogger(__name__)

ALLOW_PRIVATE = "TROUPE_FETCH_ALLOW_PRIVATE"
MAX_LINKS = 3
MAX_GIST_CHARS = 4000
CACHE_MS = 60 * 60 * 1000
_URL = re.compile(r"https?://[^\s<>\"'`|]+", re.IGNORECASE)
_TRAILING = ".,;:!?*_~'\""


def find_links(text: str, known: Sequence[str] = ()) -> list[str]:
    """The first :data:`MAX_LINKS` distinct http(s) links in ``text``, skipping those in ``known``
    (attachments the platform already gave); punctuation that ends a sentence is not part of a link."""
    found: list[str] = []
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(_TRAILING)
        while url.endswith((")", ">", "]")) and url.count(url[-1]) > url.count({")": "(", ">": "<", "]": "["}[url[-1]]):
            url = url[:-1].rstrip(_TRAILING)  # "(see https://x.org/a)": the bracket closes the sentence's
        if url not in found and url not in known:
            found.append(url)
        if len(found) == MAX_LINKS:
            break
    return found


def allow_private(runtime: AgentRuntime) -> bool:
    """``TROUPE_FETCH_ALLOW_PRIVATE`` (false when unset).

    Raises:
        ConfigError: the value is not true or false (checked when the core plugin is set up).
    """
    return SettingReader(runtime.get_setting, runtime.character.name).flag(ALLOW_PRIVATE)


def _limits(runtime: AgentRuntime) -> FetchLimits:
    try:
        allow = allow_private(runtime)
    except ConfigError as exc:  # changed while running (checked at start): refusing is the safe side
        _log.warning("%s; links to private addresses stay refused", exc)
        allow = False
    return FetchLimits(allow_private=allow)


def _gist(page: Page, max_chars: int) -> tuple[str, str]:
    """``(title, text)`` of a page that was read, the text at most ``max_chars`` characters."""
    try:
        decoded = page.body.decode(page.charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        decoded = page.body.decode("utf-8", errors="replace")
    title, text = html_to_text(decoded) if "html" in page.content_type else ("", decoded.strip())
    if page.truncated:
        text += "\n[… the page is longer; only its start was read]"
    return title, bound_text(text, max_chars)


def _size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{max(1, size // 1024)} KB"


def _host(url: str) -> str:
    """Only the host is logged: the rest of a link (a query, a path) may hold someone's token."""
    try:
        return URL(url).host or "?"
    except ValueError:
        return "?"


async def _fetched(url: str, limits: FetchLimits) -> Page:
    """The page at ``url``, read within ``limits``.

    Raises:
        LinkNotRead: refused, no answer in time, unreachable, or something else went wrong.
    """
    try:
        return await fetch_page(url, limits)
    except FetchRefused as exc:
        raise LinkNotRead(str(exc)) from None
    except TimeoutError:
        raise LinkNotRead(f"no answer within {limits.timeout_s:g} s", lasting=False) from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        _log.info("link to %s not read: %s", _host(url), exc.__class__.__name__)
        raise LinkNotRead("the site could not be reached", lasting=False) from None
    except Exception as exc:  # noqa: BLE001 - a link never stops the answer
        _log.warning("link to %s not read: %s", _host(url), exc.__class__.__name__, exc_info=True)
        raise LinkNotRead("something went wrong", lasting=False) from None


async def _read(url: str, limits: FetchLimits) -> tuple[dict[str, Any], bool]:
    """The attachment for ``url`` (the page's gist, a description of a file, or why it was not
    read) and whether to keep it: a failure that may pass (timeout, network) is tried again next time."""
    item: dict[str, Any] = {
        "id": "link-" + hashlib.sha256(url.encode()).hexdigest()[:8],
        "url": url,
        "title": "Link",
        "source": "Web",
        "contentType": "link",
    }
    try:
        page = await _fetched(url, limits)
    except LinkNotRead as exc:
        item["description"] = f"link not read: {exc}"
        return item, exc.lasting
    if not page.body and readable(page.content_type):
        item["description"] = "an empty page"
        return item, True
    if not page.body:
        item["description"] = f"a {page.content_type} file ({_size(page.size)}), not read"
        return item, True
    title, text = await asyncio.to_thread(_gist, page, MAX_GIST_CHARS)  # parsing 2 MB of HTML takes a second or more
    item["title"] = title or url
    item["description"] = f"Web page: {title}" if title else "Web page"
    item["text"] = text
    return item, True


async def _cached_or_read(runtime: AgentRuntime, url: str, limits: FetchLimits) -> dict[str, Any]:
    key = f"link:{int(limits.allow_private)}:{hashlib.sha256(url.encode()).hexdigest()}"
    cached = await runtime.store.get_cache(key)
    if isinstance(cached, Mapping):
        return dict(cached)
    item, keep = await _read(url, limits)
    if keep:
        await runtime.store.set_cache(key, item, expires_at=now_ms() + CACHE_MS)
    return item


async def read_links(runtime: AgentRuntime, text: str, known: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A ``link`` attachment for each link in ``text`` (see :func:`find_links`), from the cache or
    fetched (together: the answer waits for the slowest, not for their sum)."""
    urls = find_links(text, known)
    if not urls:
        return []
    limits = _limits(runtime)
    return list(await asyncio.gather(*(_cached_or_read(runtime, url, limits) for url in urls)))


class LinkPages:
    """The character's :class:`~bot.sdk.LinkReader` (the ``LINK_READER`` service): a page read on
    demand, as links in messages are (the same limits and refusals), for a tool or for learning."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime

    async def read(self, url: str, *, max_chars: int) -> PageText:
        try:
            parsed = URL(url.strip())
        except ValueError:
            parsed = URL()
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise LinkNotRead("it is not a web link (one starting with http:// or https://)")
        page = await _fetched(str(parsed), _limits(self.runtime))
        if not page.body:
            kind = (
                "an empty page" if readable(page.content_type) else f"a {page.content_type} file ({_size(page.size)})"
            )
            raise LinkNotRead(f"it is {kind}, with no text to read")
        title, text = await asyncio.to_thread(_gist, page, max_chars)
        return PageText(url=page.url, title=title, text=text, truncated=page.truncated or len(text) >= max_chars)
