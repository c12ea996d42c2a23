"""What one runtime keeps for its tool calls, shared by the tool loop (the pipeline) and the
CALL_TOOL action: the bounds, the per-person rate limit and the calls that wait for a yes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import ServiceKey

from ._tool_confirm import Confirmations
from ._tool_loop import ToolBounds
from ._tool_rules import ToolRateLimit

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["TOOL_KIT", "ToolKit"]


@dataclass(frozen=True, slots=True)
class ToolKit:
    bounds: ToolBounds
    limit: ToolRateLimit
    confirmations: Confirmations

    @classmethod
    def of(cls, runtime: AgentRuntime) -> ToolKit:
        bounds = ToolBounds.of(runtime)
        limit = ToolRateLimit(max(1, runtime.get_int("TOOL_CALLS_PER_MINUTE", 10)))
        return cls(bounds, limit, Confirmations(runtime, bounds.call_timeout_s))


#: The runtime's :class:`ToolKit` (core-internal).
TOOL_KIT: ServiceKey[ToolKit] = ServiceKey("core.tools")
