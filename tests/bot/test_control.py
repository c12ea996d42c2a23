"""The control server over its Unix socket and TCP, the CLI's client, and the human output."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config.settings import DaemonSettings
from bot.daemon.control import (
    ControlServer,
    DaemonNotAnswering,
    DaemonNotRunning,
    call,
    format_reload,
    format_status,
)
from bot.daemon.control._guards import is_loopback
from bot.kernel.errors import ConfigError

from .daemon_views import STATUS, FakeDaemon


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # pytest's tmp_path can be longer than AF_UNIX allows (107 bytes).
    path = Path(tempfile.mkdtemp(dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def settings(sock: Path, **kwargs: Any) -> DaemonSettings:
    return DaemonSettings(_env_file=None, control_socket=sock, **kwargs)


@pytest.fixture
async def running(short_dir: Path) -> AsyncIterator[tuple[FakeDaemon, ControlServer, Path]]:
    daemon = FakeDaemon()
    sock = short_dir / "run" / "control.sock"
    server = ControlServer(daemon, settings(sock))
    await server.start()
    yield daemon, server, sock
    await server.close()


async def test_every_route_over_the_unix_socket(running: tuple[FakeDaemon, ControlServer, Path]) -> None:
    daemon, server, sock = running
    daemon.metrics.agents.set(2)
    assert await call(sock, "GET", "/healthz") == (200, {"status": "ok", "state": "running"})
    assert await call(sock, "GET", "/readyz") == (200, {"ready": True})
    daemon.ready = (False, ["Ada: discord is not connected yet"])
    assert await call(sock, "GET", "/readyz") == (
        503,
        {"ready": False, "reasons": ["Ada: discord is not connected yet"]},
    )
    status, text = await call(sock, "GET", "/metrics")
    assert status == 200 and "troupe_agents 2\n" in text
    assert await call(sock, "GET", "/status") == (200, STATUS)
    assert await call(sock, "POST", "/reload") == (
        200,
        {"started": ["Cleo"], "stopped": [], "restarted": [], "unchanged": ["Ada"], "kept": [], "failed": []},
    )
    assert await call(sock, "GET", "/nope") == (404, {"error": "Not Found"})
    assert await call(sock, "GET", "/reload") == (405, {"error": "Method Not Allowed"})
    assert server.tcp_port is None


async def test_status_carries_the_whole_troupe_when_the_daemon_shares_its_database(
    running: tuple[FakeDaemon, ControlServer, Path],
) -> None:
    daemon, _, sock = running
    daemon.whole_troupe = {"daemons": [], "characters": [], "warnings": ["ada.json differs"]}
    assert await call(sock, "GET", "/status") == (200, {**STATUS, "troupe": daemon.whole_troupe})


async def test_metrics_content_type(running: tuple[FakeDaemon, ControlServer, Path]) -> None:
    _, _, sock = running
    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session,
        session.get("http://troupe/metrics") as response,
    ):
        assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"


async def test_reload_that_raises_answers_500(running: tuple[FakeDaemon, ControlServer, Path]) -> None:
    daemon, _, sock = running
    daemon.reload_error = RuntimeError("Ada: the database is locked")
    assert await call(sock, "POST", "/reload") == (500, {"error": "Ada: the database is locked"})
    daemon.reload_error = None
    assert (await call(sock, "POST", "/reload"))[0] == 200  # the failed one did not leave the flag set


async def test_a_second_reload_while_one_runs_is_refused_with_409(
    running: tuple[FakeDaemon, ControlServer, Path],
) -> None:
    daemon, _, sock = running
    daemon.reload_gate = asyncio.Event()
    first = asyncio.create_task(call(sock, "POST", "/reload"))
    while daemon.reloads == 0:
        await asyncio.sleep(0.01)
    status, body = await call(sock, "POST", "/reload")
    assert status == 409 and "already running" in body["error"]
    daemon.reload_gate.set()
    assert (await first)[0] == 200
    assert daemon.reloads == 1


async def test_socket_is_private_and_removed_on_close(short_dir: Path) -> None:
    sock = short_dir / "new" / "control.sock"
    server = ControlServer(FakeDaemon(), settings(sock))
    await server.start()
    try:
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    finally:
        await server.close()
    assert not sock.exists()
    await server.close()  # a second close is harmless


async def test_a_second_server_on_the_same_socket_is_refused(running: tuple[FakeDaemon, ControlServer, Path]) -> None:
    _, _, sock = running
    other = ControlServer(FakeDaemon(), settings(sock))
    with pytest.raises(
        ConfigError,
        match=r"another troupe daemon is running: .*control\.sock answers; stop it or "
        "set TROUPE_CONTROL_SOCKET",
    ):
        await other.start()
    assert (await call(sock, "GET", "/healthz"))[0] == 200  # the first one still owns its socket


async def test_a_stale_socket_file_is_replaced(short_dir: Path) -> None:
    sock = short_dir / "control.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(sock))  # bound but never listening, then closed: what a crashed daemon leaves
    dead.close()
    assert sock.exists()
    server = ControlServer(FakeDaemon(), settings(sock))
    await server.start()
    try:
        assert (await call(sock, "GET", "/healthz"))[0] == 200
    finally:
        await server.close()


async def test_a_regular_file_in_the_way_is_not_removed(short_dir: Path) -> None:
    path = short_dir / "control.sock"
    path.write_text("not mine")
    with pytest.raises(ConfigError, match="exists and is not a socket"):
        await ControlServer(FakeDaemon(), settings(path)).start()
    assert path.read_text() == "not mine"


async def test_a_socket_path_too_long_is_a_config_error(short_dir: Path) -> None:
    path = short_dir / ("x" * 120) / "control.sock"
    with pytest.raises(ConfigError, match="too long for a Unix socket.*TROUPE_CONTROL_SOCKET"):
        await ControlServer(FakeDaemon(), settings(path)).start()


async def test_tcp_without_a_token_needs_none(short_dir: Path) -> None:
    server = ControlServer(FakeDaemon(), settings(short_dir / "c.sock", health_port=0))
    await server.start()
    try:
        assert server.tcp_port
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{server.tcp_port}/healthz") as response,
        ):
            assert response.status == 200 and await response.json() == {"status": "ok", "state": "running"}
    finally:
        await server.close()


async def test_tcp_with_a_token_answers_401_without_it_and_200_with_it(
    short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sock = short_dir / "c.sock"
    server = ControlServer(FakeDaemon(), settings(sock, health_port=0, health_token="s3cret"))
    await server.start()
    base = f"http://127.0.0.1:{server.tcp_port}"
    try:
        async with aiohttp.ClientSession() as session:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
                async with session.get(f"{base}/metrics", headers=headers) as response:
                    assert response.status == 401
                    assert response.headers["WWW-Authenticate"].startswith("Bearer")
                    assert "s3cret" not in await response.text()
            async with session.get(f"{base}/nope") as response:
                assert response.status == 401  # no hint of which routes exist
            async with session.get(f"{base}/status", headers={"Authorization": "Bearer s3cret"}) as response:
                assert response.status == 200 and await response.json() == STATUS
        assert (await call(sock, "GET", "/status"))[0] == 200  # the Unix socket needs no token
    finally:
        await server.close()
    assert "token required" in caplog.text and "s3cret" not in caplog.text


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("10.0.0.1", False),
        ("::", False),
        ("myhost", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.org"])
async def test_a_public_bind_without_a_token_is_refused(short_dir: Path, host: str) -> None:
    sock = short_dir / "c.sock"
    with pytest.raises(ConfigError, match="set TROUPE_HEALTH_TOKEN or bind 127.0.0.1"):
        await ControlServer(FakeDaemon(), settings(sock, health_port=0, health_host=host)).start()
    assert not sock.exists()  # refused before anything was bound


async def test_a_port_in_use_is_a_config_error_and_leaves_no_socket(short_dir: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    sock = short_dir / "c.sock"
    try:
        with pytest.raises(ConfigError, match=rf"127\.0\.0\.1:{port}: the port is in use.*TROUPE_HEALTH_PORT"):
            await ControlServer(FakeDaemon(), settings(sock, health_port=port)).start()
    finally:
        taken.close()
    assert not sock.exists()


async def test_call_with_nothing_listening_says_no_daemon_runs(short_dir: Path) -> None:
    missing = short_dir / "control.sock"
    with pytest.raises(
        DaemonNotRunning,
        match=r"no troupe daemon is running: nothing listens on .*control\.sock "
        r"\(start it with `troupe start`, or point TROUPE_CONTROL_SOCKET",
    ):
        await call(missing, "GET", "/status")
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(missing))
    dead.close()
    with pytest.raises(DaemonNotRunning, match="nothing listens on"):
        await call(missing, "GET", "/status")


async def test_call_gives_up_after_the_timeout(short_dir: Path) -> None:
    path = short_dir / "hung.sock"
    writers: list[asyncio.StreamWriter] = []
    # Accepts the connection and never answers.
    hung = await asyncio.start_unix_server(lambda _, writer: writers.append(writer), path=str(path))
    try:
        with pytest.raises(DaemonNotAnswering, match=r"the daemon did not answer within 0\.2 s"):
            await call(path, "GET", "/status", timeout=0.2)
    finally:
        for writer in writers:
            writer.close()
        hung.close()
        await hung.wait_closed()


def test_format_status() -> None:
    assert format_status(STATUS) == (
        "troupe running (pid 4242, up 1m33s): 2 agents, 3 of 4 platform connections up\n"
        "  Ada    discord   connected\n"
        "  Ada    telegram  retrying   502 Bad Gateway; next try in 8 s\n"
        "  Brann  discord   connected\n"
        "  Brann  telegram  connected"
    )


def test_format_status_agents_not_running_and_messages_in_flight() -> None:
    status = {
        "state": "running",
        "pid": 7,
        "uptime_s": 2 * 86400 + 3 * 3600 + 59,
        "agents": [
            {
                "name": "Ada",
                "state": "stopping",
                "in_flight": 2,
                "platforms": {"telegram": {"state": "connected", "detail": ""}},
            },
            {"name": "Eve", "state": "failed", "in_flight": 0, "platforms": {}},
        ],
    }
    assert format_status(status) == (
        "troupe running (pid 7, up 2d03h): 2 agents, 1 of 1 platform connection up, 2 messages in flight\n"
        "  Ada (stopping)  telegram  connected\n"
        "  Eve             -         failed"
    )
    assert format_status({"state": "starting", "pid": 7, "uptime_s": 4.9, "agents": []}) == (
        "troupe starting (pid 7, up 4s): 0 agents, 0 of 0 platform connections up"
    )


def test_format_status_tools_names_and_servers() -> None:
    names = ["weather__weather", "weather__slow", *(f"files__t{i}" for i in range(10))]
    status = {
        "state": "running",
        "pid": 7,
        "uptime_s": 5,
        "agents": [
            {
                "name": "Ada",
                "state": "running",
                "in_flight": 0,
                "platforms": {"discord": {"state": "connected", "detail": ""}},
                "tools": {
                    "names": names,
                    "servers": {
                        "weather": {"up": True, "detail": ""},
                        "files": {"up": False, "detail": "connection refused\nretrying"},
                    },
                },
            },
            {"name": "Eve", "state": "running", "in_flight": 0, "platforms": {}, "skipped": "discord: no token"},
            {
                "name": "Mo",
                "state": "running",
                "in_flight": 0,
                "platforms": {"discord": {"state": "connected", "detail": ""}},
                "tools": {"names": [], "servers": {"maps": {"up": False, "detail": "starting"}}},
            },
        ],
    }
    assert format_status(status) == (
        "troupe running (pid 7, up 5s): 3 agents (1 on no working platform), 2 of 2 platform connections up\n"
        "  Ada  discord  connected\n"
        "  Ada  tools    weather__weather, weather__slow (+10 more)  "
        "servers: weather up, files down (connection refused; retrying)\n"
        "  Eve  -        no platform                                 discord: no token\n"
        "  Mo   discord  connected\n"
        "  Mo   tools    none                                        servers: maps down (starting)"
    )


def test_format_status_tools_without_servers_lists_them_all_when_few() -> None:
    status = {
        "state": "running",
        "pid": 7,
        "uptime_s": 5,
        "agents": [
            {"name": "Eve", "state": "failed", "in_flight": 0, "platforms": {}, "error": "boom"},
            {"name": "Ada", "state": "running", "in_flight": 0, "platforms": {}, "tools": {"names": ["a", "b"]}},
        ],
    }
    assert format_status(status) == (
        "troupe running (pid 7, up 5s): 2 agents (1 on no working platform), 0 of 0 platform connections up\n"
        "  Eve  -      failed       boom\n"
        "  Ada  -      no platform  its file names no platform\n"
        "  Ada  tools  a, b"
    )


def test_format_reload() -> None:
    summary = {
        "started": ["Cleo"],
        "stopped": ["Brann"],
        "restarted": ["Ada"],
        "unchanged": ["Iris"],
        "kept": [{"name": "Dora", "file": "/etc/troupe/characters/dora.json", "reason": "bio: field required"}],
        "failed": [{"name": "Eve", "reason": "TELEGRAM_BOT_TOKEN was refused"}],
    }
    assert format_reload(summary) == (
        "reloaded: started Cleo; stopped Brann; restarted Ada; 1 unchanged\n"
        "  dora.json no longer validates (bio: field required); Dora keeps running with the previous version\n"
        "  Eve failed to start: TELEGRAM_BOT_TOKEN was refused"
    )


def test_format_reload_quiet_and_multiline_reasons() -> None:
    assert format_reload({"started": [], "unchanged": ["Ada", "Brann"]}) == "reloaded: 2 unchanged"
    assert format_reload({}) == "reloaded: no characters"
    kept = {
        "kept": [{"name": "Dora", "file": "dora.json", "reason": "dora.json:\n  $.bio: required\n  $.name: empty"}],
        "unchanged": ["Ada"],
    }
    assert format_reload(kept) == (
        "reloaded: 1 unchanged\n"
        "  dora.json no longer validates (dora.json: $.bio: required; $.name: empty); Dora keeps running with "
        "the previous version"
    )


async def _health_port(short_dir: Path, **kwargs: Any) -> AsyncIterator[tuple[FakeDaemon, str]]:
    daemon = FakeDaemon()
    server = ControlServer(daemon, settings(short_dir / "c.sock", health_port=0, **kwargs))
    await server.start()
    yield daemon, f"http://127.0.0.1:{server.tcp_port}"
    await server.close()


@pytest.fixture
async def tcp_open(short_dir: Path) -> AsyncIterator[tuple[FakeDaemon, str]]:
    """A health port on loopback without a token: what most installations run."""
    async for running in _health_port(short_dir):
        yield running


@pytest.fixture
async def tcp_token(short_dir: Path) -> AsyncIterator[tuple[FakeDaemon, str]]:
    """A health port on loopback with the token s3cret."""
    async for running in _health_port(short_dir, health_token="s3cret"):
        yield running


async def test_post_reload_over_tcp_without_a_token_is_refused(tcp_open: tuple[FakeDaemon, str]) -> None:
    daemon, base = tcp_open
    async with aiohttp.ClientSession() as session, session.post(f"{base}/reload") as response:
        assert response.status == 403
        assert "TROUPE_HEALTH_TOKEN" in (await response.json())["error"]
    assert daemon.reloads == 0


async def test_post_reload_over_tcp_needs_the_token_when_one_is_set(tcp_token: tuple[FakeDaemon, str]) -> None:
    daemon, base = tcp_token
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/reload") as response:
            assert response.status == 401
        assert daemon.reloads == 0
        async with session.post(f"{base}/reload", headers={"Authorization": "Bearer s3cret"}) as response:
            assert response.status == 200
    assert daemon.reloads == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://localhost:1"},  # another port of this machine is another origin
        {"Sec-Fetch-Site": "cross-site"},
        {"Host": "evil.example"},  # DNS rebinding: a foreign name that resolves to 127.0.0.1
        {"Host": "evil.example:8787"},
    ],
)
async def test_requests_from_a_browser_page_of_another_origin_are_refused(
    tcp_token: tuple[FakeDaemon, str], headers: dict[str, str]
) -> None:
    daemon, base = tcp_token
    async with aiohttp.ClientSession() as session:
        for method, route in (("POST", "/reload"), ("GET", "/status"), ("GET", "/healthz")):
            # Even with the token: a page must not be able to use one it got hold of.
            async with session.request(
                method, f"{base}{route}", headers={**headers, "Authorization": "Bearer s3cret"}
            ) as response:
                assert response.status == 403, (method, route)
                assert "refused" in (await response.json())["error"]
    assert daemon.reloads == 0


async def test_a_loopback_host_and_same_origin_are_accepted(tcp_open: tuple[FakeDaemon, str]) -> None:
    _, base = tcp_open
    port = base.rsplit(":", 1)[1]
    async with aiohttp.ClientSession() as session:
        for headers in (
            {"Host": f"localhost:{port}"},
            {"Host": f"[::1]:{port}"},
            {"Host": "127.0.0.1"},
            {"Origin": base, "Sec-Fetch-Site": "same-origin"},
            {"Sec-Fetch-Site": "none"},
        ):
            async with session.get(f"{base}/healthz", headers=headers) as response:
                assert response.status == 200, headers


async def test_status_over_tcp_without_authorisation_shows_no_more_than_healthz(
    tcp_open: tuple[FakeDaemon, str],
) -> None:
    _, base = tcp_open
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/healthz") as response:
            healthz = await response.json()
        async with session.get(f"{base}/status") as response:
            assert response.status == 200
            assert await response.json() == healthz == {"status": "ok", "state": "running"}


async def test_a_bind_beyond_loopback_with_a_token_answers_to_any_host_name(short_dir: Path) -> None:
    server = ControlServer(
        FakeDaemon(), settings(short_dir / "c.sock", health_port=0, health_host="0.0.0.0", health_token="s3cret")
    )
    await server.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"http://127.0.0.1:{server.tcp_port}/status",
                headers={"Host": "troupe.lan", "Authorization": "Bearer s3cret"},
            ) as response,
        ):
            assert response.status == 200 and await response.json() == STATUS
    finally:
        await server.close()
