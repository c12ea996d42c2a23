"""The Logs page: the ring of recent lines, its readers (bounded: a slow one loses lines and is
told how many), the stream over real loopback HTTP filtered by character and level, and no
secret ever on the page."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.daemon.console import ConsoleServer
from bot.daemon.console._log_ring import LogFilter, LogRing
from bot.kernel.logs import agent_context
from bot.kernel.redact import REDACTED, Redactor

from .test_console import TOKEN, FakeDaemon, http, log_in, settings

__all__ = ["http"]  # the fixture, imported to be used here

_log = logging.getLogger("bot.test.console.logs")
SECRET = "sk-live-never-on-the-page-0123456789"


@pytest.fixture(autouse=True)
def verbose() -> Iterator[None]:
    """The test's logger logs every level (the root logger stays at WARNING under pytest)."""
    _log.setLevel(logging.DEBUG)
    yield
    _log.setLevel(logging.NOTSET)


@pytest.fixture
async def ring() -> AsyncIterator[LogRing]:
    secrets = Redactor()
    secrets.add(SECRET)
    ring = LogRing(secrets, kept=5, reader_queue=3)
    logger = logging.getLogger("bot.test.ring")
    logger.setLevel(logging.DEBUG)
    ring.install(logger)
    yield ring
    ring.close()
    logger.setLevel(logging.NOTSET)
    assert ring not in logger.handlers


async def test_the_ring_keeps_the_last_lines_tagged_with_their_character(ring: LogRing) -> None:
    logger = logging.getLogger("bot.test.ring")
    for n in range(7):
        with agent_context("Ada" if n % 2 else "Brann"):
            logger.info("Ada: line %d" if n % 2 else "line %d", n)
    lines = ring.lines()
    assert [line.seq for line in lines] == [3, 4, 5, 6, 7]
    assert [(line.agent, line.message) for line in lines[:2]] == [("Brann", "line 2"), ("Ada", "line 3")]
    assert ring.agents() == ["Ada", "Brann"]


async def test_a_reader_gets_the_backlog_then_new_lines_and_a_slow_one_loses_lines_counted(ring: LogRing) -> None:
    logger = logging.getLogger("bot.test.ring")
    with agent_context("Ada"):
        logger.info("before")
    with ring.subscribe(LogFilter(agent="Ada")) as reader:
        assert [line.message for line in reader.backlog] == ["before"]
        with agent_context("Ada"):
            for n in range(10):  # nobody reads meanwhile: 3 wait, 7 are dropped; logging never waits
                logger.info("burst %d", n)
        with agent_context("Brann"):
            logger.info("not Ada's")
        pending = await reader.next(timeout=5)
        assert pending is not None
        assert [p.line.message for p in pending] == ["burst 0", "burst 1", "burst 2"]
        assert [p.dropped_after for p in pending] == [0, 0, 7]
        assert await reader.next(timeout=0.01) == []  # nothing more came: a keep-alive round
        ring.close()
        assert await reader.next(timeout=5) is None  # the ring closed: the reader ends


async def test_a_line_logged_from_another_thread_reaches_the_reader(ring: LogRing) -> None:
    logger = logging.getLogger("bot.test.ring")
    with ring.subscribe(LogFilter(level=logging.WARNING)) as reader:
        logger.info("too low")
        await asyncio.to_thread(logger.warning, "from a worker thread")
        pending = await reader.next(timeout=5)
        assert pending is not None and [p.line.message for p in pending] == ["from a worker thread"]
        assert pending[0].line.agent == "troupe" and pending[0].line.level == "WARNING"


async def test_secrets_are_scrubbed_from_lines_and_tracebacks(ring: LogRing) -> None:
    logger = logging.getLogger("bot.test.ring")
    logger.warning("the key is %s", SECRET)
    try:
        raise RuntimeError(f"refused {SECRET}")
    except RuntimeError:
        logger.exception("a call failed")
    text = "\n".join(line.message for line in ring.lines())
    assert SECRET not in text
    assert f"the key is {REDACTED}" in text and f"RuntimeError: refused {REDACTED}" in text


def test_a_filter_from_the_page_names_a_bad_level() -> None:
    assert LogFilter.from_query({"agent": " Ada ", "level": "warning"}) == LogFilter("Ada", logging.WARNING)
    assert LogFilter.from_query({}) == LogFilter(None, logging.INFO)
    with pytest.raises(ValueError, match="level 'LOUD' is not one of DEBUG, INFO"):
        LogFilter.from_query({"level": "loud"})


# -- over HTTP --------------------------------------------------------------------------------


@pytest.fixture
async def daemon() -> FakeDaemon:
    view = FakeDaemon()
    view.redactor.add(SECRET)
    return view


@pytest.fixture
async def console(daemon: FakeDaemon, tmp_path: Path) -> AsyncIterator[ConsoleServer]:
    server = ConsoleServer(daemon, settings(tmp_path, console_token=TOKEN))
    await server.start()
    yield server
    await server.close()


