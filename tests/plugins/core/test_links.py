"""Links in a message the character answers: the page's gist reaches the planning prompt."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.kernel.content import Attachment
from bot.kernel.errors import ConfigError
from bot.kernel.types import ChannelType
from plugins.core import _html_text, _links
from plugins.core._links import find_links
from tests.fakes.web_site import FakeWebSite
from tests.fakes.web_site import page as fake_page

from .harness import plan

PAGE = """<html><head><title>Otter facts</title><script>track()</script></head><body>
<nav>Home</nav><p>Otters hold hands while they sleep.</p></body></html>"""


def test_links_are_found_without_the_punctuation_around_them() -> None:
    text = (
        "see https://a.example/x. and (https://b.example/wiki/Foo_(bar)) or <https://c.example/?q=1>, "
        "then https://a.example/x again and https://d.example/"
    )
    assert find_links(text) == ["https://a.example/x", "https://b.example/wiki/Foo_(bar)", "https://c.example/?q=1"]
    assert find_links(text, known=["https://a.example/x"]) == [
        "https://b.example/wiki/Foo_(bar)",
        "https://c.example/?q=1",
        "https://d.example/",
    ]
    assert find_links("ftp://x.example/ and plain words") == []


@pytest.fixture
async def page() -> AsyncIterator[tuple[str, FakeWebSite]]:
    """The URL of a page on 127.0.0.1, and the site that serves it."""
    async with FakeWebSite({"/otters": fake_page(PAGE)}) as site:
        yield site.url("/otters"), site


async def stored_links(h: Any) -> list[Attachment]:
    messages = await h.rt.store.get_memories(table="messages", room_id=h.room)
    return [a for m in messages for a in m.content.attachments or () if a.content_type == "link"]


async def test_the_gist_of_a_linked_page_reaches_the_prompt_when_private_addresses_are_allowed(harness, page) -> None:
    url, site = page
    h = await harness(ChannelType.DM, settings={"TROUPE_FETCH_ALLOW_PRIVATE": True})
    h.large.append(plan("Cute!"))
    await h.say(f"read this: {url}")
    assert "Otters hold hands while they sleep." in h.prompts[-1] and "Otter facts" in h.prompts[-1]
    assert "track()" not in h.prompts[-1] and "Home" not in h.prompts[-1]
    (link,) = await stored_links(h)
    assert link.url == url and link.title == "Otter facts" and link.source == "Web"
    # Pasted again: read from the cache, not fetched again.
    h.large.append(plan("Yes, that one."))
    await h.say(f"again {url}")
    assert site.paths == ["/otters"] and "Otters hold hands" in h.prompts[-1]


async def test_a_link_to_a_private_address_is_a_note_and_the_reply_goes_out(harness, page) -> None:
    url, site = page
    h = await harness(ChannelType.DM)
    h.large.append(plan("I could not open it."))
    outcome = await h.say(f"read this: {url}")
    assert outcome.status == "replied" and site.paths == []
    assert "link not read: loopback address" in h.prompts[-1]


async def test_a_bad_allow_private_setting_stops_the_character_at_start(harness) -> None:
    with pytest.raises(ConfigError, match="TROUPE_FETCH_ALLOW_PRIVATE must be true or false, not 'sometimes'"):
        await harness(ChannelType.DM, settings={"TROUPE_FETCH_ALLOW_PRIVATE": "sometimes"})


async def test_a_bad_allow_private_value_set_while_running_keeps_private_addresses_refused(
    harness, page, caplog
) -> None:
    url, site = page
    h = await harness(ChannelType.DM)
    h.rt.set_setting("TROUPE_FETCH_ALLOW_PRIVATE", "sometimes")
    h.large.append(plan("Hm."))
    await h.say(url)
    assert site.paths == [] and "TROUPE_FETCH_ALLOW_PRIVATE must be true or false, not 'sometimes'" in caplog.text


async def test_links_in_ignored_messages_are_not_fetched(harness, page) -> None:
    url, site = page
    h = await harness(settings={"TROUPE_FETCH_ALLOW_PRIVATE": True})
    h.small.append("<response><action>IGNORE</action></response>")
    await h.say(f"for the others: {url}")
    assert site.paths == []


async def test_an_unexpected_failure_reading_a_link_is_a_note_and_the_reply_goes_out(
    harness, monkeypatch, caplog
) -> None:
    async def broken(url: str, limits: Any) -> Any:
        raise RuntimeError("a bug in the reader")

    monkeypatch.setattr(_links, "fetch_page", broken)
    h = await harness(ChannelType.DM)
    h.large.append(plan("Hm, no luck."))
    outcome = await h.say("see https://news.example/a")
    assert outcome.status == "replied"
    assert "link not read: something went wrong" in h.prompts[-1]
    assert "link to news.example not read: RuntimeError" in caplog.text


async def test_an_empty_page_is_said_to_be_empty(harness) -> None:
    async with FakeWebSite({"/empty": fake_page("")}) as site:
        h = await harness(ChannelType.DM, settings={"TROUPE_FETCH_ALLOW_PRIVATE": True})
        h.large.append(plan("Nothing there."))
        await h.say(f"what's on {site.url('/empty')}")
    assert "Description: an empty page" in h.prompts[-1]


async def test_a_page_is_turned_into_text_off_the_event_loop(harness, page, monkeypatch) -> None:
    url, _ = page
    threads: list[int] = []
    real = _html_text.html_to_text

    def recording(html: str) -> tuple[str, str]:
        threads.append(threading.get_ident())
        return real(html)

    monkeypatch.setattr(_links, "html_to_text", recording)
    h = await harness(ChannelType.DM, settings={"TROUPE_FETCH_ALLOW_PRIVATE": True})
    h.large.append(plan("Read."))
    await h.say(url)
    assert threads and threads[0] != threading.get_ident()  # 2 MB of HTML takes over a second to parse
