"""A fake runtime with just what plugins/elevenlabs touches, and a fake ElevenLabs server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import plugins.elevenlabs
from bot.models import ModelType
from plugins.elevenlabs import _speech
from tests.fakes.elevenlabs_server import DEFAULT_VOICE, FakeElevenLabsServer

KEY = "xi-secret-key-ada-0001"
OTHER_KEY = "xi-secret-key-bob-0002"
BAD_KEY = "xi-wrong-key-not-known-9999"
OTHER_VOICE = "21m00Tcm4TlvDq8ikWAM"

@dataclass
class FakeCharacter:
    name: str = "Ada"


@dataclass
class Registration:
    model_type: ModelType
    handler: Callable[[Any, Any], Awaitable[Any]]
    provider: str
    priority: int


@dataclass
class FakeRuntime:
    """The runtime contract the plugin relies on, and nothing more."""

    settings: dict[str, str] = field(default_factory=dict)
    character: FakeCharacter = field(default_factory=FakeCharacter)
    models: list[Registration] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def get_setting(self, key: str) -> str | None:
        return self.settings.get(key)

    def register_model(self, model_type: ModelType, handler: Any, provider: str, priority: int) -> None:
        self.models.append(Registration(model_type, handler, provider, priority))

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        self.closers.append(callback)

    async def speak(self, params: Any) -> Any:
        """Call the TEXT_TO_SPEECH handler as the runtime would."""
        (registration,) = self.models
        return await registration.handler(self, params)

    async def close(self) -> None:
        for callback in reversed(self.closers):
            await callback()
        self.closers.clear()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry back-off in milliseconds, so retry tests stay fast."""
    monkeypatch.setattr(_speech, "_RETRY_BASE_S", 0.001)
    monkeypatch.setattr(_speech, "_RETRY_CAP_S", 0.004)


@pytest.fixture
async def server() -> AsyncIterator[FakeElevenLabsServer]:
    async with FakeElevenLabsServer(keys={KEY, OTHER_KEY}, voices={DEFAULT_VOICE, OTHER_VOICE}) as fake:
        yield fake


@pytest.fixture
async def make_runtime() -> AsyncIterator[Callable[..., Awaitable[FakeRuntime]]]:
    """``await make_runtime(settings, **attrs)``: a FakeRuntime the plugin is set up on; closed after."""
    made: list[FakeRuntime] = []

    async def make(settings: dict[str, str], **attrs: Any) -> FakeRuntime:
        runtime = FakeRuntime(settings=dict(settings), **attrs)
        made.append(runtime)
        await plugins.elevenlabs.setup(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.close()


@pytest.fixture
async def runtime(server: FakeElevenLabsServer, make_runtime: Callable[..., Awaitable[FakeRuntime]]) -> FakeRuntime:
    """The plugin with default settings, pointed at the fake server."""
    return await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url})


def secrets_in(text: str) -> list[str]:
    """The test keys that appear in ``text`` (there should be none)."""
    return [key for key in (KEY, OTHER_KEY, BAD_KEY) if key in text]
