"""PROVIDERS: which extra context the model can ask for by name in its ``<providers>`` field."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, State

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]


def _line(p: Provider) -> str:
    return f"- **{p.name}**: {p.description or 'no description'}"


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    public = sorted((p for p in runtime.providers.values() if not p.private), key=lambda p: p.name)
    dynamic = [p for p in public if p.dynamic]
    if dynamic:
        text = (
            "# Extra Context You Can Request\nList any of these in providers when the context above is not "
            "enough:\n" + "\n".join(_line(p) for p in dynamic)
        )
    else:
        text = "# Extra Context You Can Request\nNo extra context is available to request."
    everything = "# Available Providers\n" + "\n".join(_line(p) for p in public)
    return ProviderResult(
        text=text,
        values={"providersWithDescriptions": everything},
        data={
            "dynamicProviders": [{"name": p.name, "description": p.description} for p in dynamic],
            "allProviders": [{"name": p.name, "description": p.description, "dynamic": p.dynamic} for p in public],
        },
    )


provider = Provider(
    name="PROVIDERS",
    get=_get,
    description="The extra context providers the model can ask for, with what each one gives.",
)
