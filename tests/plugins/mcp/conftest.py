"""Real MCP servers for the MCP plugin's tests: the fake server (tests/fakes/mcp_server.py) over
stdio as a subprocess, and over streamable HTTP and SSE on loopback, served by uvicorn in the
test's own loop on a socket bound to port 0."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from bot.sdk import ToolCall
from plugins.mcp._config import ServerConfig, Transport
from plugins.mcp._pool import ServerPool
from tests.fakes.mcp_server import build

ROOT = Path(__file__).resolve().parents[3]


def stdio_config(
    name: str = "weather", *, env: dict[str, str] | None = None, tools: int = 0, timeout: float = 30.0
) -> ServerConfig:
    args = ["-m", "tests.fakes.mcp_server", *(["--tools", str(tools)] if tools else [])]
    return ServerConfig(
        name=name,
        transport=Transport.STDIO,
        command=sys.executable,
        args=tuple(args),
        env={"PYTHONPATH": str(ROOT), **(env or {})},
        cwd=str(ROOT),
        timeout=timeout,
    )


async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait until ``condition()`` holds (checked often), failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.02)


@dataclass
class Served:
    """A fake MCP server on loopback."""

    url: str
    server: uvicorn.Server
    task: asyncio.Task[None]

    async def stop(self) -> None:
        self.server.should_exit = True
        await asyncio.wait_for(self.task, 30)


async def serve(kind: str, sock: socket.socket | None = None) -> Served:
    """The fake server over ``kind`` ("http" or "sse") on a loopback port of its own."""
    mcp = build()
    app: Any = mcp.streamable_http_app() if kind == "http" else mcp.sse_app()
    if sock is None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await until(lambda: server.started or task.done())
    path = "/mcp" if kind == "http" else "/sse"
    return Served(f"http://127.0.0.1:{port}{path}", server, task)


@pytest.fixture
async def pool() -> AsyncIterator[ServerPool]:
    """A daemon's sessions, all stopped at the end."""
    made = ServerPool()
    yield made
    await made.aclose()


def call(tool: str, /, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", name=tool, arguments=arguments)
