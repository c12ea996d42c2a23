"""``KnowledgeService``: one agent's knowledge, kept in step with its sources and searchable.

Registered as the runtime's ``knowledge`` service. It syncs (plugins/knowledge/_ingest.py) in
the background once the agent is running — the agent answers from what is already stored, or
by keywords, meanwhile — and again whenever a reload leaves the agent running
(``AGENT_RELOADED``); a request during a sync runs one more after it.

While a sync is requested or running (:class:`SyncState`), a message waits for it, at most
KNOWLEDGE_SYNC_WAIT_S (:meth:`KnowledgeService.settle`), so the first message after a first
start is answered with the knowledge being loaded rather than without it.

Web pages (``{"url": …}``) come due KNOWLEDGE_URL_REFRESH_H after they were read. A sync reads
those that are due, but syncs run only at a start or a reload, so a timer
(:meth:`KnowledgeService.start_page_timer`) sleeps until the next page is due and then syncs:
the due pages are read again, only changed text is chunked and embedded (files, unchanged, are
not read). A page that could not be read is tried again after at most :data:`_PAGE_RETRY_S`.
Like the sync, the timer runs only at home (in a cluster, the daemon that serves the agent).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot.sdk import (
    AgentReloaded,
    ExponentialBackoff,
    KnowledgeMatch,
    KnowledgeSync,
    ModelType,
    RuntimeState,
    ServiceKey,
    StoreState,
    UploadRefused,
    classify,
    now_ms,
)

from ._config import KnowledgeConfig, roots
from ._ingest import SyncReport, sync
from ._search import Hit, search
from ._upload import check_name, save_upload

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, StoredKnowledgeSource

__all__ = ["KNOWLEDGE", "KnowledgeService", "SyncState"]

_log = logging.getLogger("plugins.knowledge")

# How often the background sync looks whether the runtime has finished starting.
_START_POLL_S = 0.02
_RECHECK_NONE_S = 5.0
# Loading again while the store cannot write: soon at first, then at most this far apart.
_STORE_RETRY_FIRST_S = 1.0
_STORE_RETRY_CAP_S = 60.0
# The page timer looks again at least this often (a clock that jumped, a page listed by a
# reload without a sync), and tries a page it could not read again this long after.
_PAGE_LOOK_S = 3600.0
_PAGE_RETRY_S = 300.0
# Woken this long after a page's due time, so the sync finds it due.
_PAGE_SLACK_S = 0.05


class SyncState(enum.Enum):
    """Whether the agent's stored knowledge may be behind its sources."""

    IDLE = "idle"
    """No sync requested or running: what is stored is all there is."""
    SYNCING = "syncing"
    """A sync is requested (waiting for the runtime to finish starting) or running."""


