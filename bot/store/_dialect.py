"""``Dialect`` and ``Statements``: the SQL of a table written once, run by either backend.

The store's tables hold the same rows in SQLite and in PostgreSQL, and most of their SQL is the
same but for a few words: the parameter mark (``?`` or ``%s``), the column that keeps insertion
order (``rowid`` or ``seq``), how a list of ids is bound, how text sorts by code point. A shared
mixin writes its SQL once as a template naming those words in braces (``{seq}``, ``{in_list}``,
``{by_code_point}``, ``{json_set:metadata.settings}``) with ``?`` marks; :meth:`Dialect.render`
turns a template into the backend's SQL once and keeps it, so a call costs one dictionary look-up.

:class:`Statements` is the base of the shared mixins: how to read rows, run one statement, run
one statement per row, and run a unit of several statements as one transaction (a generator of
:class:`Step`, which SQLite drives on its writer's thread and PostgreSQL on the event loop).
Each backend's base class (``AgentScoped``, ``PgScoped``) implements it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeVar

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Done", "IdList", "Statements", "Step", "Unit"]

if TYPE_CHECKING:  # _rows builds on _scoped, which builds on this module
    from bot.store._rows import LogRow, Payloads, Row

T = TypeVar("T")

_WORD = re.compile(r"\{([a-z_]+)(?::([\w.]+))?\}")


@dataclass(frozen=True, slots=True)
class Step:
    """One statement of a unit: run once, or once per row of ``params`` with ``many``.

    ``raw``: ``sql`` is the backend's own SQL, run as it is with no parameters (DDL whose
    literals may hold ``?``, ``%`` or braces), not a template.
    """

    sql: str
    params: Sequence[object] = ()
    many: bool = False
    raw: bool = False


@dataclass(frozen=True, slots=True)
class Done:
    """What a step did: the rows it changed and the rows it returned (none for a write)."""

    rowcount: int
    rows: Sequence[Row]


#: A list of ids or strings as the one parameter ``{in_list}`` reads (see ``Dialect.id_list``).
IdList = Callable[[Iterable[str]], object]

#: Several statements that commit together: yields each :class:`Step`, is sent its :class:`Done`.
Unit = Generator[Step, Done, T]


def _json_list(values: Iterable[str]) -> object:
    # One JSON array bound as one parameter and read with json_each: no variable-count limits.
    return json.dumps(list(values), ensure_ascii=False)


def _list(values: Iterable[str]) -> object:
    return list(values)


def _fts_match(terms: Sequence[str]) -> object:
    # Each word quoted, ORed: quotes, -, *, AND/NOT, NEAR and parentheses never form FTS5 syntax.
    return " OR ".join(f'"{t}"' for t in terms)


# A component row as JSON: ``data`` as its JSON text, as the converter reads it.
_COMPONENT = (
    "'id', c.id, 'entity_id', c.entity_id, 'agent_id', c.agent_id, 'room_id', c.room_id, 'world_id', c.world_id, "
    "'source_entity_id', c.source_entity_id, 'type', c.type, 'created_at', c.created_at, 'data', c.data"
)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the backends in SQL the store writes once (see the module docstring)."""

    name: str
    mark: str
    #: The words a template names in braces, in the backend's own SQL (its marks included). A word
    #: with arguments gets them as ``{0}``, ``{1}`` (``{json_set:metadata.settings}``: split at the
    #: last dot) or whole as ``{0}`` (``{json_holds:m.content}``).
    words: dict[str, str]
    #: A list of ids or strings as the one parameter ``{in_list}`` (and the like) reads.
    id_list: IdList
    #: A boolean as a parameter.
    boolean: Callable[[bool], object]
    #: The words of a keyword search (``fts_terms``) as its one parameter (``{keyword_from}``, ``{keyword_match}``).
    keywords: Callable[[Sequence[str]], object]
    #: A LIMIT that keeps every row.
    no_limit: int | None
    #: Whether text may hold NUL characters (PostgreSQL's cannot: no stored text has one).
    text_holds_nul: bool
    #: Whether a forget zeroes the pages it frees (SQLite's ``secure_delete``), and the statements
    #: that end it (SQLite rebuilds its keyword index: deleted words must not survive in old segments).
    secure_delete: bool
    after_forget: tuple[str, ...]
    #: Whether each entity keeps its names casefolded in a column of their own: PostgreSQL's
    #: SQL cannot casefold as Python does, where SQLite calls Python's (``casefold``).
    folded_names: bool
    _rendered: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def render(self, template: str) -> str:
        """The backend's SQL for ``template`` (built once, then kept)."""
        sql = self._rendered.get(template)
        if sql is None:
            sql = template if self.mark == "?" else template.replace("%", "%%").replace("?", self.mark)
            sql = _WORD.sub(self._word, sql)
            self._rendered[template] = sql
        return sql

    def _word(self, match: re.Match[str]) -> str:
        word, arguments = match.groups()
        text = self.words[word]
        if not arguments:
            return text
        return text.format(*arguments.rsplit(".", 1)) if "{1}" in text else text.format(arguments)


