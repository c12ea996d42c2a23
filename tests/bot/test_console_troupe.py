"""The Troupe page's extras over real loopback HTTP: each character's model health, the troupe's
daemons and leases in a cluster, and the last hour's series the page's plots draw."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.daemon.console import ConsoleServer
from bot.daemon.console._history import MetricHistory
from bot.daemon.control import TroupeStatus

from .test_console import TOKEN, FakeDaemon, http, log_in, settings
from .test_console_history import Clock

__all__ = ["http"]  # the fixture, imported to be used here

TROUPE: TroupeStatus = {
    "daemons": [
        {
            "id": "alpha:101:aa11bb",
            "host": "alpha",
            "pid": 101,
            "version": "0.1.0",
            "started_at": 1_700_000_000_000,
            "heartbeat_s": 1.5,
            "alive": True,
            "this": True,
            "connections": 3,
            "serves": 1,
            "shards": 0,
        },
        {
            "id": "beta:202:cc33dd",
            "host": "beta",
            "pid": 202,
            "version": "0.1.0",
            "started_at": 1_700_000_000_000,
            "heartbeat_s": 95.0,
            "alive": False,
            "this": False,
            "connections": None,
            "serves": 0,
            "shards": 0,
        },
    ],
    "characters": [
        {
            "id": "a1",
            "name": "Ada",
            "file": "ada.json",
            "state": "running",
            "daemon": "alpha:101:aa11bb",
            "epoch": 7,
            "held_s": 125.0,
            "expires_s": 12.0,
            "differs": [],
            "shards": {},
        },
        {
            "id": "b2",
            "name": "Brann",
            "file": "brann.json",
            "state": "waiting",
            "daemon": None,
            "epoch": None,
            "held_s": None,
            "expires_s": None,
            "differs": ["beta:202:cc33dd"],
            "shards": {},
        },
    ],
    "warnings": ["brann.json differs between alpha:101:aa11bb and beta:202:cc33dd"],
}


class ClusterDaemon(FakeDaemon):
    """A daemon of a troupe on a shared database."""

    def __init__(self, troupe: dict[str, Any]) -> None:
        super().__init__()
        self._troupe = troupe

    async def troupe(self) -> dict[str, Any] | None:
        return self._troupe


async def started(view: FakeDaemon, tmp_path: Path) -> ConsoleServer:
    server = ConsoleServer(view, settings(tmp_path, console_token=TOKEN))
    await server.start()
    return server


def row(page: str, attribute: str, name: str) -> str:
    found = re.search(rf'{attribute}="{name}".*?</tr>', page, re.S)
    assert found is not None, page
    return found.group(0)


async def test_each_character_shows_how_its_models_answer(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    view, clock = FakeDaemon(), Clock()
    server = await started(view, tmp_path)
    try:
        assert server.console is not None
        server.console.history = history = MetricHistory(view.metrics, clock=clock)
        history.sample()
        m = view.metrics
        for outcome, at in (("ok", clock.now + 10), ("error", clock.now + 50), ("error", clock.now + 55)):
            m.model_calls.labels(agent="Ada", model_type="TEXT_LARGE", provider="openai", outcome=outcome).inc()
            m.model_last_call.labels(agent="Ada", provider="openai", outcome=outcome).set(at)
        clock.advance(60)
        await log_in(http, server)
        for path in ("", "parts/status"):
            async with http.get(f"{server.url}{path}") as response:
                page = await response.text()
            ada, brann = row(page, "data-agent", "Ada"), row(page, "data-agent", "Brann")
            assert re.search(r'class="state state-failing">failing</span>', ada)
            assert "openai · last call" in ada and "3 calls, 2 failed in the last hour" in ada
            assert "last failure" in ada
            assert "no call yet" in brann
        assert "<h2>The troupe</h2>" not in page  # a daemon on its own: no cluster section
    finally:
        await server.close()


async def test_in_a_cluster_the_page_shows_the_daemons_and_each_characters_lease(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await started(ClusterDaemon(dict(TROUPE)), tmp_path)
    try:
        await log_in(http, server)
        async with http.get(f"{server.url}parts/status") as response:
            page = await response.text()
        assert "<h2>The troupe</h2>" in page
        alpha = row(page, "data-daemon", "alpha:101:aa11bb")
        assert "(this one)" in alpha and "1 s ago" in alpha and ">3<" in alpha
        beta = row(page, "data-daemon", "beta:202:cc33dd")
        assert "1 min 35 s ago" in beta and "gone" in beta
        ada = row(page, 'class="lease" data-agent', "Ada")
        cells = re.findall(r"<td>(.*?)</td>", ada, re.S)
        assert cells[:5] == ["Ada", "alpha:101:aa11bb", "7", "2 min 05 s", "12 s"]
        assert "running" in ada
        brann = row(page, 'class="lease" data-agent', "Brann")
        assert "waiting for a daemon" in brann and "its file differs on beta:202:cc33dd" in brann
        assert "brann.json differs between" in page
    finally:
        await server.close()


async def test_a_troupe_whose_database_cannot_be_read_says_so(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    broken = {"daemons": [], "characters": [], "warnings": [], "error": "connection refused"}
    server = await started(ClusterDaemon(broken), tmp_path)
    try:
        await log_in(http, server)
        async with http.get(server.url) as response:
            page = await response.text()
        assert re.search(r'role="alert">Cannot read the shared database: connection refused', page)
    finally:
        await server.close()


async def test_the_series_are_the_last_hour_of_the_metrics_as_json(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    view, clock = FakeDaemon(), Clock()
    server = await started(view, tmp_path)
    try:
        assert server.console is not None
        series_url = f"{server.url}parts/series"
        async with http.get(series_url, headers={"Accept": "application/json"}) as response:
            assert response.status == 401  # a login first
        await log_in(http, server)
        async with http.get(server.url) as response:
            page = await response.text()
        assert 'data-series="/parts/series"' in page
        assert "/static/uPlot.iife.min.js" in page and "/static/troupe.js" in page

        server.console.history = history = MetricHistory(view.metrics, clock=clock)
        history.sample()
        clock.advance(30)
        async with http.get(series_url) as response:
            empty = await response.json()
        assert empty["totals"]["messages"] == 0 and empty["outcomes"] == {}
        assert empty["times"] == [clock.now] and empty["p50_s"] == [None]

        view.metrics.messages_handled.labels(agent="Ada", outcome="replied").inc(2)
        view.metrics.messages_handled.labels(agent="Brann", outcome="ignored").inc()
        view.metrics.reply_latency.labels(agent="Ada", platform="telegram").observe(0.4)
        view.metrics.reply_latency.labels(agent="Ada", platform="telegram").observe(0.4)
        view.metrics.model_calls.labels(agent="Ada", model_type="TEXT_LARGE", provider="openai", outcome="ok").inc(3)
        async with http.get(series_url) as response:
            body = await response.json()
        assert body["window_s"] == 3600
        assert body["outcomes"] == {"ignored": [1], "replied": [2]}
        assert body["p50_s"][0] == pytest.approx(0.375) and body["p95_s"][0] == pytest.approx(0.4875)
        assert body["model_per_message"] == [1.0]
        assert body["totals"]["by_outcome"] == {"replied": 2, "ignored": 1}
    finally:
        await server.close()


async def test_the_console_samples_the_metrics_from_its_start_until_it_closes(tmp_path: Path) -> None:
    server = await started(FakeDaemon(), tmp_path)
    assert server.console is not None
    history = server.console.history
    try:
        assert len(history) == 1  # the first sample is taken at start, the next a minute later
    finally:
        await server.close()
    assert len(history) == 1
