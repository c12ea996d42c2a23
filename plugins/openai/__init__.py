"""Models over any OpenAI-compatible endpoint: OpenAI, Ollama, OpenRouter, vLLM, llama.cpp.

``setup(runtime)`` reads the agent's settings for its preset (none, ``ollama`` or ``openrouter``,
chosen by the plugin name in the character file), opens one ``openai.AsyncOpenAI`` client per
endpoint, over the HTTP pool its daemon keeps for that base URL (``_pools``), and registers a
handler per model type it serves (see bot/kernel/models.py):

==========  ========  =====================================================================
preset      priority  serves
==========  ========  =====================================================================
(none)      50        every type; ``OPENAI_API_KEY`` and/or ``OPENAI_BASE_URL`` (IMAGE only at
                      OpenAI or with ``OPENAI_IMAGE_MODEL``/``IMAGE_MODEL`` named)
ollama      10        text, objects, embeddings; ``OLLAMA_API_ENDPOINT`` (``/api`` → ``/v1``)
openrouter  50        text, objects, image description; embeddings only through OpenAI
                      (``OPENAI_API_KEY`` or ``OPENAI_EMBEDDING_URL``)
==========  ========  =====================================================================

A TEXT call that brings a ``schema`` (bot/kernel/models.py) asks the server to hold the answer to it,
in the form ``OPENAI_STRUCTURED_OUTPUT`` names (``json_schema``, the default; ``json_object_schema``
for llama-cpp-python's server; ``none``); a form the server refuses falls back to the next, and
the server (base URL and model) is asked in that one from then on (``_structured``).

``OPENAI_SERVER=local`` (the default of the ollama preset) is for a server that answers one
request at a time (llama.cpp, llama-cpp-python, Ollama on a small machine): the daemon's
characters take turns at it (``OPENAI_MAX_CONCURRENCY``, default 1), each try has 300 s
(``OPENAI_TIMEOUT_S``) and a timed-out one is not sent again. The runtime gives a model call as
long as the plugin's own timeouts allow (``register_model(timeout_s=…)``), and the wait for a
turn counts against no time limit.

The clients close when the runtime does (``runtime.on_close``), the pools with the daemon's
last character. Failures surface as :class:`bot.kernel.errors.ModelError` and its subclasses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

from ._config import (
    NO_EMBEDDINGS,
    Endpoint,
    ProviderConfig,
    ServerKind,
    display_url,
    is_nearby,
    resolve_config,
)

if TYPE_CHECKING:
    from bot.sdk import ModelHost, SettingsView

__all__ = [
    "check",
    "Endpoint",
    "meta",
    "NO_EMBEDDINGS",
    "ProviderConfig",
    "resolve_config",
    "ServerKind",
    "setup",
]

_log = logging.getLogger(__name__)

# Tracebacks and reprs show the public path (as bot.store does).
for _name in ("Endpoint", "ProviderConfig", "ServerKind"):
    globals()[_name].__module__ = __name__
del _name

meta = PluginMeta(
    name="openai",
    description="text, embeddings, transcription, images (described and drawn) and speech over any OpenAI-compatible API",
    aliases=("@elizaos/plugin-openai", "@elizaos/plugin-ollama", "@elizaos/plugin-openrouter", "ollama", "openrouter"),
    presets={
        "@elizaos/plugin-ollama": "ollama",
        "ollama": "ollama",
        "@elizaos/plugin-openrouter": "openrouter",
        "openrouter": "openrouter",
    },
    models=True,
    model_providers={"openai": None, "ollama": "ollama", "openrouter": "openrouter"},
    models_hint="any OpenAI-compatible endpoint: set OPENAI_BASE_URL (OpenRouter serves most models)",
)


def check(settings: SettingsView) -> list[str]:
    """Raise :class:`~bot.kernel.errors.ConfigError` if the character's model settings cannot work (no
    key and no base URL, a value of the wrong form): ``troupe check``, and ``troupe start``
    before it opens the database. Returns notes: embeddings turned off."""
    config = resolve_config(settings, agent=settings.agent)
    if config.embedding_model != NO_EMBEDDINGS:
        return []
    setting = "OLLAMA_EMBEDDING_MODEL" if config.preset == "ollama" else "OPENAI_EMBEDDING_MODEL"
    return [f"embeddings are off ({setting} is {NO_EMBEDDINGS}): memory and knowledge are searched by keywords alone"]


async def setup(runtime: ModelHost) -> None:
    """Register this agent's model handlers.

    Raises:
        ConfigError: the settings cannot work (no key and no base URL, a bad number); the
            message names the agent and the setting to fix.

    Makes no network call: a wrong key shows up at the first model call, as ModelAuthError.
    """
    # The SDK is imported here, not at the top, so that discovering ``meta`` stays cheap.
    from ._batching import EmbeddingBatches
    from ._context import LearnedContexts
    from ._handlers import OpenAIModels
    from ._pools import HttpPools
    from ._structured import OutputForms
    from ._vectors import SharedVectors

    agent = runtime.character.name
    config = resolve_config(runtime, agent=agent)
    shared = runtime.shared
    models = OpenAIModels(
        config,
        agent=agent,
        vectors=shared.instance_of(SharedVectors),
        pools=shared.instance_of(HttpPools),
        batches=shared.instance_of(EmbeddingBatches),
        forms=shared.instance_of(OutputForms),
        waiting=runtime.metrics.model_requests_waiting,
        contexts=shared.instance_of(LearnedContexts),
    )
    runtime.on_close(models.aclose)
    models.register(runtime)
    length = config.embedding_dimensions or "length learned at start"
    embeddings = (
        f"{config.embedding_model} ({length}) via {display_url(config.embedding.base_url)}"
        if config.embedding is not None
        else "off: memory and knowledge search by keywords"
    )
    _log.info(
        "%s: models via %s at %s (small %s, large %s; embeddings %s; a %s server: %s at a time, %g s a try)",
        agent,
        config.preset,
        display_url(config.chat.base_url),
        config.small_model,
        config.large_model,
        embeddings,
        config.server.value,
        config.max_concurrency or "any number",
        config.timeout_s,
    )
    _advise(runtime, config, models.longest_call_s)


def _advise(runtime: ModelHost, config: ProviderConfig, longest_s: float) -> None:
    """Say at start what would otherwise show up as lines failing on a slow local server."""
    agent = runtime.character.name
    if (
        config.server is ServerKind.CLOUD
        and runtime.get_setting("OPENAI_SERVER") is None
        and is_nearby(config.chat.base_url)
    ):
        _log.info(
            "%s: %s is on this machine or its network; if it answers one request at a time "
            "(llama.cpp, Ollama on a CPU), set OPENAI_SERVER=local",
            agent,
            display_url(config.chat.base_url),
        )
    raw = runtime.get_setting("MODEL_TIMEOUT_S")
    try:
        model_timeout = float(raw) if raw is not None else None
    except ValueError:
        model_timeout = None  # the runtime says so when it reads it
    if config.server is ServerKind.LOCAL and model_timeout is not None and model_timeout < longest_s:
        _log.warning(
            "%s: MODEL_TIMEOUT_S=%g ends a model call before OPENAI_TIMEOUT_S (%g s a try) and its retries "
            "would (%g s); leave it unset, or raise it",
            agent,
            model_timeout,
            config.timeout_s,
            longest_s,
        )
