"""Bringing an agent's stored knowledge in line with its sources, incrementally.

One pass (:func:`sync`) per scope, own and shared; both store (steps 1–3) before either embeds:

1. Sources are listed: the character's facts and web pages (``{"url": …}``), and the files found
   under its paths, folders and ``KNOWLEDGE_PATH`` (with size and mtime; one walk in a worker
   thread).
2. A file whose size, mtime and chunk settings match what was stored is left alone without
   being read. Otherwise it is read and hashed (SHA-256): the same bytes as before only update
   the record; content already stored (the same file elsewhere, the same fact twice) is only
   linked to; new content is extracted, chunked and stored at once, without vectors — keyword
   search finds it immediately.
   A web page is read again only when it is due: KNOWLEDGE_URL_REFRESH_H (24 h) after it was
   last read, or at once when newly listed. Syncs run at every start and reload, so reading each
   page every time would fetch it on every restart; a page read again with the same text costs
   no chunking or embedding (its hash decides, as for files). A page that cannot be read keeps
   what was stored from it and is reported.
3. Sources that are gone are forgotten, and documents no source refers to any more go with
   their fragments. A file or folder that exists but cannot be read keeps what was stored.
4. Fragments with no vector of this agent's length are embedded in batches and given one. That
   one step serves new documents, an interrupted earlier run, a changed embedding length, and
   shared documents another agent with another model stored. With CTX_KNOWLEDGE_ENABLED, what
   is embedded is each fragment with a context the small model writes of it in its document
   (plugins/knowledge/_context.py).

Nothing is embedded twice: unchanged knowledge costs no embedding call. Shared-scope passes of
different agents of one process run one at a time (``Store.lock_shared_knowledge``), so a
shared document is embedded once.
File reads, PDF parsing and chunking run in worker threads; every model call is bounded by the
runtime's MODEL_TIMEOUT_S.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from bot.sdk import KnowledgeDocument, KnowledgeSourceRecord, ModelError, ModelType, TroupeError, string_to_uuid

from ._config import KnowledgeConfig, roots
from ._context import Contextualizer
from ._files import FoundFile, Scan, Unreadable, content_type, extract_text, scan
from ._pages import PageRead, read_pages, shown
from ._text import chunk_text, estimate_tokens

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, Store

__all__ = ["Embedder", "SyncReport", "document_id", "sync"]

_log = logging.getLogger("plugins.knowledge")

# Bump when extraction or chunking changes what a file's fragments are: every document is then
# chunked (and embedded) again once.
_FORMAT = "1"
# Texts longer than this are chunked in a worker thread.
_CHUNK_INLINE = 20_000
# Give up embedding for this run after this many failed requests in a row.
_MAX_FAILURES = 3
_PROGRESS_EVERY_S = 15.0


def document_id(scope: str, content_hash: str, config: KnowledgeConfig) -> str:
    """The id of a document: its scope, its bytes, and how it was chunked."""
    return string_to_uuid(f"knowledge:{scope}:{content_hash}:{config.chunking}:{_FORMAT}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class SyncReport:
    """What one sync did, for the log line and for tests."""

    files: int = 0
    facts: int = 0
    pages: int = 0
    """Web pages listed (read this time or not)."""
    fragments: int = 0
    """Fragments the agent can search afterwards (its own and shared)."""
    new: int = 0
    changed: int = 0
    removed: int = 0
    skipped: int = 0
    embedded: int = 0
    not_embedded: int = 0
    contexts: int = 0
    """Contexts the model was asked for (CTX_KNOWLEDGE_ENABLED)."""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def line(self, agent: str) -> str:
        parts = [f"{self.new} new", f"{self.changed} changed", f"{self.removed} removed"]
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        listed = [f"{self.files} file{'s' if self.files != 1 else ''}"]
        if self.facts:
            listed.append(f"{self.facts} fact{'s' if self.facts != 1 else ''}")
        if self.pages:
            listed.append(f"{self.pages} web page{'s' if self.pages != 1 else ''}")
        sources = " and ".join([", ".join(listed[:-1]), listed[-1]]) if len(listed) > 1 else listed[0]
        embedded = f"; {self.embedded} chunks embedded" if self.embedded else ""
        if self.contexts:
            embedded += f" ({self.contexts} contexts written)"
        if self.not_embedded:
            embedded += f", {self.not_embedded} not (found by keywords until the next start)"
        return (
            f"{agent}: knowledge: {sources}, {self.fragments} chunks ({', '.join(parts)}{embedded}) "
            f"in {self.seconds:.1f} s"
        )


class Embedder:
    """Embeds texts through the runtime, in batches when the model handler takes them.

    A handler that does not understand ``{"texts": [...]}`` is found out on the first batch and
    then sent one text at a time, ``concurrency`` at once.
    """

    def __init__(self, runtime: AgentRuntime, config: KnowledgeConfig) -> None:
        self.runtime = runtime
        self.config = config
        self._batches: bool | None = None  # None: not known yet
        self._slots = asyncio.Semaphore(config.embed_concurrency)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text; raises ModelError when the model fails."""
        async with self._slots:
            if self._batches is not False:
                try:
                    vectors = await self.runtime.use_model(ModelType.TEXT_EMBEDDING, {"texts": list(texts)})
                except ModelError as exc:
                    # A handler reading params["text"] fails with KeyError (TypeError for a str).
                    if self._batches or not isinstance(exc.original, (KeyError, TypeError)):
                        raise
                    self._batches = False
                else:
                    if _is_batch(vectors, len(texts)):
                        self._batches = True
                        return vectors
                    if self._batches:
                        raise ModelError(
                            f"the embedding model did not return one vector for each of {len(texts)} texts",
                            agent=self.runtime.character.name,
                        )
                    self._batches = False
            return [await self.runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": t}) for t in texts]


def _failure(result: Exception | list[list[float]], dim: int, agent: str) -> str:
    """Why a group of chunks got no vectors: the error's class and message (the log filter
    scrubs secrets from it), or the lengths that do not fit."""
    if isinstance(result, TroupeError):
        reason = f"{result.__class__.__name__}: {result.reason_for(agent)}"
        original = result.original if isinstance(result, ModelError) else None
        return f"{reason}: {original}" if original is not None and str(original) else reason
    if isinstance(result, Exception):
        return f"{result.__class__.__name__}: {result}" if str(result) else result.__class__.__name__
    lengths = sorted({len(v) for v in result if len(v) != dim})
    return f"vectors of length {', '.join(map(str, lengths))}, where the agent's are {dim} long"


def _is_batch(value: object, count: int) -> TypeGuard[list[list[float]]]:
    return (
        isinstance(value, list)
        and len(value) == count
        and all(isinstance(v, list) and v and isinstance(v[0], (int, float)) for v in value)
    )


class _Pass:
    """One scope's part of a sync (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, config: KnowledgeConfig, report: SyncReport, *, shared: bool) -> None:
        self.runtime = runtime
        self.store: Store = runtime.store
        self.config = config
        self.report = report
        self.shared = shared
        self.scope = self.store.knowledge_scopes[1 if shared else 0]
        self.agent = runtime.character.name

    def _skip(self, where: str, reason: str) -> None:
        self.report.skipped += 1
        self.report.problems.append(f"{where} skipped: {reason}")  # the console shows them
        _log.warning("%s: knowledge: %s skipped: %s", self.agent, where, reason)

    async def run(
        self, files: Sequence[FoundFile], facts: Sequence[str], urls: Sequence[str], unreadable: Sequence[str]
    ) -> None:
        existing = await self.store.get_knowledge_sources(shared=self.shared)
        keep: set[str] = set()
        for found in files:
            key = f"file:{found.path}"
            if await self._file(found, key, existing.get(key)):
                keep.add(key)
        for text in facts:
            key = f"text:{_sha256(text.encode('utf-8'))}"
            if key not in keep:
                await self._fact(text, key, existing.get(key))
                keep.add(key)
        due: list[str] = []
        for url in dict.fromkeys(urls):  # each once, in order
            if self._fresh(existing.get(f"url:{url}")):
                keep.add(f"url:{url}")
            else:
                due.append(url)
        for read in await read_pages(self.runtime, due):
            if await self._page(read, f"url:{read.url}", existing.get(f"url:{read.url}")):
                keep.add(f"url:{read.url}")
        # What sat under a folder or file that could not be read is kept, not forgotten.
        keep |= {k for k in existing if any(k == f"file:{p}" or k.startswith(f"file:{p}{os.sep}") for p in unreadable)}
        gone = [k for k in existing if k not in keep]
        self.report.removed += len(gone)
        await self.store.forget_knowledge_sources(gone, shared=self.shared)

    async def _file(self, found: FoundFile, key: str, old: KnowledgeSourceRecord | None) -> bool:
        """Bring one file up to date; False when it holds nothing usable (it is then forgotten)."""
        if (
            old is not None
            and old.size == found.size
            and old.mtime_ns == found.mtime_ns
            and old.document_id == document_id(self.scope, old.content_hash, self.config)
        ):
            return True  # unchanged: not even read
        if found.size > self.config.max_file_bytes:
            self._skip(
                str(found.path),
                f"{found.size / 1024 / 1024:.1f} MB is over KNOWLEDGE_MAX_FILE_MB ({self.config.max_file_mb:g} MB)",
            )
            return False
        try:
            data = await asyncio.to_thread(found.path.read_bytes)
        except FileNotFoundError:
            return False  # gone since the scan: forgotten
        except OSError as exc:
            self._skip(str(found.path), f"cannot read it ({exc.strerror or exc}); what was stored from it is kept")
            return old is not None
        digest = await asyncio.to_thread(_sha256, data) if len(data) > _CHUNK_INLINE else _sha256(data)
        doc_id = document_id(self.scope, digest, self.config)
        record = KnowledgeSourceRecord(key, doc_id, digest, found.size, found.mtime_ns)
        if old is not None and old.document_id == doc_id:  # touched, not changed
            await self.store.put_knowledge_document(None, record, shared=self.shared)
            return True
        if await self.store.has_knowledge_document(doc_id, shared=self.shared):
            await self.store.put_knowledge_document(None, record, shared=self.shared)  # the same content elsewhere
        else:
            try:
                fragments = await asyncio.to_thread(self._prepare_file, found, data)
            except Unreadable as exc:
                self._skip(str(found.path), str(exc))
                return False
            metadata = {
                "source": "file",
                "title": found.title,
                "originalFilename": found.path.name,
                "path": str(found.path),
                "contentType": content_type(found.path),
                "fileExt": found.path.suffix.lower().lstrip("."),
                "fileSize": found.size,
                "contentHash": digest,
                "shared": self.shared,
            }
            document = KnowledgeDocument(doc_id, found.title, fragments, metadata)
            await self.store.put_knowledge_document(document, record, shared=self.shared)
        self._stored(old)
        return True

    def _stored(self, old: KnowledgeSourceRecord | None) -> None:
        """Count a source whose document was stored: new, or changed since ``old``."""
        if old is None:
            self.report.new += 1
        else:
            self.report.changed += 1

    def _prepare_file(self, found: FoundFile, data: bytes) -> list[str]:
        """In a worker thread: the file's fragments, each headed by the file's title."""
        return self._headed_chunks(found.title, extract_text(found.path, data))

    def _headed_chunks(self, title: str, text: str) -> list[str]:
        """``text``'s fragments, each headed by ``title`` (CPU-bound for a long text)."""
        header = f"[{title}]\n"
        budget = max(self.config.chunk_tokens - estimate_tokens(header), self.config.chunk_tokens // 2)
        return [header + chunk for chunk in chunk_text(text, budget, self.config.overlap_tokens)]

    def _fresh(self, old: KnowledgeSourceRecord | None) -> bool:
        """Whether a page was read recently enough not to be read again (``mtime_ns`` of a page's
        record is when it was last read), under the chunk settings in force."""
        return (
            old is not None
            and old.mtime_ns is not None
            and self.config.url_refresh_ns > 0
            and time.time_ns() - old.mtime_ns < self.config.url_refresh_ns
            and old.document_id == document_id(self.scope, old.content_hash, self.config)
        )

    async def _page(self, read: PageRead, key: str, old: KnowledgeSourceRecord | None) -> bool:
        """Bring one web page up to date; False when there is nothing of it to keep."""
        if read.page is None:
            kept = "what was stored from it is kept" if old is not None else "nothing is stored from it yet"
            self._skip(shown(read.url), f"{read.problem}; {kept}")
            return old is not None
        page = read.page
        text = f"Source: {shown(page.url)}\n\n{page.text}"  # a query may hold a key: not for prompts
        data = text.encode("utf-8")
        digest = await asyncio.to_thread(_sha256, data) if len(data) > _CHUNK_INLINE else _sha256(data)
        doc_id = document_id(self.scope, digest, self.config)
        record = KnowledgeSourceRecord(key, doc_id, digest, len(data), time.time_ns())
        if old is not None and old.document_id == doc_id:  # read again, unchanged: only when it was read
            await self.store.put_knowledge_document(None, record, shared=self.shared)
            return True
        document = None
        if not await self.store.has_knowledge_document(doc_id, shared=self.shared):
            title = " ".join(page.title.split())[:200] or shown(page.url)
            fragments = await asyncio.to_thread(self._headed_chunks, title, text)
            metadata = {
                "source": "url",
                "title": title,
                "url": shown(read.url),
                "contentType": "text/plain",
                "fileSize": len(data),
                "contentHash": digest,
                "shared": self.shared,
            }
            document = KnowledgeDocument(doc_id, title, fragments, metadata)
        await self.store.put_knowledge_document(document, record, shared=self.shared)
        self._stored(old)
        return True

    async def _fact(self, text: str, key: str, old: KnowledgeSourceRecord | None) -> None:
        digest = key.removeprefix("text:")
        doc_id = document_id(self.scope, digest, self.config)
        if old is not None and old.document_id == doc_id:
            return  # unchanged
        document = None
        if not await self.store.has_knowledge_document(doc_id, shared=self.shared):
            if len(text) > _CHUNK_INLINE:
                fragments = await asyncio.to_thread(
                    chunk_text, text, self.config.chunk_tokens, self.config.overlap_tokens
                )
            else:
                fragments = chunk_text(text, self.config.chunk_tokens, self.config.overlap_tokens)
            title = " ".join(text.split())[:80]
            document = KnowledgeDocument(
                doc_id,
                title,
                fragments,
                {
                    "source": "text",
                    "title": title,
                    "contentType": "text/plain",
                    "contentHash": digest,
                    "shared": self.shared,
                },
            )
        await self.store.put_knowledge_document(
            document, KnowledgeSourceRecord(key, doc_id, digest), shared=self.shared
        )
        self._stored(old)  # changed: chunked again under new chunk settings

    async def embed_missing(self, embedder: Embedder | None, contexts: Contextualizer | None = None) -> None:
        """Give every fragment of this scope lacking one a vector of the agent's length: of its
        text, or of its text with its context (``contexts``: CTX_KNOWLEDGE_ENABLED)."""
        if embedder is None:
            return
        dim = await self.store.get_embedding_dimension()
        missing = await self.store.knowledge_fragments_without_vectors(dim, shared=self.shared)
        batch, window = self.config.embed_batch, self.config.embed_batch * self.config.embed_concurrency
        failed = 0
        failures = 0  # failed requests in a row
        last_progress = time.monotonic()
        for start in range(0, len(missing), window):
            if failures >= _MAX_FAILURES:
                failed += len(missing) - start
                break
            ids = missing[start : start + window]
            if contexts is None:
                texts = await self.store.get_knowledge_texts(ids)
            else:
                texts = await contexts.texts(ids, await self.store.get_knowledge_documents_of(ids))
            items = [(memory_id, texts[memory_id]) for memory_id in ids if texts.get(memory_id)]
            # (deleted meanwhile: nothing to embed)
            groups = [items[i : i + batch] for i in range(0, len(items), batch)]
            results = await asyncio.gather(
                *(embedder.embed([text for _, text in group]) for group in groups), return_exceptions=True
            )
            vectors: list[tuple[str, list[float]]] = []
            for group, result in zip(groups, results, strict=True):
                if isinstance(result, BaseException) and not isinstance(result, Exception):
                    raise result  # cancelled
                if isinstance(result, Exception) or any(len(v) != dim for v in result):
                    reason = _failure(result, dim, self.agent)
                    _log.warning("%s: knowledge: could not embed %d chunks (%s)", self.agent, len(group), reason)
                    failed += len(group)
                    failures += 1
                    continue
                failures = 0
                vectors.extend(zip((memory_id for memory_id, _ in group), result, strict=True))
            self.report.embedded += await self.store.set_knowledge_vectors(vectors)
            if time.monotonic() - last_progress >= _PROGRESS_EVERY_S:
                last_progress = time.monotonic()
                _log.info("%s: knowledge: %d of %d chunks embedded", self.agent, self.report.embedded, len(missing))
        self.report.not_embedded += failed


async def sync(runtime: AgentRuntime, config: KnowledgeConfig) -> SyncReport:
    """Bring the agent's stored knowledge (own and shared) in line with its sources; see the
    module docstring. Returns what was done (logged by the caller)."""
    started = time.monotonic()
    report = SyncReport()
    agent = runtime.character.name
    found: Scan = await asyncio.to_thread(scan, roots(runtime))
    for problem in found.problems:
        report.problems.append(problem)
        _log.warning("%s: knowledge: %s", agent, problem)
    unreadable = [str(p) for p in found.unreadable]
    facts: dict[bool, list[str]] = {True: [], False: []}
    urls: dict[bool, list[str]] = {True: [], False: []}
    for item in runtime.character.knowledge:
        if item.text is not None and item.text.strip():
            facts[item.shared].append(item.text.strip())
        elif item.url is not None:
            urls[item.shared].append(item.url)
    report.files = len(found.files)
    report.facts = len(facts[True]) + len(facts[False])
    report.pages = len(set(urls[True])) + len(set(urls[False]))
    embedder = Embedder(runtime, config) if runtime.has_model(ModelType.TEXT_EMBEDDING) else None
    contexts = Contextualizer(runtime, config.context_concurrency) if config.contextual else None

    # Everything is stored (and found by keywords) before anything is embedded, the slow part.
    own = _Pass(runtime, config, report, shared=False)
    shared = _Pass(runtime, config, report, shared=True)
    await own.run([f for f in found.files if not f.shared], facts[False], urls[False], unreadable)
    async with runtime.store.lock_shared_knowledge():
        await shared.run([f for f in found.files if f.shared], facts[True], urls[True], unreadable)
    await own.embed_missing(embedder, contexts)
    async with runtime.store.lock_shared_knowledge():
        await shared.embed_missing(embedder, contexts)
    report.contexts = contexts.calls if contexts is not None else 0
    report.fragments = (await runtime.store.count_knowledge())[1]
    report.seconds = time.monotonic() - started
    return report
