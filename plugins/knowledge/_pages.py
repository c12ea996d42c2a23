"""Web pages a character's knowledge lists (``{"url": "https://…"}``), read for a sync.

Read through the core plugin's links reader (the ``LINK_READER`` service), as links in messages
are: bounded in time and size, and refusing private and local addresses unless
``TROUPE_FETCH_ALLOW_PRIVATE`` is true. A few at once, so one slow site does not hold up the
others. Only the host and path of a link go into log lines and reports: a query may hold a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yarl import URL

from bot.sdk import LINK_READER, LinkNotRead, PageText

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["MAX_PAGE_CHARS", "PageRead", "read_pages", "shown"]

#: The most of a page's text that is stored (the reader reads at most 2 MB of it anyway).
MAX_PAGE_CHARS = 500_000
# Pages read at once.
_AT_ONCE = 4
# A page with less text than this (a login wall, a script-only page) is not knowledge.
_MIN_CHARS = 20


@dataclass(frozen=True, slots=True)
class PageRead:
    """One listed page: its text, or why it could not be read."""

    url: str
    """As the character file lists it."""
    page: PageText | None = None
    problem: str = ""


def shown(url: str) -> str:
    """``url`` without its query, fragment and credentials, fit for a log line."""
    try:
        parsed = URL(url)
    except ValueError:
        return "a malformed link"
    if not parsed.host:
        return "a malformed link"
    return str(parsed.with_user(None).with_query(None).with_fragment(None))


async def read_pages(runtime: AgentRuntime, urls: Sequence[str]) -> list[PageRead]:
    """Each of ``urls`` read, in order; never raises for a page that cannot be read."""
    reader = runtime.get_service(LINK_READER)
    slots = asyncio.Semaphore(_AT_ONCE)

    async def read(url: str) -> PageRead:
        if reader is None:
            return PageRead(url, problem="links cannot be read here (the core plugin's links reader is not running)")
        async with slots:
            try:
                page = await reader.read(url, max_chars=MAX_PAGE_CHARS)
            except LinkNotRead as exc:
                return PageRead(url, problem=f"not read: {exc}")
        if len(page.text.strip()) < _MIN_CHARS:
            return PageRead(url, problem="the page has almost no text")
        return PageRead(url, page)

    return list(await asyncio.gather(*(read(url) for url in urls)))
