"""A real AgentRuntime with plugins elevenlabs and openai: ElevenLabs first, OpenAI when it refuses."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.kernel.errors import ModelAuthError, PluginLoadError
from bot.kernel.models import ModelType, SpeechStream
from bot.runtime.agent import AgentRuntime, RuntimeState
from bot.store import Database
from tests.fakes.elevenlabs_server import Fail, FakeElevenLabsServer
from tests.fakes.openai_server import Fail as OpenAIFail
from tests.fakes.openai_server import FakeOpenAIServer

from .conftest import BAD_KEY, KEY, secrets_in

OPENAI_KEY = "sk-test-secret-openai-0003"
Start = Callable[..., Awaitable[AgentRuntime]]


@pytest.fixture
async def openai_server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def start(tmp_path: Path, server: FakeElevenLabsServer, openai_server: FakeOpenAIServer) -> AsyncIterator[Start]:
    """``await start(**settings)``: Ada, as the daemon would load her, with both plugins."""
    runtimes: list[AgentRuntime] = []
    async with Database(tmp_path / "troupe.db") as db:

        async def make(**settings: str) -> AgentRuntime:
            secrets = {"ELEVENLABS_API_KEY": settings.pop("ELEVENLABS_API_KEY", KEY), "OPENAI_API_KEY": OPENAI_KEY}
            data: dict[str, Any] = {
                "name": "Ada",
                "bio": "A test character.",
                # OpenAI is listed first: priority, not file order, puts ElevenLabs in front.
                "plugins": ["@elizaos/plugin-openai", "@elizaos/plugin-elevenlabs"],
                "settings": {
                    "ELEVENLABS_BASE_URL": server.url,
                    "OPENAI_BASE_URL": openai_server.url,
                    "OPENAI_MAX_RETRIES": "0",
                    **settings,
                    "secrets": secrets,
                },
            }
            path = tmp_path / "ada.json"
            path.write_text(json.dumps(data))
            loaded = load_character(path, environ={})
            character = loaded.raise_for_problems()
            runtime = AgentRuntime(
                character,
                db.for_agent(character.agent_id),
                environ={},
                plugins=loaded.plugins,
                model_preset=loaded.model_preset,
            )
            runtimes.append(runtime)
            await runtime.start()
            return runtime

        yield make
        for runtime in runtimes:
            await runtime.close()


async def test_elevenlabs_speaks_first(
    start: Start, server: FakeElevenLabsServer, openai_server: FakeOpenAIServer
) -> None:
    runtime = await start()
    assert {"openai", "elevenlabs"} <= set(runtime.loaded_plugins)
    stream = await runtime.use_model(ModelType.TEXT_TO_SPEECH, {"text": "Hello", "stream": True})
    assert isinstance(stream, SpeechStream) and stream.provider == "elevenlabs"
    assert await stream.read()
    assert len(server.requests) == 1 and openai_server.requests_for("speech") == []


@pytest.mark.parametrize(
    ("settings", "script"),
    [
        ({"ELEVENLABS_API_KEY": BAD_KEY}, None),
        ({"ELEVENLABS_VOICE_ID": "NoSuchVoice123"}, None),
        ({}, Fail.quota_exceeded()),
        ({}, Fail.server_error(503)),
    ],
    ids=["refused-key", "unknown-voice", "quota", "server-down"],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "bytes"])
async def test_openai_speaks_when_elevenlabs_refuses(
    start: Start,
    server: FakeElevenLabsServer,
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, str],
    script: Fail | None,
    stream: bool,
) -> None:
    caplog.set_level(logging.DEBUG)
    runtime = await start(**settings)
    if script is not None:
        server.fail(script)
    result = await runtime.use_model(ModelType.TEXT_TO_SPEECH, {"text": "Hello", "stream": stream})
    if stream:
        assert isinstance(result, SpeechStream)
        assert (result.provider, result.format) == ("openai", "mp3")
        result = await result.read()
    assert result == b"FAKE-AUDIO:mp3:Hello"
    assert server.requests and all(r.events[0].startswith("error") for r in server.requests)
    assert len(openai_server.requests_for("speech")) == 1
    ours = [r.getMessage() for r in caplog.records if r.name == "plugins.elevenlabs" and r.levelno >= logging.WARNING]
    assert len(ours) == 1 and ours[0].startswith("Ada: ")
    assert any(m.startswith("Ada: TEXT_TO_SPEECH via elevenlabs failed") for m in caplog.messages)
    assert not secrets_in(caplog.text) and OPENAI_KEY not in caplog.text


async def test_when_both_refuse_the_last_error_is_raised(
    start: Start, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = await start(ELEVENLABS_API_KEY=BAD_KEY)
    openai_server.script_speech(OpenAIFail(401))
    with pytest.raises(ModelAuthError) as caught:
        await runtime.use_model(ModelType.TEXT_TO_SPEECH, {"text": "Hello", "stream": True})
    assert caught.value.provider == "openai"
    assert not secrets_in(caplog.text) and OPENAI_KEY not in caplog.text


async def test_a_bad_setting_stops_the_character_with_a_clear_message(start: Start) -> None:
    with pytest.raises(PluginLoadError) as caught:
        await start(ELEVENLABS_VOICE_STABILITY="1.5")
    assert str(caught.value) == (
        "plugin elevenlabs for Ada failed to load: "
        "ELEVENLABS_VOICE_STABILITY must be a number from 0 to 1 (such as 0.5), not '1.5'"
    )


async def test_closing_the_runtime_closes_the_client(start: Start, server: FakeElevenLabsServer) -> None:
    runtime = await start()
    await runtime.close()
    assert runtime.state is RuntimeState.CLOSED
    with pytest.raises(Exception, match="closed"):
        await runtime.use_model(ModelType.TEXT_TO_SPEECH, {"text": "Hello"}, provider="elevenlabs")
    assert server.requests == []
