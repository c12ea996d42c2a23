"""Web pages a character's knowledge lists (``{"url": …}``): read through the links reader at a
sync, read again only when due, unchanged text not embedded again, a page that cannot be read
kept and reported, private addresses refused unless allowed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from bot.sdk import KNOWLEDGE_BASE

from .conftest import Agents
from .test_ingest import texts

ALLOW = {"TROUPE_FETCH_ALLOW_PRIVATE": "true"}
EVERY_SYNC = {**ALLOW, "KNOWLEDGE_URL_REFRESH_H": "0"}
DUE_SOON = {**ALLOW, "KNOWLEDGE_URL_REFRESH_H": "0.0003"}  # about a second
PAGE = """<html><head><title>Hive notes</title></head><body><nav>menu</nav>
<p>The bees of the north meadow swarm in June, led by the queen {queen}.</p></body></html>"""


@dataclass
class Site:
    """A page on loopback whose text (or failure) the test sets, counting the times it is read."""

    url: str = ""
    queen: str = "Clementine"
    status: int = 200
    reads: list[str] = field(default_factory=list)

    @property
    def hives(self) -> str:
        return f"{self.url}/hives?key=s3cret"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    made = Site()

    async def page(request: web.Request) -> web.Response:
        made.reads.append(request.path)
        if made.status != 200:
            return web.Response(status=made.status, text="gone")
        return web.Response(text=PAGE.format(queen=made.queen), content_type="text/html")

    app = web.Application()
    app.router.add_get("/hives", page)
    runner = web.AppRunner(app)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    made.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield made
    await runner.cleanup()


async def test_a_listed_page_is_read_chunked_embedded_and_listed_as_a_web_page(agents: Agents, site: Site) -> None:
    rt = await agents.start(knowledge=[{"url": site.hives}, "Ada keeps bees."], settings=ALLOW)
    fact, page_text = sorted(await texts(rt))
    assert fact == "Ada keeps bees."
    assert page_text.startswith(f"[Hive notes]\nSource: {site.url}/hives\n\n")  # not its query: it may hold a key
    assert page_text.endswith("The bees of the north meadow swarm in June, led by the queen Clementine.")
    report = rt.get_service("knowledge").last
    assert (report.pages, report.facts, report.new, report.embedded, report.problems) == (1, 1, 2, 2, [])
    assert "1 file" not in report.line("Ada") and "1 fact and 1 web page" in report.line("Ada")
    knowledge = rt.get_service(KNOWLEDGE_BASE)
    assert knowledge is not None
    (page,) = [s for s in await knowledge.sources() if s.source.startswith("url:")]
    assert page.source == f"url:{site.hives}" and page.title == "Hive notes" and page.fragments == 1
    assert knowledge.last_sync is not None and knowledge.last_sync.pages == 1
    (match,) = await knowledge.try_search("Who leads the swarm of the north meadow?")
    assert match.title == "Hive notes" and "Clementine" in match.text


async def test_a_page_is_read_again_only_when_due_and_the_same_text_is_not_embedded_again(
    agents: Agents, site: Site
) -> None:
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=ALLOW)
    assert site.reads == ["/hives"]
    rt = await agents.restart(rt)  # within KNOWLEDGE_URL_REFRESH_H (24 h): not read
    assert site.reads == ["/hives"] and any("Clementine" in t for t in await texts(rt))

    await rt.close()
    agents.embedder.reset()
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=EVERY_SYNC)
    report = rt.get_service("knowledge").last
    assert site.reads == ["/hives"] * 2
    assert (report.new, report.changed, report.embedded, agents.embedder.texts) == (0, 0, 0, [])

    site.queen = "Marigold"  # the page changed: its new text replaces the old
    rt = await agents.restart(rt)
    report = rt.get_service("knowledge").last
    assert site.reads == ["/hives"] * 3 and (report.changed, report.embedded) == (1, 1)
    (text,) = await texts(rt)
    assert "queen Marigold" in text and "Clementine" not in text

    await rt.close()
    rt = await agents.start(knowledge=["Ada keeps bees."], settings=EVERY_SYNC)  # no longer listed: forgotten
    assert await texts(rt) == ["Ada keeps bees."] and rt.get_service("knowledge").last.removed == 1


async def test_a_page_that_cannot_be_read_keeps_what_was_stored_and_is_reported(
    agents: Agents, site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=EVERY_SYNC)
    site.status = 503
    rt = await agents.restart(rt)
    assert any("queen Clementine" in t for t in await texts(rt))
    report = rt.get_service("knowledge").last
    assert report.skipped == 1
    (problem,) = report.problems
    assert problem == (
        f"{site.url}/hives skipped: not read: the site answered 503 Service Unavailable; "
        "what was stored from it is kept"
    )
    assert "s3cret" not in caplog.text and "s3cret" not in problem  # a link's query may hold a key


async def test_a_page_at_a_private_address_is_refused_unless_allowed(agents: Agents, site: Site) -> None:
    rt = await agents.start(knowledge=[{"url": site.hives}, "Ada keeps bees."])
    assert await texts(rt) == ["Ada keeps bees."] and site.reads == []
    report = rt.get_service("knowledge").last
    (problem,) = report.problems
    assert problem.startswith(f"{site.url}/hives skipped: not read: ") and "address" in problem
    assert problem.endswith("; nothing is stored from it yet")
    rt = await agents.restart(rt, environ=ALLOW)  # allowed now: read at the next sync
    assert site.reads == ["/hives"] and any("Clementine" in t for t in await texts(rt))


class Lines(logging.Handler):
    """Sets ``seen`` when a log line holding ``text`` is written (on the event loop's thread)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()

    async def wait(self) -> None:
        async with asyncio.timeout(30):
            await self.seen.wait()


@pytest.fixture
def knowledge_log() -> Iterator[Callable[[str], Lines]]:
    logger = logging.getLogger("plugins.knowledge")
    made: list[Lines] = []
    level = logger.level
    logger.setLevel(logging.INFO)

    def watch(text: str) -> Lines:
        made.append(Lines(text))
        logger.addHandler(made[-1])
        return made[-1]

    yield watch
    for handler in made:
        logger.removeHandler(handler)
    logger.setLevel(level)


def page_timers() -> list[str]:
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name().endswith(":knowledge:pages")]


