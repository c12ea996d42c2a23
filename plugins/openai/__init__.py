"""Models over any OpenAI-compatible endpoint: OpenAI, Ollama, OpenRouter, vLLM, llama.cpp."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="openai",
    description="text, embeddings, transcription, image description and speech over any OpenAI-compatible API",
    aliases=("@elizaos/plugin-openai", "@elizaos/plugin-ollama", "@elizaos/plugin-openrouter", "ollama", "openrouter"),
    presets={
        "@elizaos/plugin-ollama": "ollama",
        "ollama": "ollama",
        "@elizaos/plugin-openrouter": "openrouter",
        "openrouter": "openrouter",
    },
)
