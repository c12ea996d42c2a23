"""Benchmark: what troupe's MCP toolbox adds to a tool call over the SDK's own call.

Not a test. Run it from the repository root::

    .venv/bin/python tests/bench/bench_mcp_call.py              # 100 calls each way
    .venv/bin/python tests/bench/bench_mcp_call.py --calls 500

Starts the fake MCP server (tests/fakes/mcp_server.py) over stdio twice: once driven by the SDK's
``ClientSession.call_tool`` directly, once through :class:`plugins.mcp._toolbox.McpToolbox`
(lookup, JSON-schema check of the arguments, time limit, result to text). Calls ``weather`` the
same number of times each way, after a few warm-up calls, and prints p50/p95 and the mean of each
and the difference of the means; and troupe's own work a call alone (the toolbox with a server
that answers at once), which the noise of two processes on a busy machine does not blur.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from bot.sdk import ToolCall
from plugins.mcp._config import McpConfig, ServerConfig, Transport
from plugins.mcp._pool import ServerPool
from plugins.mcp._toolbox import McpToolbox
from tests.bench._common import percentile

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("-m", "tests.fakes.mcp_server")
ENV = {"PYTHONPATH": str(ROOT)}
WARM_UP = 10


async def raw(calls: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=list(ARGS), env=ENV, cwd=str(ROOT))
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - opening /dev/null does not block
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            times = []
            for n in range(WARM_UP + calls):
                started = time.perf_counter()
                result = await session.call_tool("weather", {"city": "Oslo"})
                assert not result.is_error
                if n >= WARM_UP:
                    times.append((time.perf_counter() - started) * 1000)
    return times


async def troupe(calls: int) -> list[float]:
    server = ServerConfig("weather", Transport.STDIO, command=sys.executable, args=ARGS, env=ENV, cwd=str(ROOT))
    pool = ServerPool()
    try:
        box = McpToolbox("bench", McpConfig(servers=(server,)), [pool.acquire(server)])
        await asyncio.wait_for(box.connections[0].wait_up(), 60)
        call = ToolCall(id="1", name="weather__weather", arguments={"city": "Oslo"})
        own = await alone(box, call, calls * 10)
        print(f"troupe's own work a call (the server's answer given at once): {own * 1000:.1f} µs")
        times = []
        for n in range(WARM_UP + calls):
            started = time.perf_counter()
            result = await box.call(call, timeout=30)
            assert result.ok, result.text
            if n >= WARM_UP:
                times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await pool.aclose()


async def alone(box: McpToolbox, call: ToolCall, calls: int) -> float:
    """Mean ms of a toolbox call whose server answers at once: troupe's own work, no I/O."""
    connection = box.connections[0]
    answer = types.CallToolResult(content=[types.TextContent(text="sunny in Oslo, 21 °C")])

    async def at_once(tool: str, arguments: object, *, timeout: float) -> types.CallToolResult:
        return answer

    real = connection.call
    connection.call = at_once  # type: ignore[method-assign]  # the SDK's part taken out
    try:
        started = time.perf_counter()
        for _ in range(calls):
            await box.call(call, timeout=30)
        return (time.perf_counter() - started) * 1000 / calls
    finally:
        connection.call = real  # type: ignore[method-assign]


async def main(calls: int) -> None:
    # On a shared machine the run that comes second tends to be faster (caches, CPU clocks), by
    # as much as a millisecond: troupe's goes first so as not to flatter it.
    troupe_times = await troupe(calls)
    figures = {"SDK call_tool": await raw(calls), "troupe toolbox": troupe_times}
    for label, times in figures.items():
        p50, p95 = statistics.median(times), percentile(times, 0.95)
        print(f"{label:15} {calls} calls: p50 {p50:.2f} ms, p95 {p95:.2f} ms, mean {statistics.fmean(times):.2f} ms")
    overhead = statistics.fmean(figures["troupe toolbox"]) - statistics.fmean(figures["SDK call_tool"])
    print(f"troupe adds {overhead:.2f} ms a call (difference of the means)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    asyncio.run(main(parser.parse_args().calls))
