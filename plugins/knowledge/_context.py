"""Contextual embeddings (``CTX_KNOWLEDGE_ENABLED``): each fragment is embedded together with a
sentence or two, written by the small model, that situate it in its document.

A fragment alone often lacks what it is about ("It was raised to 3% in June" — what was?); the
context names it ("From Acme's 2024 pricing page, about the card fee: …"), so a question in the
document's words finds the fragment. This is Anthropic's "contextual retrieval": the model sees the
document (cut to :data:`DOCUMENT_TOKENS`) and the fragment, and the text embedded is
``context + "\\n\\n" + fragment``. The fragment is stored, searched by keywords and shown as before;
only its vector changes.

Cost: one TEXT_SMALL call per fragment, each carrying the document (or its first part and the
part before the fragment), at most ``CTX_KNOWLEDGE_CONCURRENCY`` at once. The document comes first
in the prompt, the same for each of its fragments, so providers that cache prompt prefixes
(OpenAI does so by itself) charge most of it once. Only fragments without a vector are embedded,
so an unchanged document costs no call on a later sync; each context is also cached (the agent's
``cache``, by fragment id, which follows from the document's bytes and chunking) so embedding a
fragment again (another embedding model, a sync cut short) does not ask again.

A fragment whose context the model does not give (an error, a timeout, an empty answer) is
embedded alone, as without the setting; that is logged once per document. After
:data:`_MAX_FAILURES` failures in a row no more contexts are asked for in that sync.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import ModelType, now_ms, reason_for

from ._text import estimate_tokens

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, KnowledgeFragment

__all__ = [
    "CONTEXT_TOKENS",
    "DOCUMENT_TOKENS",
    "Contextualizer",
    "context_prompt",
    "contextual_text",
    "document_excerpt",
]

_log = logging.getLogger("plugins.knowledge")

#: The most of a document (in estimated tokens) the model is shown for one fragment's context.
DOCUMENT_TOKENS = 4000
#: The longest context asked for.
CONTEXT_TOKENS = 150
# Part of the cache key: a new prompt asks again.
_PROMPT_VERSION = "1"
_CACHE_MS = 90 * 24 * 3600 * 1000
_MAX_FAILURES = 5
_GAP = "\n\n[…]\n\n"
# Documents longer than this (characters) are made again from their fragments in a worker thread.
_BUILD_INLINE = 50_000


#: What only a copy of the prompt holds (a weak model echoing it back instead of answering).
_ECHOES = ("<document>", "</document>", "<chunk>", "</chunk>", "```")


def contextual_text(context: str, fragment: str) -> str:
    """What is embedded for ``fragment`` given its ``context`` (none: the fragment alone)."""
    return f"{context}\n\n{fragment}" if context else fragment


def _heading(fragments: Sequence[str]) -> str:
    """The ``[title]`` line every fragment of a file or page starts with, or ""."""
    first = fragments[0].split("\n", 1)[0] if fragments else ""
    if first.startswith("[") and first.endswith("]") and all(f.startswith(first + "\n") for f in fragments):
        return first + "\n"
    return ""


def _without_overlap(before: str, after: str) -> str:
    """``after`` less what it repeats of the end of ``before`` (chunks overlap by whole sentences)."""
    probe = after[:4]
    if not probe:
        return after
    start = before.find(probe)
    while start != -1:
        tail = before[start:]
        if after.startswith(tail):
            return after[len(tail) :].lstrip()
        start = before.find(probe, start + 1)
    return after


@dataclass(frozen=True, slots=True)
class _Document:
    """A document made again of its fragments: their common heading, and each one's text less
    the heading and what it repeats of the one before, with its estimated tokens."""

    heading: str
    parts: list[str]
    sizes: list[int]

    @classmethod
    def of(cls, fragments: Sequence[str]) -> _Document:
        heading = _heading(fragments)
        bodies = [f[len(heading) :] for f in fragments]
        parts = bodies[:1] + [_without_overlap(bodies[i - 1], bodies[i]) for i in range(1, len(bodies))]
        return cls(heading, parts, [estimate_tokens(p) for p in parts])

    def excerpt(self, position: int, budget: int) -> str:
        parts, sizes = self.parts, self.sizes
        if sum(sizes) <= budget:
            return self.heading + "\n\n".join(parts)
        half = budget // 2
        head: list[int] = []
        used = 0
        for i, size in enumerate(sizes):
            if head and used + size > half:
                break
            head.append(i)
            used += size
        near: list[int] = []
        used = 0
        for i in range(min(position, len(parts) - 1), head[-1], -1):
            if near and used + sizes[i] > half:
                break
            near.insert(0, i)
            used += sizes[i]
        first = "\n\n".join(parts[i] for i in head)
        if not near:
            return self.heading + first
        gap = "\n\n" if near[0] == head[-1] + 1 else _GAP
        return self.heading + first + gap + "\n\n".join(parts[i] for i in near)


def document_excerpt(fragments: Sequence[str], position: int, budget: int = DOCUMENT_TOKENS) -> str:
    """The document made of ``fragments`` (in order), as the model is shown it for the context of
    fragment ``position``: the whole document when it fits in ``budget`` tokens, else its
    beginning and the part leading up to the fragment, about half of it each. Pure."""
    return _Document.of(fragments).excerpt(position, budget)


def context_prompt(document: str, fragment: str) -> str:
    """The prompt asking for ``fragment``'s context in ``document`` (the document first: the same
    prefix for every fragment of it, which providers cache)."""
    return (
        f"<document>\n{document}\n</document>\n\n"
        f"Here is a chunk of the document above:\n<chunk>\n{fragment}\n</chunk>\n\n"
        "Write one or two short sentences that situate this chunk within the overall document, to "
        "improve search retrieval of the chunk: what the document is, and what the chunk is about in "
        "it (name the subject the chunk leaves implicit). Answer only with those sentences."
    )


class Contextualizer:
    """Writes (or finds cached) the context of fragments for one sync of one agent."""

    def __init__(self, runtime: AgentRuntime, concurrency: int) -> None:
        self.runtime = runtime
        self.calls = 0
        """Contexts asked of the model in this sync (for the sync's report)."""
        self._slots = asyncio.Semaphore(concurrency)
        self._failures = 0  # in a row
        self._given_up = False
        self._logged: set[str] = set()  # documents whose failure was logged

    async def texts(self, wanted: Sequence[str], documents: Sequence[KnowledgeFragment]) -> dict[str, str]:
        """What to embed for each of ``wanted`` (fragment ids) found in ``documents`` (every
        fragment of their documents, as the store gives them): the fragment with its context, or
        alone where the model gave none."""
        if not self._given_up and not self.runtime.has_model(ModelType.TEXT_SMALL):
            self._given_up = True
            _log.warning(
                "%s: knowledge: CTX_KNOWLEDGE_ENABLED, but there is no small text model to write contexts; "
                "chunks are embedded alone",
                self.runtime.character.name,
            )
        by_document: dict[str, list[KnowledgeFragment]] = {}
        for fragment in documents:
            by_document.setdefault(fragment.document_id, []).append(fragment)
        made = {}
        for document_id, fragments in by_document.items():
            texts = [f.text for f in fragments]
            long = sum(map(len, texts)) > _BUILD_INLINE  # CPU-bound: not on the event loop
            made[document_id] = await asyncio.to_thread(_Document.of, texts) if long else _Document.of(texts)
        found = {f.id: f for f in documents}
        asked = [found[i] for i in wanted if i in found]
        contexts = await asyncio.gather(*(self._context(f, made[f.document_id]) for f in asked))
        return {f.id: contextual_text(c, f.text) for f, c in zip(asked, contexts, strict=True)}

    async def _context(self, fragment: KnowledgeFragment, document: _Document) -> str:
        key = f"knowledge-context:{_PROMPT_VERSION}:{fragment.id}"
        cached = await self.runtime.store.get_cache(key)
        if isinstance(cached, str):
            return cached
        if self._given_up:
            return ""
        excerpt = document.excerpt(fragment.position, DOCUMENT_TOKENS)
        prompt = context_prompt(excerpt, fragment.text[len(document.heading) :])
        async with self._slots:
            if self._given_up:
                return ""
            try:
                self.calls += 1
                answer = await self.runtime.use_model(
                    ModelType.TEXT_SMALL, {"prompt": prompt, "max_tokens": CONTEXT_TOKENS}
                )
                # One line, and no longer than asked even from a model that ignores max_tokens.
                context = " ".join(str(answer or "").split())[: CONTEXT_TOKENS * 6]
                if not context:
                    raise ValueError("the model's answer was empty")
                if any(mark in context for mark in _ECHOES):
                    # A small model copying the prompt back: that is no context, and it would
                    # add the document's start to the chunk's vector.
                    raise ValueError("the model's answer repeated the prompt")
            except Exception as exc:  # noqa: BLE001 - any failure leaves the fragment alone, as without the setting
                self._failed(fragment.document_id, document.heading.strip()[1:-1] or "a fact", exc)
                return ""
        self._failures = 0
        await self.runtime.store.set_cache(key, context, expires_at=now_ms() + _CACHE_MS)
        return context

    def _failed(self, document_id: str, title: str, exc: Exception) -> None:
        agent = self.runtime.character.name
        self._failures += 1
        if document_id not in self._logged:
            self._logged.add(document_id)
            _log.warning(
                "%s: knowledge: no context for a chunk of %r (%s); its chunks without one are embedded alone",
                agent,
                title,
                reason_for(exc, agent),
            )
        if self._failures >= _MAX_FAILURES and not self._given_up:
            self._given_up = True
            _log.warning(
                "%s: knowledge: %d contexts failed in a row; the rest of this sync embeds chunks alone",
                agent,
                self._failures,
            )
