"""bot.runtime.speech: transcription and speech asked of the runtime, whatever shape the model plugin returns."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.kernel.errors import ModelError
from bot.kernel.models import ModelType, SpeechStream
from bot.media.audio import AudioError
from bot.runtime.agent import AgentRuntime
from bot.runtime.speech import speech, synthesize, transcribe
from bot.store import Database


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[AgentRuntime]:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x"}))
    character = load_character(path, environ={}).raise_for_problems()
    async with Database(tmp_path / "t.db") as db:
        yield AgentRuntime(character, db.for_agent(character.agent_id), environ={})


def answering(result: Any, asked: list[Any]) -> Any:
    async def handler(runtime: Any, params: Any) -> Any:
        asked.append(params)
        return result

    return handler


async def test_transcribe_gives_the_words_stripped_and_nothing_for_no_answer(runtime: AgentRuntime) -> None:
    asked: list[Any] = []
    runtime.register_model(ModelType.TRANSCRIPTION, answering("  Hello there.\n", asked), "script")
    assert await transcribe(runtime, b"OggS...", "voice.ogg") == "Hello there."
    assert asked == [{"audio": b"OggS...", "filename": "voice.ogg"}]
    runtime.register_model(ModelType.TRANSCRIPTION, answering(None, asked), "silent", priority=99)
    assert await transcribe(runtime, b"OggS...", "voice.ogg") == ""


async def test_without_a_model_transcribe_and_synthesize_raise_model_error(runtime: AgentRuntime) -> None:
    with pytest.raises(ModelError, match="no model serves TRANSCRIPTION"):
        await transcribe(runtime, b"x", "speech.wav")
    with pytest.raises(ModelError, match="no model serves TEXT_TO_SPEECH"):
        await synthesize(runtime, "Hi", "opus")


async def test_a_speech_stream_is_read_whole_with_its_format(runtime: AgentRuntime) -> None:
    asked: list[Any] = []
    runtime.register_model(ModelType.TEXT_TO_SPEECH, answering(SpeechStream.of(b"abc", "pcm_16000"), asked), "s")
    assert await synthesize(runtime, "Hi", "opus") == (b"abc", "pcm_16000")
    assert asked == [{"text": "Hi", "format": "opus"}]


async def test_bytes_are_taken_to_be_the_format_asked_for_else_mp3(runtime: AgentRuntime) -> None:
    asked: list[Any] = []
    runtime.register_model(ModelType.TEXT_TO_SPEECH, answering(bytearray(b"xyz"), asked), "bytes")
    assert await synthesize(runtime, "Hi", "opus") == (b"xyz", "opus")
    streamed = await speech(runtime, "Hi", stream=True)
    assert (await streamed.read(), streamed.format) == (b"xyz", "mp3")
    assert asked[1] == {"text": "Hi", "stream": True}


async def test_what_is_not_audio_is_an_audio_error(runtime: AgentRuntime) -> None:
    runtime.register_model(ModelType.TEXT_TO_SPEECH, answering({"audio": b""}, []), "odd")
    with pytest.raises(AudioError, match="returned dict, not audio"):
        await synthesize(runtime, "Hi", "opus")