async def test_a_page_that_comes_due_is_read_again_while_the_agent_runs_and_retried_if_unreadable(
    agents: Agents, site: Site, knowledge_log: Callable[[str], Lines]
) -> None:
    changed = knowledge_log("1 changed")
    due = knowledge_log("1 web page due; reading again")
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=DUE_SOON)
    assert site.reads == ["/hives"]  # read at the start; due again about 1 s later
    site.queen = "Marigold"
    await changed.wait()
    assert due.seen.is_set() and site.reads == ["/hives"] * 2
    (text,) = await texts(rt)
    assert "queen Marigold" in text and "Clementine" not in text
    service = rt.get_service("knowledge")
    (match,) = await service.try_search("Who leads the swarm of the north meadow?")
    assert "Marigold" in match.text and service.last.embedded == 1  # only the changed page

    failed = knowledge_log("/hives skipped: not read: the site answered 503")
    changed = knowledge_log("1 changed")
    site.status, site.queen = 503, "Dahlia"
    await failed.wait()
    assert any("Marigold" in t for t in await texts(rt))  # kept meanwhile
    site.status = 200
    await changed.wait()  # tried again, without a restart
    assert any("queen Dahlia" in t for t in await texts(rt))

    await rt.close()  # the timer stops with the agent
    assert page_timers() == []


async def test_no_timer_runs_when_pages_are_read_at_every_sync_or_the_agent_is_away_from_home(
    agents: Agents, site: Site
) -> None:
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=EVERY_SYNC)
    assert page_timers() == []
    await rt.close()
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=ALLOW, home=False, wait=False)
    assert page_timers() == []
    await rt.close()
    rt = await agents.start(knowledge=[{"url": site.hives}], settings=ALLOW)
    assert page_timers() == ["troupe:Ada:knowledge:pages"]
    assert site.reads == ["/hives"]  # read once, by the home daemon's sync
