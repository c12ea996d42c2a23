"""TEXT_TO_SPEECH with ``stream``: the real openai client's streaming response against the fake server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from bot.kernel.errors import ModelAuthError, ModelError, ModelUnavailable
from bot.kernel.models import ModelType, SpeechStream
from plugins.openai import _handlers, _speech_stream
from tests.fakes.openai_server import CUT, Fail, FakeOpenAIServer

from ..fake_runtime import FakeRuntime
from .conftest import KEY


async def until(condition: Callable[[], bool]) -> None:
    """Wait for something the server does in its own time (guarded against hanging)."""
    async with asyncio.timeout(60):
        while not condition():
            await asyncio.sleep(0.005)


async def test_a_stream_gives_the_same_audio_and_request_as_bytes(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    stream = await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hello!", "stream": True})
    assert isinstance(stream, SpeechStream)
    assert (stream.format, stream.provider) == ("mp3", "openai")
    assert await stream.read() == b"FAKE-AUDIO:mp3:Hello!"
    assert server.requests_for("speech")[0].json == {
        "input": "Hello!",
        "model": "gpt-4o-mini-tts",
        "voice": "nova",
        "response_format": "mp3",
    }


@pytest.mark.parametrize(("asked", "format"), [("pcm", "pcm_24000"), ("opus", "opus"), ("wav", "wav")])
async def test_the_stream_says_what_its_bytes_are(
    runtime: FakeRuntime, server: FakeOpenAIServer, asked: str, format: str
) -> None:
    stream = await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "format": asked, "stream": True})
    assert stream.format == format
    assert await stream.read() == f"FAKE-AUDIO:{asked}:Hi".encode()
    assert server.requests_for("speech")[0].json["response_format"] == asked


async def test_the_stream_is_returned_once_the_first_audio_arrives(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    more = asyncio.Event()
    server.script_speech([b"first ", more, b"second"])
    stream = await asyncio.wait_for(runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": True}), 10)
    assert stream.first == b"first "  # the server is still holding back the rest
    more.set()
    assert await asyncio.wait_for(stream.read(), 10) == b"first second"
    assert server.aborted == []


async def test_closing_a_stream_early_closes_the_response(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    never = asyncio.Event()
    server.script_speech([b"first ", never, b"never sent"])
    stream = await asyncio.wait_for(runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": True}), 10)
    await stream.chunks.aclose()
    await until(lambda: server.aborted == ["speech"])


async def test_a_stream_cut_off_midway_is_a_model_error_that_says_so(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_speech([b"first ", CUT])
    stream = await asyncio.wait_for(runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": True}), 10)
    with pytest.raises(ModelUnavailable, match=r"the audio stream from .* broke \(\w+\)"):
        await asyncio.wait_for(stream.read(), 10)


async def test_a_refused_key_raises_before_any_stream_is_returned(
    runtime: FakeRuntime, server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script_speech(Fail(401))
    with pytest.raises(ModelAuthError, match="^Ada: openai refused the API key") as caught:
        await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": True})
    assert KEY not in str(caught.value) and KEY not in caplog.text


async def test_an_empty_body_is_an_error_not_a_silent_stream(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_speech(b"")
    with pytest.raises(ModelError, match="^Ada: gpt-4o-mini-tts on openai returned no audio$"):
        await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": True})


async def test_first_audio_is_logged_at_debug_without_the_text(
    runtime: FakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.openai")
    stream = await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "a very private sentence", "stream": True})
    await stream.read()
    (record,) = [r for r in caplog.records if r.name == "plugins.openai"]
    assert record.getMessage().startswith("Ada: TEXT_TO_SPEECH gpt-4o-mini-tts via openai: first audio in ")
    assert "private" not in caplog.text


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
async def test_audio_that_goes_on_past_the_limit_is_cut_off_with_a_model_error(
    runtime: FakeRuntime, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    """The SDK's ``audio.speech.create`` read any length; audio is read to a limit (lowered here)."""
    monkeypatch.setattr(_speech_stream, "MAX_AUDIO_BYTES", 10_000)
    server.script_speech([b"a" * 4000] * 6)
    with pytest.raises(
        ModelError, match=r"the answer from \S+ went on past the 10000 bytes troupe reads \(stopped at \d+\)$"
    ):
        spoken = await asyncio.wait_for(runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "stream": streaming}), 10)
        assert isinstance(spoken, SpeechStream)
        await asyncio.wait_for(spoken.read(), 10)


async def test_a_streamed_answer_that_goes_on_past_the_limit_is_cut_off(
    runtime: FakeRuntime, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_handlers, "MAX_REPLY_BYTES", 100)
    server.script_chat("word " * 200)
    pieces: list[str] = []
    with pytest.raises(ModelError, match=r"the answer from \S+ went on past the 100 bytes troupe reads"):
        await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi", "on_delta": pieces.append})
    assert sum(map(len, pieces)) <= 100
