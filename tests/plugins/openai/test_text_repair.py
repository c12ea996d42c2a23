"""Text no encoder takes (lone surrogates), to and from the model: repaired, never an error."""

from __future__ import annotations

from bot.kernel.models import ModelType
from tests.fakes.openai_server import FakeOpenAIServer

from ..fake_runtime import FakeRuntime


async def test_a_prompt_with_a_lone_surrogate_reaches_the_model_repaired(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    reply = await runtime.use(ModelType.TEXT_SMALL, {"prompt": "odd \ud800 text", "system": "Be \udc00 brief."})
    assert reply == "echo: odd \ufffd text"
    messages = server.requests_for("chat")[0].json["messages"]
    assert [m["content"] for m in messages] == ["Be \ufffd brief.", "odd \ufffd text"]


async def test_model_output_with_a_lone_surrogate_comes_back_repaired(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_chat("Broken \ud800 answer, a \ud83d\ude00 smile.", "Streamed \udfff too.")
    assert await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi"}) == "Broken \ufffd answer, a \U0001f600 smile."
    pieces: list[str] = []
    streamed = await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi", "on_delta": pieces.append})
    assert streamed == "Streamed \ufffd too." and "".join(pieces) == streamed
    server.script_transcription("Heard \ud800 this.")
    assert await runtime.use(ModelType.TRANSCRIPTION, {"audio": b"ID3 audio", "filename": "a.mp3"}) == (
        "Heard \ufffd this."
    )
