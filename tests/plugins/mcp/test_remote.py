"""The MCP plugin against a real MCP server over streamable HTTP and SSE on loopback: listing,
calling with the configured headers, and dialling again after the server went away."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket

import pytest
from aiohttp import web

from bot.sdk import ExponentialBackoff
from plugins.mcp._config import McpConfig, ServerConfig, Transport
from plugins.mcp._connection import ServerConnection, ServerState
from plugins.mcp._pool import ServerPool
from plugins.mcp._toolbox import McpToolbox
from tests.fakes._local import LocalServer

from .conftest import Served, call, serve, until

pytestmark = pytest.mark.xdist_group("mcp")


def remote(kind: Transport, url: str) -> ServerConfig:
    return ServerConfig(name="remote", transport=kind, url=url, headers={"X-Api-Key": "header-secret"}, timeout=10)


async def toolbox_for(pool: ServerPool, server: ServerConfig) -> McpToolbox:
    box = McpToolbox("Ada", McpConfig(servers=(server,)), [pool.acquire(server)])
    await until(lambda: bool(box.tools()))
    return box


@pytest.mark.parametrize("kind", [Transport.HTTP, Transport.SSE])
async def test_lists_and_calls_over_http_and_sse(pool: ServerPool, kind: Transport) -> None:
    served = await serve(kind.value)
    try:
        box = await toolbox_for(pool, remote(kind, served.url))
        assert {"remote__weather", "remote__slow", "remote__huge"} <= {spec.name for spec in box.tools()}
        result = await box.call(call("remote__weather", city="Tromsø"), timeout=10)
        assert result.ok and result.text == "sunny in Tromsø, 21 °C"
        header = await box.call(call("remote__header", name="X-Api-Key"), timeout=10)
        assert header.ok and header.text == "header-secret"
        hang = await box.call(call("remote__slow"), timeout=0.5)
        assert not hang.ok and "did not answer within 0.5 s" in hang.text
        bad = await box.call(call("remote__weather", town="Oslo"), timeout=10)
        assert not bad.ok and "'city' is a required property" in bad.text
        assert (await box.call(call("remote__grow"), timeout=10)).ok
        await until(lambda: "remote__late" in {spec.name for spec in box.tools()})
    finally:
        await served.stop()


async def test_an_http_server_that_goes_away_is_dialled_again(pool: ServerPool) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    served: Served = await serve("http", sock)
    box = await toolbox_for(pool, remote(Transport.HTTP, served.url))
    connection = box.connections[0]
    await served.stop()
    gone = await box.call(call("remote__weather", city="Oslo"), timeout=5)
    assert not gone.ok
    await until(lambda: connection.state is ServerState.DOWN)
    again = socket.socket()
    again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    again.bind(("127.0.0.1", port))
    served = await serve("http", again)
    try:
        await until(lambda: connection.state is ServerState.UP, timeout=60)
        result = await box.call(call("remote__weather", city="Oslo"), timeout=10)
        assert result.ok and result.text == "sunny in Oslo, 21 °C"
    finally:
        await served.stop()


async def test_a_server_that_is_not_there_is_down_not_an_error(pool: ServerPool) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    sock.close()  # nothing listens there
    connection = pool.acquire(remote(Transport.HTTP, url))
    await until(lambda: connection.state is ServerState.DOWN)
    assert connection.tools == () and connection.reason


async def test_a_key_in_the_url_is_never_shown(pool: ServerPool, caplog: pytest.LogCaptureFixture) -> None:
    served = await serve("http")
    try:
        server = dataclasses.replace(remote(Transport.HTTP, f"{served.url}?key=url-secret-1"), name="keyed")
        with caplog.at_level(logging.INFO, logger="plugins.mcp"):
            box = await toolbox_for(pool, server)
        assert f"mcp server keyed ({served.url}?key=…) is up" in caplog.text
    finally:
        await served.stop()
    # Down: the warning, the reason, the status and a failed call say where without the key.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://user:pass-secret-2@127.0.0.1:{port}/mcp?key=url-secret-3"
    sock.close()
    ghost = dataclasses.replace(remote(Transport.HTTP, url), name="ghost")
    with caplog.at_level(logging.INFO, logger="plugins.mcp"):
        connection = pool.acquire(ghost)
        await until(lambda: connection.state is ServerState.DOWN)
    down = McpToolbox("Ada", McpConfig(servers=(ghost,)), [connection]).servers()[0]
    assert f"mcp server ghost (http://user:…@127.0.0.1:{port}/mcp?key=…) is down" in caplog.text
    shown = [caplog.text, connection.reason, down.detail, repr(box.connections[0].config)]
    assert not any(secret in text for secret in ("url-secret", "pass-secret") for text in shown)


class MuteSse(LocalServer):
    """An SSE endpoint that accepts the connection and never sends the ``endpoint`` event."""

    def __init__(self) -> None:
        super().__init__()
        self.accepted = 0
        self.open = 0

    def _make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/sse", self._sse)
        return app

    async def _sse(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b": hello\n\n")  # a comment: the stream is open, and says nothing
        self.accepted += 1
        self.open += 1
        self._changed()
        try:
            await self._closed.wait()
        finally:
            self.open -= 1
            self._changed()
        return response


async def test_an_sse_server_that_never_sends_its_endpoint_is_down_in_time(caplog: pytest.LogCaptureFixture) -> None:
    async with MuteSse() as mute:
        server = dataclasses.replace(remote(Transport.SSE, f"http://127.0.0.1:{mute.port}/sse"), timeout=0.5)
        backoff = ExponentialBackoff(0.05, 60.0)
        connection = ServerConnection(server, backoff=backoff)
        with caplog.at_level(logging.WARNING, logger="plugins.mcp"):
            connection.start()
            try:
                await mute.wait_for(lambda: mute.accepted >= 3, timeout=60, description="three attempts")
                assert connection.state is not ServerState.UP
                await until(lambda: connection.state is ServerState.DOWN)
                assert connection.reason == "it did not start within 0.5 s"
                # Each attempt's stream is closed before the next (none is left open).
                await mute.wait_for(lambda: mute.open == 0 or mute.accepted > 3, description="streams closed")
                assert mute.open <= 1
            finally:
                await asyncio.wait_for(connection.close(), 30)
        assert backoff.attempts >= 2 and connection.state is ServerState.STOPPED
        await mute.wait_for(lambda: mute.open == 0, description="the last stream closed")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("plugins")]
    assert warnings == [
        f"mcp server remote (http://127.0.0.1:{mute.port}/sse) is down: it did not start within 0.5 s; "
        "its tools are missing until it answers (retrying)"
    ]
