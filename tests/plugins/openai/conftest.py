"""A fake runtime with just what plugins/openai touches, and a fake OpenAI server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import plugins.openai
from tests.fakes.openai_server import FakeOpenAIServer
from tests.plugins.fake_runtime import FakeRuntime, runtime_maker

KEY = "sk-test-secret-key-0001"
OTHER_KEY = "sk-test-secret-key-0002"


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def make_runtime() -> AsyncIterator[Callable[..., Awaitable[FakeRuntime]]]:
    """``await make_runtime(settings, **attrs)``: a FakeRuntime the plugin is set up on; closed after."""
    async with runtime_maker(plugins.openai.setup) as make:
        yield make


@pytest.fixture
async def runtime(server: FakeOpenAIServer, make_runtime: Callable[..., Awaitable[FakeRuntime]]) -> FakeRuntime:
    """The plugin with no preset, pointed at the fake server, retrying quickly."""
    return await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "1"})
