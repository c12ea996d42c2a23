"""Exactly once on PostgreSQL: claims of platform messages and the inbox (SQLite's:
bot/store/_handling.py, whose docstrings give the contract).

Several daemons may share the database, so claims of the same message cannot interleave: the
first delivery's row is inserted with ``ON CONFLICT DO NOTHING`` in one statement (of two
daemons inserting at once, one inserts and the other waits for it, then finds the row), and a
row that exists is read ``FOR UPDATE`` and changed in one transaction, so claims of it take
turns and each sees the one before it. The outcomes are those of the claims made one
after the other: one ``NEW``, never two.

As on SQLite, a row is not a lock: a later claim of a message still ``HANDLING`` is a ``RETRY``
(its claimant is taken to have died). That a live daemon is not taken up behind its back is
placement's part: only the holder of a character's lease receives and claims its messages,
and a daemon that lost its lease sends nothing (a claim it left is then rightly retried once).
"""

from __future__ import annotations

from bot.store._claims import ANONYMOUS, CLOSED_AS, EXPIRABLE, RELEASABLE, marks, orphaned, same_claimant
from bot.store._values import MessageHandling
from bot.store.postgres._schema import NOW_MS
from bot.store.postgres._scoped import PgScoped
from bot.types import Claim, Handling

__all__ = ["CLAIMANT", "PgHandlingMixin"]

#: Migration 7: who holds each claim (every change of a claim is conditional on it, see
#: bot/store/_claims.py). Claims from before: nobody's.
CLAIMANT = "ALTER TABLE message_handling ADD COLUMN claimant text NOT NULL DEFAULT '';"


_COLUMNS = "(agent_id, memory_id, room_id, status, attempts, created_at, updated_at, outcome, claimant)"
_STORED = "EXISTS (SELECT 1 FROM memories WHERE id = %(memory)s AND agent_id = %(agent)s)"
# A first delivery, the common case, in one statement: HANDLING, unless the message is stored
# already or claimed (no row then).
_INSERT_NEW = (
    f"INSERT INTO message_handling {_COLUMNS} "
    "SELECT %(agent)s, %(memory)s, %(room)s, %(handling)s, 1, %(created)s, " + NOW_MS + ", NULL, %(claimant)s "
    f"WHERE NOT {_STORED} ON CONFLICT (agent_id, memory_id) DO NOTHING"
)
# The same, but DONE at once when the message itself is stored (by a troupe from before claims).
_INSERT_FIRST = (
    f"INSERT INTO message_handling {_COLUMNS} "
    "SELECT %(agent)s, %(memory)s, %(room)s, CASE WHEN s.stored THEN %(done)s ELSE %(handling)s END, "
    "1, %(created)s, " + NOW_MS + ", CASE WHEN s.stored THEN 'duplicate' END, %(claimant)s "
    f"FROM (SELECT {_STORED} AS stored) s "
    "ON CONFLICT (agent_id, memory_id) DO NOTHING RETURNING status"
)