SQLITE = Dialect(
    name="sqlite",
    mark="?",
    words={
        "seq": "rowid",
        "in_list": "IN (SELECT value FROM json_each(?))",
        "not_in_list": "NOT IN (SELECT value FROM json_each(?))",
        # A JSON object's field as text; the JSON text holds the parameter.
        "json_text": "json_extract({0}, '$.{1}')",
        "json_holds": "instr({0}, ?) > 0",
        # The memory m is about the entity bound: summaries and facts list who in metadata.entityIds.
        "about": "EXISTS (SELECT 1 FROM json_each(m.metadata, '$.entityIds') a WHERE a.value = ?)",
        "by_code_point": "",
        "for_update": "",
        # "+": look ids up in the primary key rather than scan all the agent's rows.
        "scan_agent": "+",
        "json": "",
        # A new memory's id is never stored already: the writer checked, and is the only one.
        "keep_stored": "",
        "lock_memory": "",
        "is": "IS",
        "json_set": "json_extract({0}, '$.{1}') IS NOT NULL",
        # The JSON array in the column has any, or all, of the strings of one parameter.
        "has_any": "EXISTS (SELECT 1 FROM json_each({0}) t WHERE t.value IN (SELECT value FROM json_each(?)))",
        "has_all": "NOT EXISTS (SELECT 1 FROM json_each(?) w WHERE w.value NOT IN (SELECT value FROM json_each({0})))",
        # The database's clock in ms: one machine, its own clock.
        "clock": "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
        "entity_names": "names",
        "entity_name_marks": "?",
        "set_entity_names": "names = ?",
        # An entity (as e) has a name containing the (casefolded) parameter.
        "name_contains": "EXISTS (SELECT 1 FROM json_each(e.names) n WHERE instr(casefold(n.value), ?) > 0)",
        # The components of an entity (as e), oldest first, as a JSON array of rows.
        "components": "(SELECT json_group_array(json_object(" + _COMPONENT + ") ORDER BY c.created_at, c.rowid) "
        "FROM components c WHERE c.agent_id = e.agent_id AND c.entity_id = e.id)",
        # Keyword search: FTS5 and its BM25 relevance (higher is better as ``score``).
        "keyword_from": "memories_fts JOIN memories m ON m.seq = memories_fts.rowid",
        "keyword_match": "memories_fts MATCH ?",
        "keyword_score": "-bm25(memories_fts)",
        "keyword_order": "bm25(memories_fts)",
    },
    id_list=_json_list,
    boolean=int,
    keywords=_fts_match,
    no_limit=-1,
    text_holds_nul=True,
    secure_delete=True,
    after_forget=("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')",),
    folded_names=False,
)

