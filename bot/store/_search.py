"""Searching memories and knowledge, both backends: by vector and by keywords.

Keyword search is written once behind the dialect (FTS5 and BM25 on SQLite, a ``tsvector`` and
``ts_rank`` on PostgreSQL); where vectors live and how the nearest are found is each backend's
(``_sqlite_search``, ``postgres/_search``), behind the hooks below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.kernel.types import Memory
from bot.store._connect import search_text
from bot.store._dialect import SQLITE
from bot.store._inspection import listing_filter
from bot.store._knowledge import FRAGMENTS, KnowledgeScopes
from bot.store._memories import MEMORY_COLUMNS, MemoriesMixin, MemoryFilter
from bot.store._rows import row_to_memory
from bot.store._scoped import validate_count
from bot.store._vectors import check_dimension

__all__ = ["DEFAULT_SEARCH_COUNT", "SearchMixin", "fts_query", "fts_terms", "keyword_sql"]

#: Default number of search results.
DEFAULT_SEARCH_COUNT = 10
# Keyword queries keep at most this many distinct words; longer texts add noise, not recall.
_MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+")


def fts_terms(text: str) -> list[str]:
    """The words a keyword search looks for in user text: runs of word characters, lowercased
    and without accents as the index holds them (``troupe_search_text``), each once, at most 32.
    Nothing else survives, so no query syntax can."""
    folded = str(search_text(text))
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(folded)))[:_MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for user text: its words (:func:`fts_terms`), each quoted, joined with OR.

    Quotes, ``-``, ``*``, ``AND``/``NOT`` (quoted, they are plain words), ``NEAR`` and parentheses
    in user text can never form FTS5 syntax. None if no words.
    """
    terms = fts_terms(text)
    return str(SQLITE.keywords(terms)) if terms else None


def keyword_sql(columns: str, where: str, order: str) -> str:
    """A keyword search's template: ``columns`` and ``score`` of the best rows passing ``where``."""
    # The keyword parameter comes first (FROM on PostgreSQL, WHERE on SQLite), the count last.
    return (
        f"SELECT {columns}, {{keyword_score}} AS score FROM {{keyword_from}} "
        f"WHERE {{keyword_match}} AND {where} ORDER BY {{keyword_order}}, {order} LIMIT ?"
    )


