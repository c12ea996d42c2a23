"""CALL_TOOL: use one of the character's tools, for a model that cannot call tools itself.

With a model that calls tools (``TEXT_TOOLS``) a turn is a loop of calls instead of a plan
(``_tool_loop``); without one — no such handler, or a server that refused ``tools`` — the plan
may pick CALL_TOOL. The large model then names the tool and its JSON arguments
(``toolChoiceTemplate``), the call runs under the same rules as in the loop (``_tool_rules``:
access, rate limit, confirmation with buttons), and a second prompt turns the result, marked as
untrusted, into the reply (``toolAnswerTemplate``). Offered only for a person's message, when the
character has tools.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    PLAN_TOKENS,
    TOOLBOX,
    Action,
    ActionContext,
    ActionResult,
    Memory,
    ModelError,
    ModelType,
    State,
    ToolCall,
    ToolResult,
    ToolRound,
    ToolSpec,
    note_tool_calls,
)

from .._budget import prompt_for
from .._parse import parse_response
from .._tool_kit import TOOL_KIT
from .._tool_loop import trace_runs
from .._tool_rules import CallRules
from ._common import notify, room_and_world

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action"]

NAME = "CALL_TOOL"
_log = logging.getLogger(__name__)
_TOOLS_SHOWN = 40
_CLOSING = re.compile(r"</\s*tool_result", re.IGNORECASE)


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    toolbox = runtime.get_service(TOOLBOX)
    return toolbox is not None and not message.metadata.author_is_bot and bool(toolbox.tools())


def _listing(tools: list[ToolSpec]) -> str:
    return "\n".join(
        f"- {t.name}: {t.description} Parameters: {json.dumps(dict(t.parameters), ensure_ascii=False)}"
        for t in tools[:_TOOLS_SHOWN]
    )


def _chosen(parsed: dict[str, Any] | None, number: int) -> ToolCall | None:
    """The call the model named, with the problem when its arguments are not a JSON object."""
    name = str((parsed or {}).get("tool") or "").strip()
    if not name:
        return None
    raw = (parsed or {}).get("arguments")
    if isinstance(raw, dict):
        return ToolCall(f"plan_{number}", name, raw)
    text = str(raw or "").strip() or "{}"
    try:
        arguments = json.loads(text)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return ToolCall(f"plan_{number}", name, {}, problem=f"the arguments were not a JSON object ({text[:200]!r})")
    return ToolCall(f"plan_{number}", name, arguments)


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message, state = context.runtime, context.message, context.state
    toolbox, kit = runtime.get_service(TOOLBOX), runtime.get_service(TOOL_KIT)
    tools = list(toolbox.tools()) if toolbox is not None else []
    if toolbox is None or kit is None or not tools or message.metadata.author_is_bot:
        return ActionResult(success=False, error="no tools for this message")
    name = runtime.character.name
    choosing = prompt_for(
        runtime, state, "toolChoiceTemplate", ModelType.TEXT_LARGE, PLAN_TOKENS, {"tools": _listing(tools)}
    )
    try:
        call = _chosen(parse_response(await runtime.use_model(ModelType.TEXT_LARGE, choosing.params())), 0)
    except ModelError as exc:
        _log.warning("%s: CALL_TOOL: no answer from the model: %s", name, exc)
        return ActionResult(success=False, error="the model named no tool")
    if call is None:
        await notify(context.reply, "I couldn't tell which tool to use for that.", NAME, message)
        return ActionResult(success=False, error="the model named no tool")
    _, world = await room_and_world(runtime, message)
    rules = CallRules(toolbox, tools, message, world, kit.limit)
    result = await _run(rules, call, kit.bounds.call_timeout_s)
    note_tool_calls(trace_runs([ToolRound((call,), (result,))], rules.waiting))
    values = {
        "toolName": call.name,
        "toolStatus": "ok" if result.ok else "error",
        # Unable to close its section early and pass what follows as the character's words.
        "toolResult": _CLOSING.sub("&lt;/tool_result", result.text[: kit.bounds.result_chars]),
    }
    answering = prompt_for(runtime, state, "toolAnswerTemplate", ModelType.TEXT_LARGE, PLAN_TOKENS, values)
    try:
        text = str(await runtime.use_model(ModelType.TEXT_LARGE, answering.params())).strip()
    except ModelError as exc:
        _log.warning("%s: CALL_TOOL: no answer from the model: %s", name, exc)
        text = ""
    if not text:
        text = f"{call.name}: {result.text[:1500]}" if result.ok else f"I couldn't use {call.name}: {result.text}"
    await notify(context.reply, text, NAME, message)
    if rules.waiting:
        question, buttons = await kit.confirmations.ask(rules.waiting, message)
        await notify(context.reply, question, NAME, message, buttons=buttons)
    return ActionResult(
        success=result.ok,
        text=text,
        data={"actionName": NAME, "tool": call.name},
        error=None if result.ok else f"{call.name}: {result.text[:200]}",
    )


async def _run(rules: CallRules, call: ToolCall, timeout: float) -> ToolResult:
    try:
        async with asyncio.timeout(timeout + 1.0):  # a Toolbox that overruns its bound is cut off here
            return await rules.run(call, timeout)
    except TimeoutError:
        return ToolResult(call, f"{call.name} gave no answer within {timeout:g} s", ok=False)
    except Exception as exc:  # a Toolbox's bug is the call's failure
        return ToolResult(call, f"{call.name} failed ({type(exc).__name__})", ok=False)


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Use one of your tools (to look something up, read or do something) and answer with what it "
    "gives. The tool and its arguments are chosen next; leave text empty or say you are checking.",
    similes=("USE_TOOL", "RUN_TOOL", "TOOL"),
)