POSTGRES = Dialect(
    name="postgres",
    mark="%s",
    words={
        "seq": "seq",
        "in_list": "= ANY(%s)",
        "not_in_list": "<> ALL(%s)",
        "json_text": "{0}->>'{1}'",
        "json_holds": "strpos({0}::text, %s) > 0",
        "about": "m.metadata->'entityIds' @> jsonb_build_array(%s::text)",
        # Text by code point, as SQLite orders it, whatever the database's locale.
        "by_code_point": ' COLLATE "C"',
        # Two daemons changing the same row take turns, losing neither's change.
        "for_update": " FOR UPDATE",
        "scan_agent": "",
        "json": "::jsonb",
        # A memory another daemon wrote first (the same message id) keeps its row and vector.
        "keep_stored": " ON CONFLICT (id) DO NOTHING",
        # Held until the commit: a memory another daemon is deleting is waited for.
        "lock_memory": " FOR NO KEY UPDATE",
        "is": "IS NOT DISTINCT FROM",
        # A JSON null is no value, as SQLite's json_extract(...) IS NOT NULL has it.
        "json_set": "jsonb_typeof({0} -> '{1}') <> 'null'",
        "has_any": "{0} ?| %s",
        "has_all": "{0} @> %s::jsonb",
        # The database's clock, which every daemon sharing it reads times by.
        "clock": "(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
        "entity_names": "names, folded_names",
        "entity_name_marks": "%s, %s",
        "set_entity_names": "names = %s, folded_names = %s",
        # strpos compares code points: the same match as SQLite's instr, whatever the locale.
        "name_contains": "EXISTS (SELECT 1 FROM unnest(e.folded_names) n WHERE strpos(n, %s) > 0)",
        "components": "(SELECT json_agg(json_build_object(" + _COMPONENT + "::text) ORDER BY c.created_at, c.seq) "
        "FROM components c WHERE c.agent_id = e.agent_id AND c.entity_id = e.id)",
        # Keyword search: the words folded as the stored text is (``troupe_search_text``), each
        # one quoted tsquery operand, ORed ("_" folds to nothing and matches nothing); ts_rank.
        "keyword_from": "memories m, (SELECT to_tsquery('troupe_text', (SELECT string_agg("
        "quote_literal(troupe_search_text(w)), ' | ') FROM unnest(%s::text[]) w)) AS q) q",
        "keyword_match": "m.text_search @@ q.q",
        "keyword_score": "ts_rank(m.text_search, q.q)",
        "keyword_order": "score DESC",
    },
    id_list=_list,
    boolean=bool,
    keywords=list,
    no_limit=None,
    text_holds_nul=False,
    secure_delete=False,
    after_forget=(),
    folded_names=True,
)


class Statements:
    """The base of the mixins shared by both backends: what they ask of the database.

    Every SQL string given to these methods is a template (see :meth:`Dialect.render`).
    ``tables``: all a write may change, cascades included (None: anything), for SQLite's shared
    reads (see ``Database.write``); PostgreSQL does not share reads and ignores it.
    """

    __slots__ = ()

    dialect: ClassVar[Dialect]

    if TYPE_CHECKING:
        _agent_id: str

        @property
        def _payloads(self) -> Payloads: ...

        def _fail(self, what: str, exc: Exception) -> bool: ...

    async def _rows(self, sql: str, params: Sequence[object] = ()) -> Sequence[Row]:
        raise NotImplementedError

    async def _row(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        rows = await self._rows(sql, params)
        return rows[0] if rows else None

    async def _shared_rows(self, sql: str, params: Sequence[object], *, tables: Collection[str]) -> Sequence[Row]:
        """Like :meth:`_rows`, but shared inside a unit of work (``Store.shared_reads``)."""
        raise NotImplementedError

    async def _run(self, sql: str, params: Sequence[object], *, tables: Collection[str] | None) -> int:
        """Run one statement as a write transaction of its own; returns its rowcount."""
        raise NotImplementedError

    async def _run_many(self, sql: str, rows: Sequence[Sequence[object]], *, tables: Collection[str]) -> None:
        """Run ``sql`` once per row as one write transaction (all rows or none)."""
        raise NotImplementedError

    async def _snapshot(self, unit: Callable[[], Unit[T]]) -> T:
        """Run the read-only statements ``unit()`` yields on one snapshot of the database (on
        SQLite in one trip to the reader's thread, where the generator runs); returns what it returns."""
        raise NotImplementedError

    async def _write(self, unit: Callable[[], Unit[T]], *, tables: Collection[str] | None) -> T:
        """Run the statements ``unit()`` yields as one write transaction; returns what it returns.

        On SQLite the generator runs on the writer's thread: keep it to SQL and light Python.
        """
        raise NotImplementedError

    def _after_agent_deleted(self) -> None:
        """What the database forgets of an agent once its rows are gone."""

    def _queue_log(self, row: LogRow) -> None:
        """Hand a log row to the database's background writer."""
        raise NotImplementedError

    async def _flush_logs(self) -> None:
        """Return once every log row queued so far is written."""
        raise NotImplementedError
