"""Models over any OpenAI-compatible endpoint: OpenAI, Ollama, OpenRouter, vLLM, llama.cpp.

``setup(runtime)`` reads the agent's settings for its preset (none, ``ollama`` or ``openrouter``,
chosen by the plugin name in the character file), opens one ``openai.AsyncOpenAI`` client per
endpoint, over the HTTP pool its daemon keeps for that base URL (``_pools``), and registers a
handler per model type it serves (see bot/models.py):

==========  ========  =====================================================================
preset      priority  serves
==========  ========  =====================================================================
(none)      50        every type; ``OPENAI_API_KEY`` and/or ``OPENAI_BASE_URL`` (IMAGE only at
                      OpenAI or with ``OPENAI_IMAGE_MODEL``/``IMAGE_MODEL`` named)
ollama      10        text, objects, embeddings; ``OLLAMA_API_ENDPOINT`` (``/api`` → ``/v1``)
openrouter  50        text, objects, image description; embeddings only through OpenAI
                      (``OPENAI_API_KEY`` or ``OPENAI_EMBEDDING_URL``)
==========  ========  =====================================================================

The clients close when the runtime does (``runtime.on_close``), the pools with the daemon's
last character. Failures surface as :class:`bot.errors.ModelError` and its subclasses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.plugins import PluginMeta

from ._config import EMBEDDING_DIMENSIONS, Endpoint, ProviderConfig, display_url, resolve_config

if TYPE_CHECKING:
    from bot.models import ModelHost
    from bot.settings import SettingsView

__all__ = ["EMBEDDING_DIMENSIONS", "Endpoint", "ProviderConfig", "check", "meta", "resolve_config", "setup"]

_log = logging.getLogger(__name__)

# Tracebacks and reprs show the public path (as bot.store does).
for _name in ("Endpoint", "ProviderConfig"):
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


def check(settings: SettingsView) -> None:
    """Raise :class:`~bot.errors.ConfigError` if the character's model settings cannot work (no
    key and no base URL, a value of the wrong form): ``troupe check``, and ``troupe start``
    before it opens the database."""
    resolve_config(settings, agent=settings.agent)


async def setup(runtime: ModelHost) -> None:
    """Register this agent's model handlers.

    Raises:
        ConfigError: the settings cannot work (no key and no base URL, an unknown embedding
            length, a bad number); the message names the agent and the setting to fix.

    Makes no network call: a wrong key shows up at the first model call, as ModelAuthError.
    """
    # The SDK is imported here, not at the top, so that discovering ``meta`` stays cheap.
    from ._batching import EmbeddingBatches
    from ._context import LearnedContexts
    from ._handlers import OpenAIModels
    from ._pools import HttpPools
    from ._vectors import SharedVectors

    agent = runtime.character.name
    config = resolve_config(runtime, agent=agent)
    shared = runtime.shared
    models = OpenAIModels(
        config,
        agent=agent,
        vectors=shared.one(SharedVectors),
        pools=shared.one(HttpPools),
        batches=shared.one(EmbeddingBatches),
        contexts=shared.one(LearnedContexts),
    )
    runtime.on_close(models.aclose)
    models.register(runtime)
    embeddings = (
        f"{config.embedding_model} ({config.embedding_dimensions}) via {display_url(config.embedding.base_url)}"
        if config.embedding is not None
        else "none"
    )
    _log.info(
        "%s: models via %s at %s (small %s, large %s; embeddings %s)",
        agent,
        config.preset,
        display_url(config.chat.base_url),
        config.small_model,
        config.large_model,
        embeddings,
    )
