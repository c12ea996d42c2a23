"""ACTION_STATE: what the actions already run for this message did.

Reads ``state.data["actionResults"]``, the list the pipeline appends an ActionResult to after
each action, so a later action's prompt knows what came before. Nothing to report, no text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import ActionResult, Memory, Provider, ProviderResult, State

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]


def _as_result(item: Any) -> ActionResult | None:
    if isinstance(item, ActionResult):
        return item
    if isinstance(item, Mapping):
        return ActionResult(
            success=bool(item.get("success", True)),
            text=str(item.get("text") or ""),
            values=dict(item.get("values") or {}),
            data=dict(item.get("data") or {}),
            error=item.get("error"),
        )
    return None


def _line(index: int, result: ActionResult) -> str:
    name = str(result.data.get("actionName") or "action")
    line = f"{index}. {name}: {'succeeded' if result.success else 'failed'}"
    if result.text:
        line += f" — {result.text}"
    if result.error:
        line += f" (error: {result.error})"
    return line


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    raw = state.data.get("actionResults") or []
    results = [r for r in (_as_result(i) for i in raw) if r is not None]
    if not results:
        return ProviderResult(
            values={"hasActionResults": False, "actionResults": "", "completedActions": 0, "failedActions": 0},
            data={"actionResults": []},
        )
    body = "\n".join(_line(i, r) for i, r in enumerate(results, 1))
    text = f"# Previous Action Results\n{body}"
    completed = sum(1 for r in results if r.success)
    return ProviderResult(
        text=text,
        values={
            "hasActionResults": True,
            "actionResults": text,
            "completedActions": completed,
            "failedActions": len(results) - completed,
        },
        data={"actionResults": results},
    )


provider = Provider(
    name="ACTION_STATE",
    get=_get,
    description="Results of the actions already taken for this message.",
    position=150,
)