class SearchMixin(KnowledgeScopes, MemoriesMixin):
    """Vector and keyword search over this agent's memories and knowledge fragments."""

    __slots__ = ()

    # -- hooks: where the vectors live -------------------------------------------------------------

    async def _vector_search(
        self, table: str, query: object, dim: int, where: MemoryFilter, count: int, threshold: float | None
    ) -> list[Memory]:
        """The best ``count`` memories passing ``where`` nearest to ``query`` (as :meth:`_vector`
        made it), with ``similarity`` and ``embedding`` set, those below ``threshold`` left out."""
        raise NotImplementedError

    async def _nearest_fragments(
        self, embedding: Sequence[float], dim: int, count: int, threshold: float | None
    ) -> list[Memory]:
        """The best ``count`` knowledge fragments (own and shared) by their vector of ``dim``."""
        raise NotImplementedError

    def _without_vector(self, dim: int) -> tuple[str, str, Sequence[object]]:
        """For ``memories m LEFT JOIN embeddings e ON e.memory_id = m.id``: what more the join
        needs, the condition that ``m`` has no vector of ``dim``, and the join's parameters."""
        raise NotImplementedError

    async def _keyword_search(
        self, terms: Sequence[str], where: str, params: Sequence[object], order: str, count: int
    ) -> list[Memory]:
        """The best ``count`` memories passing ``where`` matching ``terms``, best rank first, then
        by ``order``, with the relevance in ``similarity`` and no embedding."""
        rows = await self._rows(
            keyword_sql(MEMORY_COLUMNS, where, order), (self.dialect.keywords(terms), *params, count)
        )
        return [row_to_memory(r, self._payloads, similarity=float(r["score"])) for r in rows]

    # -- memories ----------------------------------------------------------------------------------

    def _search_filter(
        self, table: str, unique: bool | None, room_id: str | None, world_id: str | None, entity_id: str | None
    ) -> MemoryFilter:
        return self.memory_filter(self._agent_id, table).fields(room_id, world_id, entity_id).unique(unique)

    async def search_memories(
        self,
        embedding: Sequence[float],
        table: str,
        *,
        match_threshold: float | None = None,
        count: int = DEFAULT_SEARCH_COUNT,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]:
        """This agent's memories of ``table`` most similar to ``embedding``, best first, with
        ``similarity`` (cosine, -1..1) and ``embedding`` set; ``count`` of them when ``count`` pass
        the filters. Exact on SQLite; on PostgreSQL from the agent's HNSW index for the table when
        it has one (see ``postgres/_search``).

        ``match_threshold`` of 0 or None means none. Memories without a vector in the active
        dimension are never returned. Raises EmbeddingDimensionError for a wrong-length query.
        """
        validate_count(count)
        where = self._search_filter(table, unique, room_id, world_id, entity_id)
        dim = await self.get_embedding_dimension()
        return await self._vector_search(table, self._vector(embedding, dim), dim, where, count, match_threshold)

    async def search_memories_by_text(
        self,
        query: str,
        table: str,
        *,
        count: int = DEFAULT_SEARCH_COUNT,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]:
        """This agent's memories of ``table`` whose ``content.text`` matches words of ``query``,
        best rank first (any word matches; more words rank higher, and on SQLite's BM25 rarer ones).

        ``similarity`` carries the relevance (higher is better, not a cosine); embeddings are not
        loaded. User text is never parsed as query syntax, so it cannot raise; a query without
        words returns [].
        """
        validate_count(count)
        terms = fts_terms(query)
        if not terms or count == 0:
            return []
        where = self._search_filter(table, unique, room_id, world_id, entity_id)
        return await self._keyword_search(terms, where.where, where.params, "m.created_at DESC, m.seq DESC", count)

    async def search_all_memories_by_text(
        self,
        query: str,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int = 10,
    ) -> list[Memory]:
        """Like :meth:`search_memories_by_text` across several memory tables (all when None).

        ``entity_id`` keeps memories the entity wrote or that are about it. Best match first,
        with the relevance in ``similarity``; a query without words returns [].
        """
        validate_count(count)
        terms = fts_terms(query)
        if not terms or count == 0:
            return []
        clauses, params = listing_filter(self._agent_id, self.dialect.id_list, tables, room_id, entity_id)
        # One query on both backends, whatever a backend does for one table's search.
        where = " AND ".join(clauses)
        return await SearchMixin._keyword_search(self, terms, where, params, "m.created_at DESC, m.seq DESC", count)

    # -- knowledge ---------------------------------------------------------------------------------

    async def knowledge_fragments_without_vectors(
        self, dim: int, *, shared: bool = False, limit: int | None = None
    ) -> list[str]:
        """Ids of the fragments of this agent's scope (or the shared one) with no vector of length
        ``dim``, in the order they were stored (at most ``limit``). One pass over the scope's
        fragments: fetch the texts with :meth:`get_knowledge_texts` a batch at a time."""
        check_dimension(dim)
        validate_count(limit, "limit")
        on, absent, params = self._without_vector(dim)
        rows = await self._rows(
            f"SELECT m.id FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id{on} "
            f"WHERE m.agent_id = ? AND m.type = ? AND {absent} ORDER BY m.seq LIMIT ?",
            (*params, self._scope(shared), FRAGMENTS, self.dialect.no_limit if limit is None else limit),
        )
        return [r["id"] for r in rows]

    async def search_knowledge(
        self, embedding: Sequence[float], *, count: int = 20, match_threshold: float | None = None
    ) -> list[Memory]:
        """Fragments (own and shared) nearest to ``embedding``, best first, with ``similarity``
        (cosine) set; those below ``match_threshold`` left out. Exact, among the vectors of the
        query's length. Raises ValueError for a query of an unsupported length.
        """
        validate_count(count)
        dim = len(embedding)
        check_dimension(dim)
        if count == 0:
            return []
        return await self._nearest_fragments(embedding, dim, count, match_threshold)

    async def search_knowledge_by_text(self, query: str, *, count: int = 20) -> list[Memory]:
        """Fragments (own and shared) matching words of ``query``, best rank first, with
        ``similarity`` set to the relevance (higher is better). User text is never query syntax."""
        validate_count(count)
        terms = fts_terms(query)
        if not terms or count == 0:
            return []
        return await self._keyword_search(
            terms, "m.agent_id IN (?, ?) AND m.type = ?", (*self.knowledge_scopes, FRAGMENTS), "m.seq", count
        )
