"""CAPABILITIES: what the agent can do beyond text — its plugins and the kinds of model it has."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import Memory, ModelType, Provider, ProviderResult, State

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

# What each model type lets the agent do, in words the model can act on.
_MEANING = {
    ModelType.TEXT_SMALL: "write short text",
    ModelType.TEXT_LARGE: "write text",
    ModelType.OBJECT_SMALL: "produce structured data",
    ModelType.OBJECT_LARGE: "produce structured data",
    ModelType.TEXT_EMBEDDING: "search its memory by meaning",
    ModelType.TRANSCRIPTION: "understand voice messages and audio",
    ModelType.IMAGE_DESCRIPTION: "see and describe images",
    ModelType.TEXT_TO_SPEECH: "speak aloud",
    ModelType.IMAGE: "draw pictures",
    ModelType.TEXT_TOOLS: "call tools",
}


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    models = [t for t in ModelType if runtime.has_model(t)]
    plugins = list(runtime.loaded_plugins)
    abilities = list(dict.fromkeys(_MEANING[t] for t in models))
    lines = [f"# {runtime.character.name}'s Capabilities"]
    lines.append(f"Can: {', '.join(abilities)}." if abilities else "No models are available.")
    missing = [
        m
        for t, m in _MEANING.items()
        if t not in models and t in (ModelType.TRANSCRIPTION, ModelType.IMAGE_DESCRIPTION, ModelType.TEXT_TO_SPEECH)
    ]
    if missing:
        lines.append(f"Cannot: {', '.join(dict.fromkeys(missing))}.")
    lines.append(f"Plugins: {', '.join(plugins)}" if plugins else "Plugins: none loaded")
    text = "\n".join(lines)
    return ProviderResult(
        text=text,
        values={"capabilities": text},
        data={"capabilities": abilities, "plugins": plugins, "models": [t.value for t in models]},
    )


provider = Provider(
    name="CAPABILITIES",
    get=_get,
    description="The agent's plugins and what its models let it do (see images, hear audio, speak).",
    dynamic=True,  # rarely needed; on request only, so ordinary prompts stay short
)
