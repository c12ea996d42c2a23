"""What a turn with tools costs troupe: model requests per turn, and the time troupe adds per tool
call (the model answers at once and the tool takes no time, so what is measured is troupe's own:
the pipeline, the loop, the rules, the trace, and finding the tool among as many as a character
may have).

    .venv/bin/python -m tests.bench.bench_tools [turns]

Prints the median time of a turn with no tool call, one call, and eight calls in one round; the
overhead per call is the difference between eight calls and one, over seven.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.kernel.models import ModelType
from bot.kernel.tools import ToolCall, ToolTurn
from bot.kernel.types import ChannelType
from bot.runtime.toolboxes import MAX_TOOLS
from bot.store import Database
from tests.fakes.toolbox import MemoryToolbox, spec
from tests.plugins.core.harness import harnesses


async def _measure(turns: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with Database(Path(folder) / "t.db") as db, harnesses(db, Path(folder)) as make:
            h = await make(ChannelType.DM, settings={"TOOL_CALLS_PER_MINUTE": "1000000"})
            box = MemoryToolbox()

            async def instant(args: Mapping[str, Any]) -> str:
                return "ok"

            box.add(spec("echo"), instant)
            for n in range(MAX_TOOLS - 1):  # as many as a character may have: finding "echo" is the slowest
                box.add(spec(f"filler_{n}"), instant)
            h.rt.add_toolbox(box)  # as the MCP plugin adds its servers': through the runtime's Toolboxes
            calls_per_turn = 0
            requests: list[int] = []

            async def model(runtime: Any, params: dict[str, Any]) -> ToolTurn:
                requests[-1] += 1
                if params.get("rounds") or not calls_per_turn:
                    return ToolTurn(text="done")
                return ToolTurn(calls=tuple(ToolCall(f"c{n}", "echo", {"n": n}) for n in range(calls_per_turn)))

            h.rt.register_model(ModelType.TEXT_TOOLS, model, "bench")
            for calls_per_turn in (0, 1, 8):
                times: list[float] = []
                requests.clear()
                for n in range(turns):
                    requests.append(0)
                    started = time.perf_counter()
                    await h.say(f"turn {calls_per_turn}-{n}")
                    times.append((time.perf_counter() - started) * 1000)
                median = statistics.median(times[turns // 10 :])  # the first few warm up
                print(f"{calls_per_turn} calls: {median:.2f} ms a turn, {requests[-1]} model requests")
                if calls_per_turn == 1:
                    one = median
                elif calls_per_turn == 8:
                    print(f"troupe's time per tool call: {(median - one) / 7:.3f} ms")


if __name__ == "__main__":
    asyncio.run(_measure(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