class PgHandlingMixin(PgScoped):
    """The ``message_handling`` and ``inbox`` tables."""

    __slots__ = ()

    async def claim_message(
        self, memory_id: str, room_id: str, created_at: int, *, retries: int = 1, claimant: str = ANONYMOUS
    ) -> Claim:
        """Claim the message ``memory_id`` for ``claimant``; what the caller should do with it (see
        ``AgentStore.claim_message``). Atomic across processes sharing the database."""
        agent = self._agent_id
        key = (agent, memory_id)
        params = {
            "agent": agent,
            "memory": memory_id,
            "room": room_id,
            "done": Handling.DONE.value,
            "handling": Handling.HANDLING.value,
            "created": created_at,
            "claimant": claimant,
        }
        if await self._db.execute(_INSERT_NEW, params):
            return Claim.NEW
        async with self._db.transaction() as conn:
            while True:
                cur = await conn.execute(
                    "SELECT status, attempts, claimant FROM message_handling "
                    "WHERE agent_id = %s AND memory_id = %s FOR UPDATE",
                    key,
                )
                row = await cur.fetchone()
                if row is not None:
                    break
                # No claim: the message was stored before claims existed, or its claim was pruned
                # a moment ago. Should another claim insert one first, read that one.
                cur = await conn.execute(_INSERT_FIRST, params)
                inserted = await cur.fetchone()
                if inserted is not None:
                    return Claim.DUPLICATE if inserted["status"] == Handling.DONE.value else Claim.NEW
            status, attempts = Handling(row["status"]), int(row["attempts"])
            if status is Handling.DONE:
                return Claim.DUPLICATE
            # Given back unsent, or claimed again by its own claimant: not a crash, no attempt counted.
            if status is Handling.RELEASED or (
                status is Handling.HANDLING and same_claimant(row["claimant"], claimant)
            ):
                await conn.execute(
                    f"UPDATE message_handling SET status = %s, claimant = %s, updated_at = {NOW_MS} "
                    "WHERE agent_id = %s AND memory_id = %s",
                    (Handling.HANDLING.value, claimant, *key),
                )
                return Claim.RETRY
            if status is Handling.HANDLING and attempts <= retries:
                await conn.execute(
                    f"UPDATE message_handling SET attempts = attempts + 1, claimant = %s, updated_at = {NOW_MS} "
                    "WHERE agent_id = %s AND memory_id = %s",
                    (claimant, *key),
                )
                return Claim.RETRY
            claim = Claim.SENT if status is Handling.SENDING else Claim.ABANDONED
            await conn.execute(
                f"UPDATE message_handling SET status = %s, outcome = %s, updated_at = {NOW_MS} "
                "WHERE agent_id = %s AND memory_id = %s",
                (Handling.DONE.value, CLOSED_AS[claim], *key),
            )
            return claim

    async def mark_message(
        self, memory_id: str, status: Handling, outcome: str | None = None, *, claimant: str = ANONYMOUS
    ) -> bool:
        """Record where ``claimant``'s answer to ``memory_id`` stands, if the claim is still its
        own and in a state to be so marked (see ``AgentStore.mark_message``)."""
        changed = await self._db.execute(
            f"UPDATE message_handling SET status = %s, outcome = COALESCE(%s::text, outcome), updated_at = {NOW_MS} "
            f"WHERE agent_id = %s AND memory_id = %s AND claimant = %s AND status IN {marks(status)}",
            (status.value, outcome, self._agent_id, memory_id, claimant),
        )
        return changed == 1

    async def expire_message(self, memory_id: str) -> bool:
        """Close an unfinished claim as too old to answer (see ``AgentStore.expire_message``)."""
        changed = await self._db.execute(
            f"UPDATE message_handling SET status = %s, outcome = 'expired', updated_at = {NOW_MS} "
            f"WHERE agent_id = %s AND memory_id = %s AND {EXPIRABLE}",
            (Handling.DONE.value, self._agent_id, memory_id),
        )
        return changed == 1

    async def clock_ms(self) -> int:
        """The database's clock, in ms since the epoch: what every daemon of the troupe compares
        the times it stores and reads with (their own clocks may disagree)."""
        row = await self._db.fetchone(f"SELECT {NOW_MS} AS now")
        assert row is not None
        return int(row["now"])

    async def get_message_handling(self, memory_id: str) -> MessageHandling | None:
        """Where the answer to ``memory_id`` stands; None if it was never claimed (or pruned)."""
        row = await self._db.fetchone(
            "SELECT memory_id, room_id, status, outcome, attempts, created_at FROM message_handling "
            "WHERE agent_id = %s AND memory_id = %s",
            (self._agent_id, memory_id),
        )
        if row is None:
            return None
        return MessageHandling(
            row["memory_id"],
            row["room_id"],
            Handling(row["status"]),
            row["outcome"],
            row["attempts"],
            row["created_at"],
        )

    async def release_message(self, memory_id: str, *, claimant: str = ANONYMOUS) -> bool:
        """Give back a message ``claimant`` could not answer (see ``AgentStore.release_message``)."""
        changed = await self._db.execute(
            f"UPDATE message_handling SET status = %s, updated_at = {NOW_MS} "
            f"WHERE agent_id = %s AND memory_id = %s AND claimant = %s AND {RELEASABLE}",
            (Handling.RELEASED.value, self._agent_id, memory_id, claimant),
        )
        return changed == 1

    async def unfinished_messages(self, *, idle_before: int | None = None) -> list[tuple[str, int, int]]:
        """Messages claimed but never finished or given back unsent (see
        ``AgentStore.unfinished_messages``), oldest first."""
        condition, params = orphaned(idle_before)
        rows = await self._db.fetchall(
            "SELECT memory_id, created_at, attempts FROM message_handling WHERE agent_id = %s "
            f"AND {condition.format(*['%s'] * len(params))} ORDER BY created_at, memory_id",
            (self._agent_id, *params),
        )
        return [(r["memory_id"], r["created_at"], r["attempts"]) for r in rows]

    async def prune_handled(self, before: int) -> int:
        """Forget the claims of messages older than ``before`` (ms), finished or not; how many went."""
        return await self._db.execute(
            "DELETE FROM message_handling WHERE agent_id = %s AND created_at < %s", (self._agent_id, before)
        )

    # -- the inbox ---------------------------------------------------------------------------------

    async def inbox_put(self, source: str, event_id: str, payload: str) -> None:
        """Keep a platform event (``payload``: as the platform sent it) until :meth:`inbox_done`."""
        await self._db.execute(
            f"INSERT INTO inbox (agent_id, source, event_id, payload, received_at) VALUES (%s, %s, %s, %s, {NOW_MS}) "
            "ON CONFLICT (agent_id, source, event_id) DO UPDATE "
            "SET payload = excluded.payload, received_at = excluded.received_at",
            (self._agent_id, source, event_id, payload),
        )

    async def inbox_done(self, source: str, event_id: str) -> None:
        """The event was dealt with: forget it."""
        await self._db.execute(
            "DELETE FROM inbox WHERE agent_id = %s AND source = %s AND event_id = %s",
            (self._agent_id, source, event_id),
        )

    async def inbox_pending(self, source: str) -> list[tuple[str, str, int]]:
        """Events from ``source`` never dealt with (a process died), oldest first, as (event id,
        payload, received at in ms)."""
        rows = await self._db.fetchall(
            "SELECT event_id, payload, received_at FROM inbox WHERE agent_id = %s AND source = %s "
            "ORDER BY received_at, event_id",
            (self._agent_id, source),
        )
        return [(r["event_id"], r["payload"], r["received_at"]) for r in rows]
