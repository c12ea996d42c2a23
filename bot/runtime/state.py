"""Composing the state for a message: every provider's part, merged, cached per message."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bot.kernel.types import Memory
from bot.runtime.components import Provider, ProviderResult, State

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["StateComposer"]

_log = logging.getLogger(__name__)

_CACHE_SIZE = 64


class StateComposer:
    """Runs one runtime's providers for a message and keeps what they said about the last few
    messages, so a later step of the same message only adds to it."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        self._cache: OrderedDict[str, State] = OrderedDict()

    async def compose(
        self, message: Memory, include: Iterable[str] | None, *, only_include: bool, skip_cache: bool
    ) -> State:
        """See :meth:`AgentRuntime.compose_state <bot.runtime.agent.AgentRuntime.compose_state>`."""
        providers = self.runtime.providers
        wanted = list(include or ())
        cached = None if skip_cache or message.id is None else self._cache.get(message.id)
        if only_include and wanted:
            names = set(wanted)
        else:
            names = {n for n, p in providers.items() if not p.dynamic and not p.private} | set(wanted)
        selected = sorted((p for n, p in providers.items() if n in names), key=lambda p: p.position)
        base = cached or State()
        results = await asyncio.gather(*(self._run(p, message, base) for p in selected))

        by_name = {**base.providers, **{p.name: r for p, r in zip(selected, results, strict=True)}}
        text = "\n".join(r.text for r in results if r.text)
        values = dict(base.values)
        for result in results:
            values.update(result.values)
        values["providers"] = text
        order = [p.name for p, r in zip(selected, results, strict=True) if r.text]
        state = State(text=text, values=values, providers=by_name, data=dict(base.data), order=order)
        if message.id is not None:
            self._cache[message.id] = state
            self._cache.move_to_end(message.id)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return state

    async def _run(self, provider: Provider, message: Memory, state: State) -> ProviderResult:
        try:
            result = await provider.get(self.runtime, message, state)
        except Exception:
            _log.exception("%s: provider %s failed", self.runtime.character.name, provider.name)
            return ProviderResult()
        return result if isinstance(result, ProviderResult) else ProviderResult()
