"""A local model server (OPENAI_SERVER=local, the ollama preset): the daemon's characters take
turns at it, each try has minutes, a timeout is not sent again; a cloud server is as before."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.kernel.errors import ModelUnavailable
from bot.kernel.metrics import Metrics
from bot.kernel.models import ModelType
from bot.kernel.time_limits import time_limit
from bot.runtime.shared import Shared
from plugins.openai._pools import HttpPools
from plugins.openai._posting import longest_call_s
from tests.fakes.openai_server import Fail, FakeOpenAIServer, RecordedRequest

from ..fake_runtime import FakeRuntime
from .conftest import KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
HI = {"prompt": "hi"}


def chat(request: RecordedRequest) -> bool:
    return request.endpoint == "chat"


async def until(condition: Callable[[], bool]) -> None:
    """Wait for something the other tasks do in their own time (guarded against hanging)."""
    async with asyncio.timeout(60):
        while not condition():
            await asyncio.sleep(0.005)


async def two_characters(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, **settings: str
) -> tuple[FakeRuntime, FakeRuntime, Metrics]:
    """Two characters of one daemon (its Shared, its Metrics) on the same server."""
    shared, metrics = Shared(), Metrics()
    every = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, **settings}
    ada = await make_runtime(every, shared=shared, metrics=metrics)
    bob = await make_runtime(every, shared=shared, metrics=metrics, agent_id="agent-bob")
    return ada, bob, metrics


def waiting(metrics: Metrics, server: FakeOpenAIServer) -> float:
    """The gauge of requests waiting their turn at ``server``."""
    return metrics.model_requests_waiting.labels(server=server.url).value


async def test_two_characters_on_a_local_server_take_turns(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.openai")
    ada, bob, metrics = await two_characters(server, make_runtime, OPENAI_SERVER="local")
    server.script_chat(lambda body: f"to {body['messages'][-1]['content']}")
    first = server.hold(chat)
    second = server.hold(chat)
    ada_line = asyncio.create_task(ada.use(ModelType.TEXT_SMALL, {"prompt": "ada"}))
    await first.reached.wait()
    bob_line = asyncio.create_task(bob.use(ModelType.TEXT_LARGE, {"prompt": "bob"}))
    await until(lambda: waiting(metrics, server) == 1)
    assert len(server.requests_for("chat")) == 1  # bob's waits here, not at the server
    assert "Ada: TEXT_LARGE waits its turn at http://127.0.0.1" in caplog.text  # both FakeRuntimes are Ada
    assert "(1 answering, 0 waiting before it)" in caplog.text
    first.release()
    await second.reached.wait()
    assert ada_line.done() and await ada_line == "to ada"  # bob's was sent only once ada's had ended
    assert waiting(metrics, server) == 0
    second.release()
    assert await bob_line == "to bob"
    assert [r.json["messages"][-1]["content"] for r in server.requests_for("chat")] == ["ada", "bob"]


async def test_a_streamed_answer_keeps_its_turn_to_the_last_piece(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob, metrics = await two_characters(server, make_runtime, OPENAI_SERVER="local")
    server.script_chat("one two three four five six seven eight")
    held = server.hold(chat)
    waiting_while_streaming: list[int] = []

    def piece(text: str) -> None:
        # The line itself, not the gauge: the chunks may all be read before bob's task runs again.
        waiting_while_streaming.append(ada.shared.instance_of(HttpPools).waiting(server.url))

    streamed = asyncio.create_task(ada.use(ModelType.TEXT_LARGE, {"prompt": "hi", "on_delta": piece}))
    await held.reached.wait()
    other = asyncio.create_task(bob.use(ModelType.TEXT_SMALL, HI))
    await until(lambda: waiting(metrics, server) == 1)
    held.release()
    assert await streamed == "one two three four five six seven eight"
    assert waiting_while_streaming == [1] * 8  # bob's request waited for the last piece
    assert await other == "one two three four five six seven eight"
    assert len(server.requests_for("chat")) == 2


async def test_a_cloud_server_is_sent_every_request_at_once(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob, _ = await two_characters(server, make_runtime)
    held = server.hold(chat)
    ada_line = asyncio.create_task(ada.use(ModelType.TEXT_SMALL, HI))
    await held.reached.wait()
    assert await bob.use(ModelType.TEXT_SMALL, HI) == "echo: hi"  # while ada's is still under way
    held.release()
    assert await ada_line == "echo: hi"


async def test_a_wait_for_the_turn_counts_against_no_time_limit(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob, metrics = await two_characters(server, make_runtime, OPENAI_SERVER="local")
    held = server.hold(chat)
    ada_line = asyncio.create_task(ada.use(ModelType.TEXT_SMALL, HI))
    await held.reached.wait()
    limits: list[asyncio.Timeout] = []

    async def bob_line() -> Any:
        async with time_limit(30) as limit:  # as the runtime's MODEL_TIMEOUT_S and RUN_TIMEOUT_S are
            limits.append(limit)
            return await bob.use(ModelType.TEXT_SMALL, HI)

    bob_task = asyncio.create_task(bob_line())
    await until(lambda: waiting(metrics, server) == 1)
    assert limits[0].when() is None  # paused while bob waits
    held.release()
    assert await ada_line == await bob_task == "echo: hi"


async def test_a_timeout_is_not_sent_again_to_a_local_server(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_SERVER": "local",
            "OPENAI_TIMEOUT_S": "1",  # time for the request to reach the server on a busy machine
            "OPENAI_MAX_RETRIES": "2",
        }
    )
    server.hold(chat)  # busy with it until the server closes
    expected = r"no answer from http://127\.0\.0\.1:\d+/v1 within 1 s \(a local server: not sent again"
    with pytest.raises(ModelUnavailable, match=expected) as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert isinstance(info.value.__cause__, TimeoutError)
    assert len(server.requests) == 1


async def test_a_server_error_from_a_local_server_is_tried_again(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_SERVER": "local"})
    server.script_chat(Fail(503, times=1, retry_after=0.01), "loaded now")
    assert await runtime.use(ModelType.TEXT_SMALL, HI) == "loaded now"
    assert len(server.requests) == 2


async def test_max_concurrency_lets_as_many_through_at_once(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob, metrics = await two_characters(server, make_runtime, OPENAI_SERVER="local", OPENAI_MAX_CONCURRENCY="2")
    holds = [server.hold(chat), server.hold(chat)]
    lines = [
        asyncio.create_task(ada.use(ModelType.TEXT_SMALL, HI)),
        asyncio.create_task(bob.use(ModelType.TEXT_SMALL, HI)),
    ]
    for held in holds:
        await held.reached.wait()  # both at the server together
    third = asyncio.create_task(ada.use(ModelType.TEXT_LARGE, HI))
    await until(lambda: waiting(metrics, server) == 1)
    assert len(server.requests_for("chat")) == 2
    for held in holds:
        held.release()
    assert await asyncio.gather(*lines, third) == ["echo: hi"] * 3


@pytest.mark.parametrize(
    ("settings", "preset", "longest"),
    [
        ({"OPENAI_SERVER": "local"}, None, longest_call_s(300, 2)),
        ({}, "ollama", longest_call_s(300, 2)),
        ({"OPENAI_SERVER": "local", "OPENAI_TIMEOUT_S": "60", "OPENAI_MAX_RETRIES": "0"}, None, 60),
        ({}, None, longest_call_s(30, 2)),  # below the runtime's 120 s: a cloud call's limit is unchanged
    ],
)
async def test_the_runtime_is_told_how_long_a_call_may_take(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, settings: dict[str, str], preset: str | None, longest: float
) -> None:
    runtime = await make_runtime(
        {"OPENAI_BASE_URL": server.url, "OLLAMA_API_ENDPOINT": server.url, **settings}, model_preset=preset
    )
    assert {r.timeout_s for r in runtime.models} == {longest}


async def test_a_model_timeout_shorter_than_a_local_call_is_warned_about(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_SERVER": "local", "MODEL_TIMEOUT_S": "120"})
    assert "Ada: MODEL_TIMEOUT_S=120 ends a model call before OPENAI_TIMEOUT_S (300 s a try)" in caplog.text


async def test_a_server_nearby_not_said_to_be_local_gets_a_hint(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.openai")
    await make_runtime({"OPENAI_BASE_URL": server.url})
    hint = "is on this machine or its network; if it answers one request at a time"
    assert hint in caplog.text
    caplog.clear()
    await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_SERVER": "cloud"})
    assert hint not in caplog.text


async def test_sdk_calls_to_a_local_server_are_tried_once(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    # The SDK would send a timed-out request again; it cannot be told to retry only the rest.
    local = await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_SERVER": "local"})
    server.script_transcription(Fail(503, times=1), "heard")
    audio = {"audio": b"RIFF-not-really-audio", "filename": "a.wav"}
    with pytest.raises(ModelUnavailable, match=r"server error HTTP 503"):
        await local.use(ModelType.TRANSCRIPTION, audio)
    assert await local.use(ModelType.TRANSCRIPTION, audio) == "heard"
    assert len(server.requests_for("transcriptions")) == 2
