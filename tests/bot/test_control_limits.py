"""No local client can starve the daemon through its control socket or health port: connections
that send no whole request are closed, a server keeps a bounded number of them (the one idle
longest makes room for a new one), and a malformed request is one log line."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.config.settings import DaemonSettings
from bot.daemon.control import ControlServer, call
from bot.daemon.control import _limits as limits

from .test_control import FakeDaemon

HALF_SENT = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the head never ends
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths must be short
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def many_files() -> Iterator[None]:
    """This process holds both ends of a flood: room for them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 3000:
        pytest.skip(f"the flood needs 3,000 open files; the hard limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (3000 if hard == resource.RLIM_INFINITY else min(hard, 4096), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def healthz(port: int) -> bytes:
    """The status line /healthz answers with, on a connection of its own."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return (await asyncio.wait_for(reader.readline(), 10)).strip()
    finally:
        writer.close()


async def flood(open_one: object, count: int) -> list[Connection]:
    connections = []
    for _ in range(count):
        reader, writer = await asyncio.wait_for(open_one(), 30)  # type: ignore[operator]
        writer.write(HALF_SENT)
        connections.append((reader, writer))
    return connections


async def _at_end(reader: asyncio.StreamReader, timeout: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1024), timeout) == b""
    except ConnectionResetError:  # closed with the request unread: the kernel resets it
        return True
    except TimeoutError:
        return False


async def closed_by_server(connections: list[Connection], timeout: float = 0.2) -> int:
    """How many of these the server has closed (they read end of file within ``timeout``)."""
    return sum(await asyncio.gather(*(_at_end(reader, timeout) for reader, _ in connections)))


async def until_closed(connections: list[Connection], count: int, timeout: float = 60.0) -> None:
    """Wait until the server has closed ``count`` of these (connections the kernel completed
    before the server could accept them are accepted, and so closed, a little later)."""
    left, closed = list(connections), 0
    async with asyncio.timeout(timeout):
        while closed < count:
            ends = await asyncio.gather(*(_at_end(reader, 0.2) for reader, _ in left))
            closed += sum(ends)
            left = [connection for connection, end in zip(left, ends, strict=True) if not end]


def close_all(connections: list[Connection]) -> None:
    for _, writer in connections:
        writer.close()


@pytest.fixture
async def server(short_dir: Path) -> AsyncIterator[ControlServer]:
    settings = DaemonSettings(_env_file=None, control_socket=short_dir / "c.sock", health_port=0)
    server = ControlServer(FakeDaemon(), settings)
    await server.start()
    yield server
    await server.close()


async def test_a_flood_of_half_sent_connections_does_not_keep_health_checks_out(
    server: ControlServer, many_files: None
) -> None:
    port = server.tcp_port
    assert port is not None
    held = await flood(lambda: asyncio.open_connection("127.0.0.1", port), 3 * limits.MAX_CONNECTIONS)
    try:
        assert await healthz(port) == b"HTTP/1.1 200 OK"
        # Beyond the limit, the ones idle longest were closed to make room.
        assert await closed_by_server(held) >= 2 * limits.MAX_CONNECTIONS
    finally:
        close_all(held)


async def test_a_flood_on_the_control_socket_does_not_keep_troupe_status_out(
    server: ControlServer, many_files: None
) -> None:
    held = await flood(lambda: asyncio.open_unix_connection(str(server.path)), 3 * limits.MAX_CONNECTIONS)
    try:
        assert await asyncio.wait_for(call(server.path, "GET", "/healthz"), 10) == (
            200,
            {"status": "ok", "state": "running"},
        )
        assert await closed_by_server(held) >= 2 * limits.MAX_CONNECTIONS
    finally:
        close_all(held)


async def test_a_connection_that_never_finishes_its_request_is_closed(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "IDLE_TIMEOUT_S", 0.3)
    server = ControlServer(
        FakeDaemon(), DaemonSettings(_env_file=None, control_socket=short_dir / "c.sock", health_port=0)
    )
    await server.start()
    try:
        port = server.tcp_port
        assert port is not None
        idle = await flood(lambda: asyncio.open_connection("127.0.0.1", port), 1)
        slow = await flood(lambda: asyncio.open_unix_connection(str(server.path)), 1)
        # Waits for the server to close them, well past the idle time, never for the time itself.
        assert await closed_by_server(idle + slow, timeout=15) == 2
        close_all(idle + slow)
    finally:
        await server.close()


async def test_a_malformed_request_is_one_warning_line(server: ControlServer, caplog: pytest.LogCaptureFixture) -> None:
    port = server.tcp_port
    assert port is not None
    caplog.set_level(logging.DEBUG)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n")
    assert b" 400 " in await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1, [r.getMessage() for r in problems]
    (line,) = problems
    assert line.levelno == logging.WARNING and line.exc_info is None
    text = line.getMessage()
    assert "\n" not in text
    assert text.startswith("malformed HTTP request on the health port from 127.0.0.1 (answered 400): ")


async def test_a_server_with_few_open_files_outlasts_1100_half_sent_connections(
    short_dir: Path, many_files: None
) -> None:
    """systemd's default is 1,024 open files: a flood of 1,100 once used them all, /healthz went
    quiet and asyncio logged its failed accepts in a loop. The server holds 64 connections and,
    for a moment, the batches asyncio accepts at once (128 each) before they are closed."""
    root = Path(__file__).resolve().parents[2]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.bot.control_alone",
        str(short_dir / "c.sock"),
        "1024",
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    held: list[Connection] = []
    try:
        assert process.stdout is not None and process.stderr is not None
        port = int(await asyncio.wait_for(process.stdout.readline(), 30))
        held = await flood(lambda: asyncio.open_connection("127.0.0.1", port), 1100)
        assert await healthz(port) == b"HTTP/1.1 200 OK"
        assert await asyncio.wait_for(call(short_dir / "c.sock", "GET", "/healthz"), 10) == (
            200,
            {"status": "ok", "state": "running"},
        )
        await until_closed(held, 1100 - limits.MAX_CONNECTIONS)
    finally:
        close_all(held)
        if process.returncode is None:
            process.terminate()
        _, err = await asyncio.wait_for(process.communicate(), 30)
    log = err.decode(errors="replace")
    assert "Too many open files" not in log
    # A line or so per connection evicted at most, not a loop's worth.
    assert len(log.splitlines()) < 100, log[-3000:]


async def test_accepts_failing_in_a_loop_for_want_of_files_are_logged_a_few_times(
    short_dir: Path, many_files: None
) -> None:
    """With the open files used up by something else, asyncio's accept fails again and again, and
    logged each failure with its traceback: 443,121 lines in two minutes. The daemon's log shows
    a few, then says how many it suppressed. (48 files: fewer than one server's connections.)"""
    root = Path(__file__).resolve().parents[2]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.bot.control_alone",
        str(short_dir / "c.sock"),
        "48",
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    held: list[Connection] = []
    lines: list[str] = []
    try:
        assert process.stdout is not None and process.stderr is not None
        port = int(await asyncio.wait_for(process.stdout.readline(), 30))
        held = await flood(lambda: asyncio.open_connection("127.0.0.1", port), 100)
        async with asyncio.timeout(30):  # the loop's first failures, then a while of it
            while sum("out of system resource" in line for line in lines) < 10:
                lines.append((await process.stderr.readline()).decode(errors="replace"))
    finally:
        close_all(held)
        if process.returncode is None:
            process.terminate()
        _, err = await asyncio.wait_for(process.communicate(), 30)
    lines += err.decode(errors="replace").splitlines()
    failures = [line for line in lines if "out of system resource" in line and "suppressed" not in line]
    assert len(failures) == 10
    (summary,) = [line for line in lines if "suppressed" in line and "out of system resource" in line]
    assert re.search(r"asyncio: suppressed \d+ similar lines", summary), summary
