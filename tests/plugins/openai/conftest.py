"""A fake runtime with just what plugins/openai touches, and a fake OpenAI server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import plugins.openai
from bot.models import ModelType
from tests.fakes.openai_server import FakeOpenAIServer

KEY = "sk-test-secret-key-0001"
OTHER_KEY = "sk-test-secret-key-0002"


@dataclass
class FakeCharacter:
    name: str = "Ada"
    system: str | None = "You are Ada."


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
    agent_id: str = "agent-ada"
    character: FakeCharacter = field(default_factory=FakeCharacter)
    model_preset: str | None = None
    models: list[Registration] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def get_setting(self, key: str) -> str | None:
        return self.settings.get(key)

    def register_model(self, model_type: ModelType, handler: Any, provider: str, priority: int) -> None:
        self.models.append(Registration(model_type, handler, provider, priority))

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        self.closers.append(callback)

    def registration(self, model_type: ModelType) -> Registration:
        (found,) = [r for r in self.models if r.model_type == model_type]
        return found

    async def use(self, model_type: ModelType, params: Any) -> Any:
        """Call the handler registered for ``model_type`` as the runtime would."""
        return await self.registration(model_type).handler(self, params)

    async def close(self) -> None:
        for callback in reversed(self.closers):
            await callback()
        self.closers.clear()


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def make_runtime() -> AsyncIterator[Callable[..., Awaitable[FakeRuntime]]]:
    """``await make_runtime(settings, **attrs)``: a FakeRuntime the plugin is set up on; closed after."""
    made: list[FakeRuntime] = []

    async def make(settings: dict[str, str], **attrs: Any) -> FakeRuntime:
        runtime = FakeRuntime(settings=dict(settings), **attrs)
        made.append(runtime)
        await plugins.openai.setup(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.close()


@pytest.fixture
async def runtime(server: FakeOpenAIServer, make_runtime: Callable[..., Awaitable[FakeRuntime]]) -> FakeRuntime:
    """The plugin with no preset, pointed at the fake server, retrying quickly."""
    return await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "1"})
