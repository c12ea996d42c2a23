"""An in-memory :class:`~bot.kernel.tools.Toolbox` for tests: tools are async functions of their
arguments, each call recorded; offered to a runtime as the ``TOOLBOX`` service.

    box = MemoryToolbox()
    box.add(ToolSpec("weather", "The weather.", SCHEMA, source="test"), forecast)
    runtime.register_service(TOOLBOX, box)

A tool that raises gives an error result naming the exception; one that runs past the call's
timeout, a timeout result (the loop's own bound is a little longer, so this one shows).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kernel.tools import ToolCall, ToolContext, ToolResult, ToolSpec

__all__ = ["MemoryToolbox", "spec"]

Tool = Callable[[Mapping[str, Any]], Awaitable[str]]


def spec(name: str, description: str = "", **extra: Any) -> ToolSpec:
    """A tool taking any object of arguments."""
    return ToolSpec(name, description or f"The {name} tool.", {"type": "object", "properties": {}}, "test", **extra)


@dataclass
class MemoryToolbox:
    specs: dict[str, ToolSpec] = field(default_factory=dict)
    handlers: dict[str, Tool] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)
    """Every call run, in the order it started."""
    contexts: list[ToolContext | None] = field(default_factory=list)
    """The context of each call in :attr:`calls`."""

    def add(self, tool: ToolSpec, handler: Tool) -> None:
        self.specs[tool.name] = tool
        self.handlers[tool.name] = handler

    def tools(self) -> Sequence[ToolSpec]:
        return list(self.specs.values())

    async def call(self, call: ToolCall, *, timeout: float, context: ToolContext | None = None) -> ToolResult:
        self.calls.append(call)
        self.contexts.append(context)
        started = time.monotonic()
        handler = self.handlers.get(call.name)
        if handler is None:
            return ToolResult(call, f"no tool {call.name}", ok=False)
        try:
            async with asyncio.timeout(timeout):
                text = await handler(call.arguments)
        except TimeoutError:
            return ToolResult(call, f"{call.name} timed out", ok=False, duration_ms=(time.monotonic() - started) * 1000)
        except Exception as exc:
            return ToolResult(call, f"{call.name} failed: {exc}", ok=False)
        return ToolResult(call, text, duration_ms=(time.monotonic() - started) * 1000)