class Events:
    """A server-sent event stream, read event by event."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> dict[str, str] | None:
        """The next event's fields (comments skipped), or None at the end of the stream."""
        fields: dict[str, str] = {}
        async with asyncio.timeout(20):
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    return None
                text = raw.decode().rstrip("\n")
                if not text:
                    if fields:
                        return fields
                    continue
                if text.startswith(":"):
                    continue
                name, _, value = text.partition(": ")
                fields[name] = value

    async def line(self) -> dict[str, Any]:
        """The next log line (skipping other events)."""
        while True:
            event = await self.next()
            assert event is not None, "the stream ended"
            if "data" in event and event.get("event", "message") == "message":
                return dict(json.loads(event["data"]))


async def test_the_logs_page_is_in_the_nav_and_offers_each_character(
    console: ConsoleServer, daemon: FakeDaemon, http: aiohttp.ClientSession
) -> None:
    await log_in(http, console)
    with agent_context("Cleo"):
        _log.info("Cleo was here")
    async with http.get(f"{console.url}logs") as response:
        page = await response.text()
    assert '<a href="/logs" aria-current="page">Logs</a>' in page
    assert '<option value="Cleo">Cleo</option>' in page and 'data-stream="/parts/logs/stream"' in page
    assert "/static/logs.js" in page
    async with http.get(f"{console.url}logs?level=LOUD") as response:
        assert response.status == 400
        assert "level &#39;LOUD&#39; is not one of" in await response.text()
    async with http.get(f"{console.url}parts/logs/stream?level=LOUD") as response:
        assert response.status == 400 and "choose one of those" in (await response.json())["error"]


async def test_the_stream_sends_the_recent_lines_then_new_ones_filtered_by_character_and_level(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    await log_in(http, console)
    with agent_context("Ada"):
        _log.info("Ada: an old line")
    with agent_context("Brann"):
        _log.warning("Brann's line")
    async with http.get(f"{console.url}parts/logs/stream", params={"agent": "Ada", "level": "INFO"}) as response:
        assert response.status == 200 and response.headers["Content-Type"] == "text/event-stream"
        events = Events(response)
        old = await events.line()
        assert (old["agent"], old["message"], old["level"]) == ("Ada", "an old line", "INFO")
        with agent_context("Brann"):
            _log.error("not for this page")
        with agent_context("Ada"):
            _log.debug("below the level")
            _log.warning("a new line, key %s", SECRET)
        new = await events.line()
        assert new["message"] == f"a new line, key {REDACTED}" and new["logger"] == "bot.test.console.logs"
        assert new["seq"] > old["seq"]


async def test_a_browser_that_falls_behind_is_told_how_many_lines_it_lost(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    assert console.console is not None
    console.console.logs.reader_queue = 5
    await log_in(http, console)
    async with http.get(f"{console.url}parts/logs/stream", params={"agent": "Ada"}) as response:
        events = Events(response)
        with agent_context("Ada"):
            _log.info("first")
            assert (await events.line())["message"] == "first"
            for n in range(40):  # at once, on the loop: the stream cannot keep up
                _log.info("burst %d", n)
        got: list[str] = []
        dropped = 0
        while len(got) < 5:
            event = await events.next()
            assert event is not None
            if event.get("event") == "dropped":
                dropped += json.loads(event["data"])["dropped"]
            else:
                got.append(json.loads(event["data"])["message"])
        event = await events.next()
        assert event is not None and event["event"] == "dropped"
        dropped += json.loads(event["data"])["dropped"]
        assert got == [f"burst {n}" for n in range(5)] and dropped == 35


async def test_a_browser_reconnecting_gets_the_lines_after_its_last_one(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    await log_in(http, console)
    with agent_context("Ada"):
        for n in range(3):
            _log.info("line %d", n)
    async with http.get(f"{console.url}parts/logs/stream", params={"agent": "Ada"}) as response:
        events = Events(response)
        first = [await events.line() for _ in range(3)]
    async with http.get(
        f"{console.url}parts/logs/stream", params={"agent": "Ada"}, headers={"Last-Event-ID": str(first[1]["seq"])}
    ) as response:
        assert (await Events(response).line())["message"] == "line 2"


async def test_closing_the_console_ends_the_streams_and_removes_the_handler(
    daemon: FakeDaemon, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = ConsoleServer(daemon, settings(tmp_path, console_token=TOKEN))
    await server.start()
    assert server.console is not None
    ring = server.console.logs
    assert ring in logging.getLogger().handlers
    await log_in(http, server)
    async with http.get(f"{server.url}parts/logs/stream") as response:
        events = Events(response)
        _log.warning("one line")
        assert (await events.line())["message"] == "one line"
        closing = asyncio.create_task(server.close())
        assert await events.next() is None  # the stream ended, not cut off at the shutdown timeout
        await closing
    assert ring not in logging.getLogger().handlers
