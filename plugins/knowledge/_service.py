"""``KnowledgeService``: one agent's knowledge, kept in step with its sources and searchable.

Registered as the runtime's ``knowledge`` service. It syncs (plugins/knowledge/_ingest.py) in
the background once the agent is running — the agent answers from what is already stored, or
by keywords, meanwhile — and again whenever a reload leaves the agent running
(``AGENT_RELOADED``); a request during a sync runs one more after it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.runtime import RuntimeState

from ._config import KnowledgeConfig
from ._ingest import SyncReport, sync
from ._search import Hit, search

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["KnowledgeService"]

_log = logging.getLogger("plugins.knowledge")

# How often the background sync looks whether the runtime has finished starting.
_START_POLL_S = 0.02
_RECHECK_NONE_S = 5.0


class KnowledgeService:
    """One agent's knowledge: :meth:`request_sync`, :meth:`wait`, :meth:`search`."""

    def __init__(self, runtime: AgentRuntime, config: KnowledgeConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.last: SyncReport | None = None
        """What the last finished sync did."""
        self._wanted = False
        self._worker: asyncio.Task[None] | None = None
        self._known: tuple[bool, float] | None = None  # (has knowledge, when asked)

    def __repr__(self) -> str:
        return f"<KnowledgeService {self.runtime.character.name}>"

    def request_sync(self) -> None:
        """Sync in the background, after the runtime has started (and after a sync under way)."""
        self._wanted = True
        if self._worker is None or self._worker.done():
            self._worker = self.runtime.create_task(self._work(), "knowledge")

    async def on_reload(self, payload: dict[str, Any]) -> None:
        """``AGENT_RELOADED``: the files may have changed; look again."""
        self.request_sync()

    async def wait(self) -> SyncReport | None:
        """Wait for the syncs requested so far to finish; the last one's report."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)
        return self.last

    async def _work(self) -> None:
        # Plugins are set up before the runtime has its own rows and its embedding model's
        # dimension: wait until start() is through (close() cancels this task if it fails).
        while self.runtime.state is RuntimeState.STARTING:
            await asyncio.sleep(_START_POLL_S)
        if self.runtime.state is not RuntimeState.RUNNING:
            return
        name = self.runtime.character.name
        while self._wanted:
            self._wanted = False
            try:
                report = await sync(self.runtime, self.config)
            except Exception:
                _log.exception("%s: knowledge: loading failed; what was stored before is still used", name)
                continue
            self.last = report
            self._known = None  # ask the store again
            if report.files or report.facts or report.removed or report.fragments:
                _log.info("%s", report.line(name))
            else:
                _log.debug("%s", report.line(name))

    async def has_knowledge(self) -> bool:
        """Whether there is anything to search, own or shared; asked on every message, so the
        answer is kept: a yes until this agent's next sync, a no for a few seconds (another
        agent may be storing shared knowledge meanwhile)."""
        now = time.monotonic()
        if self._known is not None and (self._known[0] or now - self._known[1] < _RECHECK_NONE_S):
            return self._known[0]
        known = await self.runtime.store.has_knowledge()
        self._known = (known, now)
        return known

    async def search(self, query: str, vector: Sequence[float] | None = None) -> list[Hit]:
        """The fragments (own and shared) that best answer ``query``; see plugins/knowledge/_search.py."""
        return await search(self.runtime.store, self.config, query, vector, agent=self.runtime.character.name)
