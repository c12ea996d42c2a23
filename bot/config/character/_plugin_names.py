"""Which troupe platforms and plugins a character file's plugin, client and modelProvider names mean."""

from __future__ import annotations

import difflib

from bot.config import plugins as plugin_registry
from bot.config.character._result import LoadResult
from bot.kernel.errors import Problem

__all__ = ["resolve_plugins"]

# Legacy elizaOS v0 `clients` that troupe has no platform for but which need no warning.
_SILENT_CLIENTS = frozenset({"direct"})

# What troupe offers in place of an elizaOS plugin it does not have, by words in the plugin's name.
_MODEL_PLUGIN_WORDS = (
    "anthropic",
    "google",
    "gemini",
    "groq",
    "local-ai",
    "llama",
    "ollama",
    "openrouter",
    "venice",
    "together",
    "deepseek",
    "mistral",
    "grok",
    "xai",
    "redpill",
    "heurist",
    "nvidia",
)
_PLATFORM_PLUGIN_WORDS = (
    "twitter",
    "farcaster",
    "slack",
    "whatsapp",
    "lens",
    "instagram",
    "bluesky",
    "github",
    "matrix",
    "tiktok",
    "reddit",
    "email",
    "sms",
)


def _platform_names() -> str:
    """The platforms a character can run on under the daemon, for messages."""
    return ", ".join(n for n, m in plugin_registry.available().items() if m.kind == "platform" and not m.interactive)


def _plugin_tail(name: str) -> str:
    """``@elizaos/plugin-discord`` → ``discord``."""
    return name.lower().rsplit("/", 1)[-1].removeprefix("plugin-").removeprefix("client-")


def _plugin_instead(name: str) -> str:
    """What troupe offers in place of an elizaOS plugin it does not have."""
    lowered = name.strip().lower()
    known = plugin_registry.available()
    # Compared without the package prefix, which every elizaOS name shares.
    by_tail: dict[str, str] = {}
    for meta in known.values():
        for alias in (*meta.aliases, meta.name):  # the elizaOS name first: it is what the file uses
            by_tail.setdefault(_plugin_tail(alias), alias)
    close = difflib.get_close_matches(_plugin_tail(lowered), list(by_tail), n=1, cutoff=0.85)
    if close:
        return f"did you mean {by_tail[close[0]]!r}?"
    if any(word in lowered for word in _MODEL_PLUGIN_WORDS):
        models = plugin_registry.model_plugin()
        return f"for models, the {models.name} plugin serves {models.models_hint}"
    if any(word in lowered for word in _PLATFORM_PLUGIN_WORDS):
        return f"troupe runs on {_platform_names()}"
    plugins = ", ".join(n for n, m in known.items() if m.kind == "plugin")
    return f"troupe's plugins are {plugins}"


def resolve_plugins(plugins: list[str], clients: list[str], model_provider: str | None, result: LoadResult) -> None:
    seen: set[str] = set()

    def add(meta: plugin_registry.PluginMeta, preset: str | None) -> None:
        if preset:
            result.model_preset = preset
        if meta.name in seen:
            return
        seen.add(meta.name)
        (result.platforms if meta.kind == "platform" else result.plugins).append(meta.name)

    for i, name in enumerate(plugins):
        if name.strip().lower() in plugin_registry.BUILTIN:
            continue
        found = plugin_registry.resolve(name)
        if found is None:
            # elizaOS logs a plugin that fails to import and starts the agent without it; so does troupe.
            result.missing_plugins.append(name)
            result.warnings.append(
                Problem(
                    f"$.plugins[{i}]",
                    f"troupe has no plugin {name!r}; the character starts without it ({_plugin_instead(name)})",
                )
            )
            continue
        add(*found)
    for i, client in enumerate(clients):
        found = plugin_registry.resolve(client)
        if found is not None and found[0].kind == "platform":
            add(*found)
        elif client.lower() not in _SILENT_CLIENTS:
            result.warnings.append(
                Problem(
                    f"$.clients[{i}]", f"no troupe platform {client!r}; ignored (troupe runs on {_platform_names()})"
                )
            )

    if model_provider is not None:
        served = plugin_registry.for_model_provider(model_provider)
        if served is not None:
            add(*served)
        else:
            models = plugin_registry.model_plugin()
            add(models, None)
            result.warnings.append(
                Problem(
                    "$.modelProvider",
                    f"no troupe plugin for {model_provider!r}; the {models.name} plugin is used instead, and "
                    f"serves {models.models_hint}",
                )
            )
