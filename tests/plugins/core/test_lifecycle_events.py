"""How a run, its actions and its evaluators end, as a plugin hears it: each test registers a
handler with ``runtime.on`` and drives the real pipeline (copy one to start a plugin's own)."""

from __future__ import annotations

from bot.kernel.errors import ModelError
from bot.kernel.types import ChannelType
from bot.runtime.components import Action, ActionContext, ActionResult, Evaluator
from bot.runtime.events import (
    ActionCompleted,
    ActionFailed,
    EvaluatorCompleted,
    EvaluatorFailed,
    RunCompleted,
    RunEnded,
    RunFailed,
)

from .harness import plan


async def test_a_replied_run_ends_completed(harness) -> None:
    h = await harness(ChannelType.DM)
    ended: list[str] = []

    async def on_ended(event: RunEnded) -> None:
        ended.append(f"ended:{event.status}")

    async def on_completed(event: RunCompleted) -> None:
        ended.append(f"completed:{event.status}:{event.message_id == message_id}")

    async def on_failed(event: RunFailed) -> None:
        ended.append("failed")

    h.rt.on(RunEnded, on_ended)
    h.rt.on(RunCompleted, on_completed)
    h.rt.on(RunFailed, on_failed)
    h.large.append(plan("Hello."))
    message_id = "11111111-2222-3333-4444-555555555555"
    assert (await h.say("hi", id=message_id)).status == "replied"
    assert ended == ["ended:replied", "completed:replied:True"]


async def test_a_run_no_model_answers_ends_failed_with_why(harness) -> None:
    h = await harness(ChannelType.DM)
    failed: list[RunFailed] = []
    completed: list[RunCompleted] = []

    async def on_failed(event: RunFailed) -> None:
        failed.append(event)

    async def on_completed(event: RunCompleted) -> None:
        completed.append(event)

    h.rt.on(RunFailed, on_failed)
    h.rt.on(RunCompleted, on_completed)
    h.large.append(ModelError("the model server is down"))
    outcome = await h.say("hi")
    assert outcome.status == "model_unreachable"
    assert [(e.status, e.error) for e in failed] == [("model_unreachable", "the model server is down")]
    assert completed == []


async def test_a_failing_action_is_heard_as_action_failed(harness) -> None:
    h = await harness(ChannelType.DM)

    async def refuses(ctx: ActionContext) -> ActionResult:
        return ActionResult(success=False, error="no dice to roll")

    async def breaks(ctx: ActionContext) -> ActionResult:
        raise RuntimeError("broken")

    h.rt.register_action(Action("ROLL", refuses))
    h.rt.register_action(Action("EXPLODE", breaks))
    heard: list[str] = []

    async def on_completed(event: ActionCompleted) -> None:
        heard.append(f"completed:{event.action}:{event.success}")

    async def on_failed(event: ActionFailed) -> None:
        heard.append(f"failed:{event.action}:{event.error}")

    h.rt.on(ActionCompleted, on_completed)
    h.rt.on(ActionFailed, on_failed)
    h.large.append(plan("Done.", "ROLL,EXPLODE,REPLY"))
    assert (await h.say("roll")).status == "replied"
    assert heard == [
        "completed:ROLL:False",
        "failed:ROLL:no dice to roll",
        "completed:EXPLODE:False",
        "failed:EXPLODE:RuntimeError",
        "completed:REPLY:True",
    ]


async def test_a_raising_evaluator_is_heard_as_evaluator_failed(harness) -> None:
    h = await harness(ChannelType.DM)

    async def fine(ctx: ActionContext) -> None:
        return None

    async def broken(ctx: ActionContext) -> None:
        raise ValueError("bad notes")

    h.rt.register_evaluator(Evaluator("FINE", fine))
    h.rt.register_evaluator(Evaluator("BROKEN", broken))
    completed: list[tuple[str, str | None]] = []
    failed: list[tuple[str, str]] = []

    async def on_completed(event: EvaluatorCompleted) -> None:
        completed.append((event.evaluator, event.error))

    async def on_failed(event: EvaluatorFailed) -> None:
        failed.append((event.evaluator, event.error))

    h.rt.on(EvaluatorCompleted, on_completed)
    h.rt.on(EvaluatorFailed, on_failed)
    h.large.append(plan("Noted."))
    assert (await h.say("remember this")).status == "replied"
    assert ("FINE", None) in completed and ("BROKEN", "ValueError") in completed
    assert failed == [("BROKEN", "ValueError")]


async def test_a_handler_that_raises_does_not_break_the_run(harness, caplog) -> None:
    h = await harness(ChannelType.DM)
    heard: list[str] = []

    async def broken(event: RunCompleted) -> None:
        raise RuntimeError("listener bug")

    async def other(event: RunCompleted) -> None:
        heard.append(event.status)

    h.rt.on(RunCompleted, broken)
    h.rt.on(RunCompleted, other)
    h.large.append(plan("Hello."))
    assert (await h.say("hi")).status == "replied"
    assert heard == ["replied"] and "RUN_COMPLETED handler" in caplog.text