class KnowledgeService:
    """One agent's knowledge: :meth:`request_sync`, :meth:`wait`, :meth:`settle`, :meth:`search`."""

    def __init__(self, runtime: AgentRuntime, config: KnowledgeConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.last: SyncReport | None = None
        """What the last finished sync did."""
        self._last_sync: KnowledgeSync | None = None
        self.state = SyncState.IDLE
        self._idle = asyncio.Event()  # set exactly while state is IDLE
        self._idle.set()
        self._wanted = False
        self._worker: asyncio.Task[None] | None = None
        self._known: tuple[bool, float] | None = None  # (has knowledge, when asked)
        self._synced = asyncio.Event()  # set when a sync finishes, for the page timer

    def __repr__(self) -> str:
        return f"<KnowledgeService {self.runtime.character.name}>"

    def request_sync(self) -> None:
        """Sync in the background, after the runtime has started (and after a sync under way)."""
        self._wanted = True
        if self._worker is None or self._worker.done():
            self._set_state(SyncState.SYNCING)
            self._worker = self.runtime.create_task(self._work(), "knowledge")

    def _set_state(self, state: SyncState) -> None:
        self.state = state
        if state is SyncState.IDLE:
            self._idle.set()
        else:
            self._idle.clear()

    async def on_reload(self, event: AgentReloaded) -> None:
        """``AGENT_RELOADED``: the files may have changed; look again."""
        self.request_sync()

    async def wait(self) -> SyncReport | None:
        """Wait for the syncs requested so far to finish; the last one's report."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)
        return self.last

    async def settle(self) -> None:
        """Wait for a sync under way to finish, at most KNOWLEDGE_SYNC_WAIT_S; past that, log that
        the answer comes from what is stored so far and return."""
        if self.state is SyncState.IDLE:
            return
        try:
            async with asyncio.timeout(self.config.sync_wait_s):
                await self._idle.wait()
        except TimeoutError:
            _log.info(
                "%s: knowledge: still loading after %g s; answering from what is stored so far",
                self.runtime.character.name,
                self.config.sync_wait_s,
            )

    async def _work(self) -> None:
        try:
            await self._sync_while_wanted()
        finally:
            self._set_state(SyncState.IDLE)

    async def _sync_while_wanted(self) -> None:
        # Plugins are set up before the runtime has its own rows and its embedding model's
        # dimension: wait until start() is through (close() cancels this task if it fails).
        while self.runtime.state is RuntimeState.STARTING:  # noqa: ASYNC110 - the runtime offers no event for it
            await asyncio.sleep(_START_POLL_S)
        if self.runtime.state is not RuntimeState.RUNNING:
            return
        name, backoff = self.runtime.character.name, ExponentialBackoff(_STORE_RETRY_FIRST_S, _STORE_RETRY_CAP_S)
        while self._wanted:
            self._wanted = False
            try:
                report = await sync(self.runtime, self.config)
            except Exception as exc:
                outage = classify(exc)
                if outage is None:
                    _log.exception("%s: knowledge: loading failed; what was stored before is still used", name)
                    continue
                if outage is StoreState.CORRUPT:  # the store said so, and what to do, once
                    _log.warning("%s: knowledge: not loaded: the database is corrupt", name)
                    continue
                # The store cannot write (it said so, once): load again once it can.
                _log.info("%s: knowledge: loading waits for the database (%s)", name, outage)
                self._wanted = True
                await self.runtime.store.health.pause(backoff.delay())
                continue
            backoff.reset()
            self._synced.set()
            self.last = report
            self._last_sync = _summary(report)
            self._known = None  # ask the store again
            if report.files or report.facts or report.pages or report.removed or report.fragments:
                _log.info("%s", report.line(name))
            else:
                _log.debug("%s", report.line(name))

    def start_page_timer(self) -> None:
        """Read web pages again as they come due, while the agent runs (see the module
        docstring); nothing when KNOWLEDGE_URL_REFRESH_H is 0 (pages are read at every sync)."""
        if self.config.url_refresh_ns > 0:
            self.runtime.create_task(self._page_timer(), "knowledge:pages")

    async def _page_timer(self) -> None:
        name = self.runtime.character.name
        while True:
            await self._idle.wait()
            self._synced.clear()
            try:
                due = await self._pages_due()
            except Exception as exc:  # noqa: BLE001 - the store said what is wrong; look again later
                _log.info("%s: knowledge: cannot see when web pages are due (%s)", name, exc)
                due = (_PAGE_RETRY_S, 0)
            wait = _PAGE_LOOK_S if due is None else min(due[0], _PAGE_LOOK_S)
            try:
                async with asyncio.timeout(wait):
                    await self._synced.wait()
                continue  # a sync ran meanwhile (a reload may list other pages): look again
            except TimeoutError:
                pass
            if due is None or due[0] > wait or not due[1]:
                continue
            _log.info("%s: knowledge: %d web page%s due; reading again", name, due[1], "s" if due[1] != 1 else "")
            self.request_sync()
            await self.wait()

    async def _pages_due(self) -> tuple[float, int] | None:
        """Seconds until the next listed web page is due, and how many are due then; None when
        the character lists no page. A page overdue (it could not be read at the last sync, or
        was listed since) is due after :data:`_PAGE_RETRY_S` at most."""
        listed = {(item.url, item.shared) for item in self.runtime.character.knowledge if item.url is not None}
        if not listed:
            return None
        store = self.runtime.store
        records = {False: await store.get_knowledge_sources(), True: await store.get_knowledge_sources(shared=True)}
        now, refresh = time.time_ns(), self.config.url_refresh_ns
        retry = min(_PAGE_RETRY_S, refresh / 1e9)
        waits = []
        for url, shared in listed:
            record = records[shared].get(f"url:{url}")
            left = (record.mtime_ns + refresh - now) / 1e9 if record is not None and record.mtime_ns else 0.0
            waits.append(left + _PAGE_SLACK_S if left > 0 else retry)
        soonest = min(waits)
        return soonest, sum(1 for w in waits if w <= soonest + _PAGE_SLACK_S)

    async def has_knowledge(self) -> bool:
        """Whether there is anything to search, own or shared; asked on every message, so the
        answer is kept: a yes until this agent's next sync, a no for a few seconds (another
        agent may be storing shared knowledge meanwhile) and not at all while this agent's own
        sync runs (it may store some any moment)."""
        now = time.monotonic()
        if self._known is not None and (self._known[0] or now - self._known[1] < _RECHECK_NONE_S):
            return self._known[0]
        known = await self.runtime.store.has_knowledge()
        self._known = (known, now) if known or self.state is SyncState.IDLE else None
        return known

    async def search(self, query: str, vector: Sequence[float] | None = None) -> list[Hit]:
        """The fragments (own and shared) that best answer ``query``; see plugins/knowledge/_search.py."""
        return await search(self.runtime.store, self.config, query, vector, agent=self.runtime.character.name)

    # -- the KnowledgeBase the console manages it through ------------------------------------------

    @property
    def max_file_bytes(self) -> int:
        return self.config.max_file_bytes

    @property
    def syncing(self) -> bool:
        return self.state is SyncState.SYNCING

    @property
    def last_sync(self) -> KnowledgeSync | None:
        return self._last_sync

    async def sources(self) -> list[StoredKnowledgeSource]:
        return await self.runtime.store.list_knowledge_sources()

    async def upload_folder(self) -> Path | None:
        """The first folder of the character's own (not shared) knowledge: a ``directory`` item
        or KNOWLEDGE_PATH naming a folder."""
        own = [root.path for root in roots(self.runtime) if not root.shared]
        return next((p for p in await asyncio.to_thread(lambda: [p for p in own if p.is_dir()])), None)

    async def add_file(self, filename: str, data: bytes) -> Path:
        name = check_name(filename)
        if len(data) > self.config.max_file_bytes:
            raise UploadRefused(
                f"{name} is {len(data) / 1024 / 1024:.1f} MB, over the {self.config.max_file_mb:g} MB knowledge "
                "reads (KNOWLEDGE_MAX_FILE_MB); split it or raise the setting"
            )
        folder = await self.upload_folder()
        if folder is None:
            raise UploadRefused(
                f"{self.runtime.character.name} has no knowledge folder to save it in: add "
                '{"directory": "knowledge"} (a folder next to its character file) to the knowledge of its '
                "character file, or set KNOWLEDGE_PATH to a folder, then reload"
            )
        path = await asyncio.to_thread(save_upload, folder, name, data)
        _log.info("%s: knowledge: %s added", self.runtime.character.name, path)
        return path

    async def resync(self) -> KnowledgeSync | None:
        self.request_sync()
        await self.wait()
        return self._last_sync

    async def try_search(self, query: str) -> list[KnowledgeMatch]:
        """As the KNOWLEDGE provider searches: the question's vector (when there is an embedding
        model and it answers) and its words."""
        vector: list[float] | None = None
        if self.runtime.has_model(ModelType.TEXT_EMBEDDING) and query.strip():
            try:
                vector = await self.runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": query})
            except Exception as exc:  # noqa: BLE001 - a failed embedding leaves the keyword search
                _log.info("%s: knowledge: trial search by keywords only (%s)", self.runtime.character.name, exc)
        shared_scope = self.runtime.store.knowledge_scopes[1]
        return [
            KnowledgeMatch(
                title=hit.memory.metadata.title or "",
                text=hit.text,
                score=hit.score,
                similarity=hit.similarity,
                keyword_rank=hit.keyword_rank,
                vector_rank=hit.vector_rank,
                shared=hit.memory.agent_id == shared_scope,
            )
            for hit in await self.search(query, vector)
        ]


def _summary(report: SyncReport) -> KnowledgeSync:
    return KnowledgeSync(
        finished_at=now_ms(),
        seconds=report.seconds,
        files=report.files,
        facts=report.facts,
        fragments=report.fragments,
        new=report.new,
        changed=report.changed,
        removed=report.removed,
        skipped=report.skipped,
        problems=tuple(report.problems),
        pages=report.pages,
    )


#: The service under which the knowledge plugin offers a character's knowledge.
KNOWLEDGE: ServiceKey[KnowledgeService] = ServiceKey("knowledge")
