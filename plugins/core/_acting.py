"""Running what the plan asked for: actions in order, then the evaluators that apply."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.sdk import (
    Action,
    ActionCompleted,
    ActionContext,
    ActionFailed,
    ActionResult,
    ActionStarted,
    Evaluator,
    EvaluatorCompleted,
    EvaluatorFailed,
    EvaluatorStarted,
    FetchCallback,
    HandlerCallback,
    Memory,
    OutgoingFile,
    ReactCallback,
    State,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["find_action", "run_actions", "run_evaluators"]

_log = logging.getLogger(__name__)


def _norm(name: str) -> str:
    return name.upper().replace("_", "").replace("-", "").strip()


def find_action(actions: dict[str, Action], name: str) -> Action | None:
    """The action ``name`` means: exact name, then simile, then a containment match."""
    wanted = _norm(name)
    if not wanted:
        return None
    for action in actions.values():
        if _norm(action.name) == wanted:
            return action
    for action in actions.values():
        if any(_norm(s) == wanted for s in action.similes):
            return action
    for action in actions.values():
        if wanted in _norm(action.name) or _norm(action.name) in wanted:
            return action
    return None


async def run_actions(
    rt: AgentRuntime,
    message: Memory,
    responses: Sequence[Memory],
    state: State,
    reply: HandlerCallback,
    *,
    react: ReactCallback | None = None,
    fetch: FetchCallback | None = None,
) -> list[tuple[str, bool]]:
    """Run each response's actions in order; a failing action is logged and the chain goes on.
    ``react`` puts an emoji on ``message`` (REACT), where the platform can; ``fetch`` downloads
    an attachment (DOWNLOAD_MEDIA).
    Returns each action's name and whether it succeeded."""
    outcomes: list[tuple[str, bool]] = []
    results: list[ActionResult] = state.data.setdefault("actionResults", [])
    attached: list[OutgoingFile] = []  # shared by the chain: an action attaches, REPLY sends
    for response in responses:
        for name in response.content.actions or []:
            action = find_action(rt.actions, name)
            if action is None:
                _log.info("%s: the model asked for unknown action %r; skipped", rt.character.name, name)
                continue
            await rt.emit(ActionStarted(action=action.name, room_id=message.room_id, message_id=message.id))
            options = {"previousResults": list(results)}
            context = ActionContext(rt, message, state, options, reply, responses, attached, react, fetch)
            try:
                result = await action.handler(context)
            except Exception as exc:
                _log.exception("%s: action %s failed", rt.character.name, action.name)
                result = ActionResult(success=False, error=exc.__class__.__name__)
            if not isinstance(result, ActionResult):
                result = ActionResult(success=result is not False)
            if not result.success:
                _log.warning("%s: action %s did not succeed: %s", rt.character.name, action.name, result.error)
            results.append(result)
            outcomes.append((action.name, result.success))
            await rt.emit(
                ActionCompleted(
                    action=action.name, room_id=message.room_id, message_id=message.id, success=result.success
                )
            )
            if not result.success:
                error = result.error or "no success"
                await rt.emit(
                    ActionFailed(action=action.name, room_id=message.room_id, message_id=message.id, error=error)
                )
    return outcomes


async def run_evaluators(
    rt: AgentRuntime,
    message: Memory,
    state: State,
    *,
    did_respond: bool,
    reply: HandlerCallback,
    responses: Sequence[Memory],
) -> None:
    """Run the evaluators that apply, concurrently; failures are logged."""

    async def applies(evaluator: Evaluator) -> bool:
        if not (did_respond or evaluator.always_run):
            return False
        if evaluator.validate is None:
            return True
        try:
            return bool(await evaluator.validate(rt, message, state))
        except Exception:
            _log.exception("%s: evaluator %s validate failed", rt.character.name, evaluator.name)
            return False

    chosen = [e for e in rt.evaluators.values() if await applies(e)]

    async def run(evaluator: Evaluator) -> None:
        await rt.emit(EvaluatorStarted(evaluator=evaluator.name, message_id=message.id))
        error = None
        try:
            await evaluator.handler(ActionContext(rt, message, state, {}, reply, responses))
        except Exception as exc:
            error = exc.__class__.__name__
            _log.exception("%s: evaluator %s failed", rt.character.name, evaluator.name)
        await rt.emit(EvaluatorCompleted(evaluator=evaluator.name, message_id=message.id, error=error))
        if error is not None:
            await rt.emit(EvaluatorFailed(evaluator=evaluator.name, message_id=message.id, error=error))

    await asyncio.gather(*(run(e) for e in chosen))
