"""Each message the character heard leaves a trace of how it ended (``troupe why``)."""

from __future__ import annotations

import logging

import pytest

from bot.kernel.errors import ModelError
from bot.kernel.messages import Status
from bot.kernel.types import ChannelType
from bot.runtime.tracing import note_model_call

from .harness import HUMAN, plan


async def test_a_reply_leaves_its_model_calls_actions_and_reply_ids(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("Hello, Sam."))
    outcome = await h.say("hi", id="m-1")
    assert outcome.status == "replied"
    trace = await h.rt.store.get_trace("m-1")
    assert trace is not None
    assert (trace.status, trace.agent_name, trace.entity_id, trace.room_id, trace.platform) == (
        Status.REPLIED, "Ada", HUMAN, h.room, "discord",
    )  # fmt: skip
    assert trace.rule == "room_type" and trace.decision == ""
    assert [(c.model_type, c.provider, c.ok) for c in trace.model_calls] == [("TEXT_LARGE", "script", True)]
    assert [(a.name, a.ok) for a in trace.actions] == [("REPLY", True)]
    assert len(trace.reply_ids) == 1 and len(h.sent) == 1  # the id of the one message the channel sent
    assert trace.ended_at >= trace.said_at > 0 and trace.duration_ms >= 0
    # What was asked is not kept: neither the prompt nor the reply's text.
    assert "Hello, Sam." not in repr(trace.to_json()) and "hi" not in trace.reason


async def test_an_ignored_message_says_who_decided_and_the_log_names_it(
    harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = await harness()
    h.small.append("<response><action>IGNORE</action></response>")
    with caplog.at_level(logging.INFO, logger="plugins.core._pipeline"):
        assert (await h.say("anyone around?", id="m-2")).status == "ignored"
    trace = await h.rt.store.get_trace("m-2")
    assert trace is not None and trace.status is Status.IGNORED
    assert (trace.rule, trace.decision, trace.reason) == ("undecided", "small model", "small model: IGNORE")
    assert [c.model_type for c in trace.model_calls] == ["TEXT_SMALL"]
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "m-2" in r.getMessage()]
    assert lines == ["Ada: message m-2 not answered: ignored (small model: IGNORE); see: troupe why m-2"]


async def test_with_the_console_on_the_log_line_also_links_to_its_why_page(
    harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = await harness()
    h.rt.shared.console_url = "http://127.0.0.1:8420/"  # as the daemon sets it once its console started
    h.small.append("<response><action>IGNORE</action></response>")
    with caplog.at_level(logging.INFO, logger="plugins.core._pipeline"):
        assert (await h.say("anyone around?", id="m 6")).status == "ignored"
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "m 6" in r.getMessage()]
    assert lines == [
        "Ada: message m 6 not answered: ignored (small model: IGNORE); "
        "see: troupe why m 6 or http://127.0.0.1:8420/why/m%206"
    ]


async def test_a_muted_room_and_a_failed_model_are_traced(harness) -> None:
    h = await harness()
    h.large.append(plan("Going quiet.", "REPLY,MUTE_ROOM"))
    await h.say("Ada, be quiet please", id="m-3")
    muted = await h.say("still there?", id="m-4")
    assert muted.status == "muted"
    trace = await h.rt.store.get_trace("m-4")
    assert trace is not None and (trace.status, trace.rule, trace.model_calls) == (Status.MUTED, "muted", ())
    first = await h.rt.store.get_trace("m-3")
    assert first is not None and [(a.name, a.ok) for a in first.actions] == [("REPLY", True), ("MUTE_ROOM", True)]

    h.large.append(ModelError("down", provider="test"))
    assert (await h.say("Ada, hello?", id="m-5")).status == "model_unreachable"
    failed = await h.rt.store.get_trace("m-5")
    assert failed is not None and failed.status is Status.MODEL_UNREACHABLE
    assert [(c.model_type, c.ok, c.error) for c in failed.model_calls] == [("TEXT_LARGE", False, "ModelError")]


async def test_the_model_and_tokens_a_plugin_names_are_traced(harness) -> None:
    h = await harness(ChannelType.DM)

    def answered(params: dict[str, object]) -> str:
        note_model_call("big-1", 120, 7)  # as a model plugin says what served the call
        return plan("Hi.")

    h.large.append(answered)
    assert (await h.say("hello", id="m-7")).status == "replied"
    trace = await h.rt.store.get_trace("m-7")
    assert trace is not None
    (call,) = trace.model_calls
    assert (call.model_type, call.model, call.prompt_tokens, call.completion_tokens) == ("TEXT_LARGE", "big-1", 120, 7)


async def test_a_duplicate_keeps_the_first_trace(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("Once."))
    assert (await h.say("hello", id="m-6")).status == "replied"
    assert (await h.say("hello", id="m-6")).status == "duplicate"
    trace = await h.rt.store.get_trace("m-6")
    assert trace is not None and trace.status is Status.REPLIED
    assert [t.message_id for t in await h.rt.store.get_traces(room_id=h.room)] == ["m-6"]
