"""The conversation pipeline every character runs: should-respond, reply, actions, providers,
evaluators (elizaOS's plugin-bootstrap).

Each action lives in ``actions/<name>.py`` and exposes ``action``; each provider in
``providers/<name>.py`` exposes ``provider``; each evaluator in ``evaluators/<name>.py`` exposes
``evaluator``; each of troupe's own tools in ``tools/<name>.py`` exposes ``tool``. Adding a file is
all it takes to register one.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, SettingsView

__all__ = ["check", "meta", "setup"]

meta = PluginMeta(
    name="core",
    description="conversation pipeline: deciding to respond, replying, actions, memory (built in)",
    aliases=("@elizaos/plugin-bootstrap", "bootstrap"),
    always=True,
    tools=("read_link",),
)


def _components(package: str, attribute: str) -> list[object]:
    module = importlib.import_module(f"{__name__}.{package}")
    found = []
    for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        component = getattr(importlib.import_module(f"{module.__name__}.{info.name}"), attribute, None)
        if component is not None:
            found.append(component)
    return found


def check(settings: SettingsView) -> None:
    """Raise :class:`~bot.sdk.ConfigError` for a room type or platform that
    ``SHOULD_RESPOND_BYPASS_TYPES`` / ``SHOULD_RESPOND_BYPASS_SOURCES`` name and that does not
    exist: ``troupe check``, and ``troupe start`` before it opens the database."""
    from bot.sdk import platform_names

    from ._bypass import read_bypass

    read_bypass(settings.get_setting, settings.character, platform_names())


async def setup(runtime: AgentRuntime) -> None:
    """Register the pipeline's event handlers, actions, providers, evaluators and tools, offer the
    messages' vectors (the ``MESSAGE_VECTORS`` service), room summaries (``CONVERSATION_SUMMARIES``)
    and the links reader (``LINK_READER``),
    handle presses of choice buttons, and schedule memory retention (raises ConfigError for a bad
    retention setting, TROUPE_FETCH_ALLOW_PRIVATE or a SHOULD_RESPOND_BYPASS_* name)."""
    from bot.sdk import CONVERSATION_SUMMARIES, LINK_READER, MESSAGE_VECTORS

    from . import _event_handlers, _links, _retention
    from ._embedding import MessageEmbeddings
    from ._pipeline import MessagePipeline
    from ._summaries import RoomSummaries
    from .actions import choose_option

    retention = _retention.read_settings(runtime)
    _links.allow_private(runtime)  # a bad value is an error now, not a warning at every link
    runtime.register_service(MESSAGE_VECTORS, MessageEmbeddings(runtime))
    runtime.register_service(CONVERSATION_SUMMARIES, RoomSummaries(runtime))
    runtime.register_service(LINK_READER, _links.LinkPages(runtime))

    for action in _components("actions", "action"):
        runtime.register_action(action)  # type: ignore[arg-type]
    for provider in _components("providers", "provider"):
        runtime.register_provider(provider)  # type: ignore[arg-type]
    for evaluator in _components("evaluators", "evaluator"):
        runtime.register_evaluator(evaluator)  # type: ignore[arg-type]
    for tool in _components("tools", "tool"):
        runtime.register_tool(tool)  # type: ignore[arg-type]
    choose_option.register(runtime)  # choice buttons, without a model
    MessagePipeline(runtime).register()
    _event_handlers.register(runtime)
    if retention.enabled:
        runtime.register_task_worker(_retention.worker)
        await _retention.schedule(runtime, retention)
