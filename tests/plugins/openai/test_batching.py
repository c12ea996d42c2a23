"""Embedding requests of one daemon sent together while one is under way (plugins/openai/_batching.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.kernel.errors import ModelRequestRejected
from bot.kernel.models import ModelType
from bot.runtime.shared import Shared
from tests.fakes.openai_server import Fail, FakeOpenAIServer

from ..fake_runtime import FakeCharacter, FakeRuntime
from .conftest import KEY, OTHER_KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]

# How long a request stays under way at the fake server: long enough for the texts asked for
# meanwhile to join the next request even on a busy machine.
UNDER_WAY_S = 0.5


async def _embed(runtime: FakeRuntime, text: str) -> Any:
    return await runtime.use(ModelType.TEXT_EMBEDDING, {"text": text})


def _inputs(server: FakeOpenAIServer) -> list[Any]:
    return [r.json["input"] for r in server.requests_for("embeddings")]


async def _pair(server: FakeOpenAIServer, make_runtime: MakeRuntime, *, bob_key: str = KEY) -> list[FakeRuntime]:
    shared = Shared()
    ada = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}, shared=shared)
    bob = await make_runtime(
        {"OPENAI_API_KEY": bob_key, "OPENAI_BASE_URL": server.url},
        agent_id="agent-bob",
        character=FakeCharacter(name="Bob"),
        shared=shared,
    )
    return [ada, bob]


async def test_texts_asked_for_during_a_request_go_together_in_the_next(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    solo = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url})  # another daemon
    alone = {t: await _embed(solo, t) for t in ("b", "c", "d")}  # each its own request, as before
    ada, bob = await _pair(server, make_runtime)
    server.clear()
    server.latency = UNDER_WAY_S
    first = asyncio.create_task(_embed(ada, "first again"))
    await asyncio.sleep(0.01)  # under way
    later = await asyncio.gather(*(_embed(rt, t) for rt, t in ((bob, "b"), (ada, "c"), (bob, "d"))))
    await first
    assert _inputs(server) == ["first again", ["b", "c", "d"]]  # the first went at once, alone
    assert later == [alone["b"], alone["c"], alone["d"]]  # each its own vector, in order


async def test_one_text_a_server_rejects_fails_alone(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    ada, bob = await _pair(server, make_runtime)
    server.script_embeddings(lambda text: Fail(400, message="input too long") if text == "bad" else [0.5] * 1536)
    server.latency = UNDER_WAY_S
    first = asyncio.create_task(_embed(ada, "first"))
    await asyncio.sleep(0.01)
    results = await asyncio.gather(_embed(bob, "good"), _embed(ada, "bad"), _embed(bob, "fine"), return_exceptions=True)
    await first
    assert results[0] == results[2] == [0.5] * 1536
    assert isinstance(results[1], ModelRequestRejected) and "input too long" in str(results[1])
    # The batch, refused (in base64, then in floats: a refusal may be of base64), then each
    # text of it on its own.
    sent = ["good", "bad", "fine"]
    assert _inputs(server)[1:] == [sent, sent, "good", "bad", "bad", "fine"]


async def test_characters_with_different_keys_never_share_a_request(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob = await _pair(server, make_runtime, bob_key=OTHER_KEY)
    server.latency = UNDER_WAY_S
    first = asyncio.create_task(_embed(ada, "first"))
    await asyncio.sleep(0.01)
    await asyncio.gather(_embed(ada, "a1"), _embed(bob, "b1"), _embed(ada, "a2"), _embed(bob, "b2"))
    await first
    by_key = {(r.auth_suffix, str(r.json["input"])) for r in server.requests_for("embeddings")}
    # Bob's key had nothing under way: his first text went at once, his second after it.
    assert by_key == {("0001", "first"), ("0001", "['a1', 'a2']"), ("0002", "b1"), ("0002", "b2")}


async def test_a_caller_that_gives_up_before_its_turn_is_not_sent(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob = await _pair(server, make_runtime)
    server.latency = UNDER_WAY_S
    first = asyncio.create_task(_embed(ada, "first"))
    await asyncio.sleep(0.01)
    impatient = asyncio.create_task(_embed(bob, "never mind"))
    patient = asyncio.create_task(_embed(ada, "still wanted"))
    await asyncio.sleep(0.01)
    impatient.cancel()
    await first
    assert len(await patient) == 1536
    assert _inputs(server) == ["first", "still wanted"]
    with pytest.raises(asyncio.CancelledError):
        await impatient


async def test_when_the_sender_gives_up_the_texts_it_carried_for_others_are_sent_again(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    ada, bob = await _pair(server, make_runtime)
    server.latency = UNDER_WAY_S
    first = asyncio.create_task(_embed(ada, "first"))
    await asyncio.sleep(0.01)
    # Both wait for "first"; then the first of them sends both texts, and gives up on the way.
    sender, rider = asyncio.create_task(_embed(bob, "one")), asyncio.create_task(_embed(ada, "other"))
    await first
    async with asyncio.timeout(60):  # the batch reached the server and is under way
        while _inputs(server)[-1] != ["one", "other"]:
            await asyncio.sleep(0.005)
    sender.cancel()
    assert len(await rider) == 1536  # asked for again, alone
    assert _inputs(server)[-1] == "other"
    with pytest.raises(asyncio.CancelledError):
        await sender
