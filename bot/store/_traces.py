"""Message traces: how each message a character heard ended, and why. Both backends.

One row per (agent, message), written once when the message's handling ends; a later delivery
of the same message (a duplicate) keeps the first trace, a retry that ran again replaces it.
Listed newest first by message, room, person or outcome (a page at a time), and bounded by retention (``prune_traces``).
"""

from __future__ import annotations

from bot.kernel.errors import StoreError
from bot.kernel.messages import Status
from bot.kernel.traces import MessageTrace, TraceQuery
from bot.store._dialect import Statements
from bot.store._rows import Row, dumps, loads
from bot.store._scoped import validate_count

__all__ = ["TracesMixin"]

_TRACES = ("message_traces",)

_INSERT = (
    "INSERT INTO message_traces (agent_id, message_id, room_id, entity_id, status, created_at, body) "
    "VALUES (?, ?, ?, ?, ?, ?, ?{json}) ON CONFLICT (agent_id, message_id) "
)
# A duplicate delivery says nothing new about how the message ended: the first trace stays.
_KEEP = _INSERT + "DO NOTHING"
_REPLACE = (
    _INSERT + "DO UPDATE SET room_id = excluded.room_id, entity_id = excluded.entity_id, "
    "status = excluded.status, created_at = excluded.created_at, body = excluded.body"
)


class TracesMixin(Statements):
    """The ``message_traces`` table."""

    __slots__ = ()

    async def record_trace(self, trace: MessageTrace) -> bool:
        """Keep ``trace`` (this agent's); False when it could not be written (its room or person
        is not stored, or the database failed): a trace is never worth failing a message for."""
        if trace.agent_id != self._agent_id:
            raise ValueError(f"a trace of agent {trace.agent_id} cannot be recorded by agent {self._agent_id}")
        sql = _KEEP if trace.status is Status.DUPLICATE else _REPLACE
        row = (
            trace.agent_id,
            trace.message_id,
            trace.room_id,
            trace.entity_id,
            trace.status.value,
            trace.ended_at,
            dumps(trace.body()),
        )
        try:
            await self._run(sql, row, tables=_TRACES)
        except StoreError as exc:
            return self._fail("record_trace", exc)
        return True

    async def get_trace(self, message_id: str) -> MessageTrace | None:
        """This agent's trace of ``message_id``, if it keeps one."""
        row = await self._row(
            "SELECT * FROM message_traces WHERE agent_id = ? AND message_id = ?", (self._agent_id, message_id)
        )
        return None if row is None else _trace(row)

    async def get_traces(
        self,
        *,
        room_id: str | None = None,
        entity_id: str | None = None,
        status: Status | None = None,
        limit: int = 20,
    ) -> list[MessageTrace]:
        """This agent's traces, newest first, optionally of one room, one person or one outcome."""
        query = TraceQuery(
            room_ids=None if room_id is None else (room_id,),
            entity_ids=None if entity_id is None else (entity_id,),
            statuses=None if status is None else (status,),
        )
        return await self.find_traces(query, limit=limit)

    async def find_traces(self, query: TraceQuery, *, limit: int = 20) -> list[MessageTrace]:
        """This agent's traces that ``query`` wants, newest first (by when their handling ended)."""
        validate_count(limit, "limit")
        if query.matches_nothing():
            return []
        clauses = ["agent_id = ?"]
        params: list[object] = [self._agent_id]
        for column, values in (
            ("message_id", query.message_ids),
            ("room_id", query.room_ids),
            ("entity_id", query.entity_ids),
            ("status", None if query.statuses is None else tuple(s.value for s in query.statuses)),
        ):
            if values is not None:
                clauses.append(f"{column} {{in_list}}")  # column is one of the four above
                params.append(self.dialect.id_list(values))
        if query.before is not None:
            ended_at, message_id = query.before
            # By code point, as the listing is ordered (and as Python compares): pages never overlap.
            clauses.append("(created_at < ? OR (created_at = ? AND message_id{by_code_point} < ?))")
            params += [ended_at, ended_at, message_id]
        rows = await self._rows(
            f"SELECT * FROM message_traces WHERE {' AND '.join(clauses)} "
            "ORDER BY created_at DESC, message_id{by_code_point} DESC LIMIT ?",
            (*params, limit),
        )
        return [_trace(r) for r in rows]

    async def prune_traces(self, before: int) -> int:
        """Delete this agent's traces of messages whose handling ended before ``before`` (ms); how many went."""
        return await self._run(
            "DELETE FROM message_traces WHERE agent_id = ? AND created_at < ?",
            (self._agent_id, before),
            tables=_TRACES,
        )


def _trace(row: Row) -> MessageTrace:
    return MessageTrace.of_row(
        message_id=row["message_id"],
        agent_id=row["agent_id"],
        room_id=row["room_id"],
        entity_id=row["entity_id"],
        status=row["status"],
        ended_at=row["created_at"],
        body=loads(row["body"], {}),
    )
