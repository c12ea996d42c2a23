"""Hybrid retrieval: vector search and keyword search, fused and reranked, within a token budget.

1. **Candidates.** With a query vector, the ``candidates`` fragments (own and shared) nearest
   to it with cosine similarity of at least ``min_similarity``; and, always, the ``candidates``
   best BM25 matches (FTS5) of the query's content words ("what", "the", "is" … left out, so
   a match means a shared topic word, not a shared article).
2. **Fusion.** Reciprocal rank fusion: each list gives a candidate ``1 / (60 + rank)``, so a
   fragment both searches rank well beats one only one of them likes, with no need to put
   cosine and BM25 on one scale.
3. **Rerank.** A vote from the text itself: the share of the query's content words (crudely
   stemmed) the fragment contains, each word weighted by how rare it is among the candidates
   (a name found in three of them counts for more than "founded" found in thirty), worth up to
   two first places. It lifts exact matches of names and numbers that embeddings blur, and
   sinks vector hits that share no telling word with the question. A file whose name holds
   query words gets up to one first place more: a document named for the subject is about it.
4. **Selection.** Best first, identical texts once (own and shared copies), at most
   ``max_fragments``, as many as fit in ``max_tokens``.

Without an embedding model (or when the vector search fails) step 1 is the keyword search
alone: knowledge still works, by words.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import Memory

from ._config import KnowledgeConfig
from ._text import estimate_tokens, query_terms, stem

if TYPE_CHECKING:
    from bot.sdk import Store

__all__ = ["Hit", "rank", "search"]

_log = logging.getLogger("plugins.knowledge")

_RRF_K = 60
# The text's own vote (step 3) is worth up to two first places: as much as both searches ranking
# a fragment first, so a fragment holding the question's telling words can overtake one a single
# search likes.
_COVERAGE_WEIGHT = 2.0
_WORD = re.compile(r"\w+")


@dataclass(slots=True)
class Hit:
    """One fragment found for a query, with how it was found."""

    memory: Memory
    score: float
    similarity: float | None = None
    """Cosine similarity to the query vector, when the vector search found it."""
    keyword_rank: int | None = None
    vector_rank: int | None = None
    coverage: float = 0.0
    tokens: int = 0

    @property
    def text(self) -> str:
        return self.memory.content.text or ""


def _words(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text)}


def rank(
    vector_hits: Sequence[Memory], keyword_hits: Sequence[Memory], terms: Sequence[str], config: KnowledgeConfig
) -> list[Hit]:
    """Fuse two ranked lists of fragments, rerank them and keep what fits (module docstring)."""
    hits: dict[str, Hit] = {}
    for position, memory in enumerate(vector_hits, start=1):
        key = memory.id or memory.content.text or ""
        hit = hits.setdefault(key, Hit(memory, 0.0))
        hit.vector_rank, hit.similarity = position, memory.similarity
        hit.score += 1 / (_RRF_K + position)
    for position, memory in enumerate(keyword_hits, start=1):
        key = memory.id or memory.content.text or ""
        hit = hits.setdefault(key, Hit(memory, 0.0))
        hit.keyword_rank = position
        hit.score += 1 / (_RRF_K + position)
    stems = {stem(t) for t in terms}
    words = {key: _words(hit.text) for key, hit in hits.items()}
    # Rarer among the candidates means more telling: a place's name beats "founded".
    weights = {t: math.log(1 + len(hits) / (1 + sum(t in w for w in words.values()))) for t in stems}
    total = sum(weights.values())
    for key, hit in hits.items():
        if total:
            hit.coverage = sum(weights[t] for t in stems if t in words[key]) / total
        hit.score += _COVERAGE_WEIGHT * hit.coverage / (_RRF_K + 1)
        if stems and hit.memory.metadata.source == "file":
            # A document named for what is asked about is about it, more than a passing mention.
            title = _words(hit.memory.metadata.title or "")
            hit.score += len(stems & title) / len(stems) / (_RRF_K + 1)
    chosen: list[Hit] = []
    seen: set[str] = set()
    budget = config.max_tokens
    for hit in sorted(hits.values(), key=lambda h: -h.score):
        text = " ".join(hit.text.split())
        if not text or text in seen:
            continue
        hit.tokens = estimate_tokens(hit.text) + 1
        if hit.tokens > budget:
            continue  # a smaller one further down may still fit
        seen.add(text)
        chosen.append(hit)
        budget -= hit.tokens
        if len(chosen) == config.max_fragments:
            break
    return chosen


async def search(
    store: Store, config: KnowledgeConfig, query: str, vector: Sequence[float] | None = None, *, agent: str = ""
) -> list[Hit]:
    """The fragments that best answer ``query`` (and its ``vector``, if any), best first."""
    terms = query_terms(query)
    if not terms:
        return []
    vector_hits: list[Memory] = []
    if vector:
        try:
            vector_hits = await store.search_knowledge(
                vector, count=config.candidates, match_threshold=config.min_similarity
            )
        except ValueError as exc:  # a vector of a length the store has no column for
            _log.warning("%s: knowledge: vector search failed (%s); searching by keywords", agent, exc)
    keyword_hits = await store.search_knowledge_by_text(" ".join(terms), count=config.candidates)
    return rank(vector_hits, keyword_hits, terms, config)
