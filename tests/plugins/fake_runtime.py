"""A fake runtime with just what a model plugin (openai, elevenlabs) touches, for testing one
plugin on its own against its fake server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.kernel.metrics import Metrics
from bot.kernel.models import ModelType
from bot.runtime.shared import Shared

__all__ = ["FakeCharacter", "FakeRuntime", "Registration", "runtime_maker"]


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
    timeout_s: float | None = None
    context_length: Callable[[], int | None] | None = None


@dataclass
class FakeRuntime:
    """The runtime contract the plugins rely on, and nothing more."""

    settings: dict[str, str] = field(default_factory=dict)
    agent_id: str = "agent-ada"
    character: FakeCharacter = field(default_factory=FakeCharacter)
    model_preset: str | None = None
    models: list[Registration] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    shared: Shared = field(default_factory=Shared)
    metrics: Metrics = field(default_factory=Metrics)

    def get_setting(self, key: str) -> str | None:
        return self.settings.get(key)

    def register_model(
        self,
        model_type: ModelType,
        handler: Any,
        provider: str,
        priority: int,
        *,
        timeout_s: float | None = None,
        context_length: Callable[[], int | None] | None = None,
    ) -> None:
        self.models.append(Registration(model_type, handler, provider, priority, timeout_s, context_length))

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        self.closers.append(callback)

    def registration(self, model_type: ModelType) -> Registration:
        (found,) = [r for r in self.models if r.model_type == model_type]
        return found

    async def use(self, model_type: ModelType, params: Any) -> Any:
        """Call the handler registered for ``model_type`` as the runtime would."""
        return await self.registration(model_type).handler(self, params)

    async def speak(self, params: Any) -> Any:
        """Call the TEXT_TO_SPEECH handler as the runtime would."""
        return await self.use(ModelType.TEXT_TO_SPEECH, params)

    async def close(self) -> None:
        for callback in reversed(self.closers):
            await callback()
        self.closers.clear()


@contextlib.asynccontextmanager
async def runtime_maker(
    setup: Callable[[Any], Awaitable[None]],
) -> AsyncIterator[Callable[..., Awaitable[FakeRuntime]]]:
    """``make(settings, **attrs)``: a FakeRuntime ``setup`` has run on; all closed at the end."""
    made: list[FakeRuntime] = []

    async def make(settings: dict[str, str], **attrs: Any) -> FakeRuntime:
        runtime = FakeRuntime(settings=dict(settings), **attrs)
        made.append(runtime)
        await setup(runtime)
        return runtime

    try:
        yield make
    finally:
        for runtime in made:
            await runtime.close()
