"""The tool loop end to end over the real openai plugin: the pipeline asks TEXT_TOOLS of a fake
OpenAI-compatible server that answers with ``tool_calls``, runs the tools of an in-memory
Toolbox, sends the results back as ``tool`` messages, and replies with the model's last text
(streamed, on a channel that shows the reply as it is written)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from bot.kernel.messages import Status
from bot.kernel.types import ChannelType
from bot.runtime.components import TOOLBOX
from tests.fakes.openai_server import Fail, FakeOpenAIServer, ToolCalls
from tests.fakes.toolbox import MemoryToolbox, spec

from .harness import Harness

KEY = "sk-test-tools-0001"


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


def tool_requests(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests_for("chat") if "tools" in r.json or _has_tool_messages(r.json)]


def _has_tool_messages(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in body.get("messages", []))


async def with_weather(harness, server: FakeOpenAIServer) -> tuple[Harness, MemoryToolbox]:
    """Ada over the openai plugin and ``server``, with a weather tool in her Toolbox."""
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0"}
    h = await harness(ChannelType.DM, plugins=["openai"], settings=settings)
    box = MemoryToolbox()

    async def forecast(args: Mapping[str, Any]) -> str:
        return f"sunny, 21 C in {args['city']}"

    box.add(spec("weather__forecast", "The forecast for a city."), forecast)
    h.rt.register_service(TOOLBOX, box)
    return h, box


async def test_a_tool_call_over_the_openai_plugin_answers_with_its_result(harness, server: FakeOpenAIServer) -> None:
    h, box = await with_weather(harness, server)

    def model(body: dict[str, Any]) -> Any:
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        if "tools" in body and not tool_messages:
            return ToolCalls((("weather__forecast", {"city": "Oslo"}), ("weather__forecast", '{"city": ')))
        if tool_messages:
            return "Oslo: " + tool_messages[0]["content"].split("\n")[1]
        return "<response><thought>t</thought><actions>REPLY</actions><text>planned</text></response>"

    server.script_chat(model)
    outcome = await h.say("what's the weather in Oslo?", id="m-oslo")
    assert outcome.status is Status.REPLIED
    assert h.sent[0]["text"] == "Oslo: sunny, 21 C in Oslo"
    asked = tool_requests(server)
    assert len(asked) == 2  # one round of calls, then the answer
    second = asked[1]["messages"]
    tools_sent = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools_sent] == ["call_0", "call_1"]
    assert "sunny, 21 C in Oslo" in tools_sent[0]["content"] and 'untrusted="true"' in tools_sent[0]["content"]
    assert "not a JSON object" in tools_sent[1]["content"]  # bad arguments: an error, not a run
    assert [c.arguments for c in box.calls] == [{"city": "Oslo"}]
    assert json.loads(second[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    trace = await h.rt.store.get_trace("m-oslo")
    assert trace is not None and [(t.name, t.ok) for t in trace.tool_calls] == [
        ("weather__forecast", True),
        ("weather__forecast", False),
    ]


async def test_a_server_that_refuses_tools_gets_a_plan_instead(harness, server: FakeOpenAIServer) -> None:
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0"}
    h = await harness(ChannelType.DM, plugins=["openai"], settings=settings)
    box = MemoryToolbox()

    async def forecast(args: Mapping[str, Any]) -> str:
        return "sunny"

    box.add(spec("weather__forecast"), forecast)
    h.rt.register_service(TOOLBOX, box)

    def model(body: dict[str, Any]) -> Any:
        if "tools" in body:
            return Fail(400, message="this model does not support tools")
        return "<response><thought>t</thought><actions>REPLY</actions><text>No tools here.</text></response>"

    server.script_chat(model)
    assert (await h.say("weather?")).status is Status.REPLIED
    assert h.sent[0]["text"] == "No tools here." and not box.calls
    # The refusal is learned: the next message goes straight to the plan.
    before = len(server.requests_for("chat"))
    await h.say("and now?")
    later = server.requests_for("chat")[before:]
    assert not any("tools" in r.json for r in later)


async def test_a_tool_turn_streams_its_reply_and_takes_back_the_text_before_its_calls(
    harness, server: FakeOpenAIServer
) -> None:
    h, box = await with_weather(harness, server)
    reply = "It is sunny in Oslo today, 21 C."

    def model(body: dict[str, Any]) -> Any:
        if any(m["role"] == "tool" for m in body["messages"]):
            return reply
        return ToolCalls((("weather__forecast", {"city": "Oslo"}),), text="Let me look that up. ")

    server.script_chat(model)
    outcome, channel = await h.say_streamed("weather in Oslo?")
    assert outcome.status is Status.REPLIED
    assert [sent["text"] for sent in h.sent] == [reply]  # sent once, whole
    # The text written before the call shown, then taken back; the reply shown as it grew.
    taken_back = channel.streamed.index("")
    before, after = channel.streamed[:taken_back], channel.streamed[taken_back + 1 :]
    assert before[-1] == "Let me look that up. " and all("Let me look that up. ".startswith(t) for t in before)
    assert after[-1] == reply and len(after) > 1 and all(reply.startswith(t) for t in after)
    asked = tool_requests(server)
    assert len(asked) == 2 and all(body["stream"] is True for body in asked)
    assert [c.arguments for c in box.calls] == [{"city": "Oslo"}]


async def test_text_streamed_before_a_failure_is_taken_back(harness, server: FakeOpenAIServer) -> None:
    h, box = await with_weather(harness, server)
    server.script_chat(ToolCalls((("weather__forecast", {"city": "Oslo"}),), text="Let me look. ", cut=True))
    outcome, channel = await h.say_streamed("weather?")
    assert outcome.status is Status.MODEL_UNREACHABLE and not h.sent and not box.calls  # it broke off
    assert channel.streamed[0] == "Let " and channel.streamed[-1] == ""
