"""A fake runtime with just what plugins/elevenlabs touches, and a fake ElevenLabs server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import plugins.elevenlabs
from plugins.elevenlabs import _speech
from tests.fakes.elevenlabs_server import DEFAULT_VOICE, FakeElevenLabsServer
from tests.plugins.fake_runtime import FakeRuntime, runtime_maker

KEY = "xi-secret-key-ada-0001"
OTHER_KEY = "xi-secret-key-bob-0002"
BAD_KEY = "xi-wrong-key-not-known-9999"
OTHER_VOICE = "21m00Tcm4TlvDq8ikWAM"


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
    async with runtime_maker(plugins.elevenlabs.setup) as make:
        yield make


@pytest.fixture
async def runtime(server: FakeElevenLabsServer, make_runtime: Callable[..., Awaitable[FakeRuntime]]) -> FakeRuntime:
    """The plugin with default settings, pointed at the fake server."""
    return await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url})


def secrets_in(text: str) -> list[str]:
    """The test keys that appear in ``text`` (there should be none)."""
    return [key for key in (KEY, OTHER_KEY, BAD_KEY) if key in text]
