"""What the openai plugin asks of an agent's runtime, as protocols: a test hands it a fake one.

No SDK is imported here: ``plugins.openai`` reads these while discovering ``meta`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.models import ModelType

__all__ = ["ModelRuntime", "Registry", "SettingsRuntime", "SetupRuntime"]


class SettingsRuntime(Protocol):
    """What resolving the configuration reads."""

    agent_id: str
    model_preset: str | None

    def get_setting(self, key: str) -> str | None: ...


class _Character(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def system(self) -> str | None: ...


class ModelRuntime(Protocol):
    """What a handler reads of the runtime that calls it: the character's system prompt."""

    @property
    def character(self) -> _Character: ...


class Registry(Protocol):
    """Where the handlers are registered: the agent's runtime."""

    def register_model(
        self, model_type: ModelType, handler: Callable[..., Awaitable[object]], provider: str, priority: int, /
    ) -> None: ...


class SetupRuntime(SettingsRuntime, ModelRuntime, Registry, Protocol):
    """What ``setup`` is given: the settings, the character, registration, and closing."""

    def on_close(self, callback: Callable[[], Awaitable[None]], /) -> None: ...
