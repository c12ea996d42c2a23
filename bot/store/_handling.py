"""Exactly once: one row per platform message an agent received, saying where its answer stands;
and an inbox of platform events not yet dealt with.

Platforms deliver again (Telegram re-sends updates whose offset was never confirmed, Discord's
catch-up after a lost session, a restart after a crash); the pipeline claims every delivery here
first, so a message is answered at most once. A claim left ``HANDLING`` by a process that died is
taken up again once; one left ``SENDING`` may have been answered already and never is again —
unless the daemon that marked it gives it back (``RELEASED``): it lost the character's lease
before anything went out, and the daemon holding the lease now answers it.

Each claim names its claimant (a token of one runtime of the character, bound to the lease epoch
it runs under), and every change of it is a compare-and-set on the state it expects and, for the
claimant's own changes, on the claimant (``bot/store/_claims.py``): a deposed daemon's delayed
write finds the claim taken over or answered and changes nothing.

Several daemons may share a PostgreSQL database, so claims of the same message cannot interleave:
the first delivery's row is inserted with ``ON CONFLICT DO NOTHING`` in one statement (of two
daemons inserting at once, one inserts and the other waits for it, then finds the row), and a
row that exists is read ``FOR UPDATE`` and changed in one transaction, so claims of it take turns
and each sees the one before it. Times are the database's clock, which every daemon reads by.
Both backends.
"""

from __future__ import annotations

from bot.kernel.types import Claim, Handling
from bot.store._claims import ANONYMOUS, CLOSED_AS, EXPIRABLE, RELEASABLE, marks, orphaned, same_claimant
from bot.store._dialect import Statements, Step, Unit
from bot.store._values import MessageHandling

__all__ = ["HandlingMixin"]

_TABLES = ("message_handling",)
_INBOX = ("inbox",)

_COLUMNS = "(agent_id, memory_id, room_id, status, attempts, created_at, updated_at, outcome, claimant)"
_STORED = "EXISTS (SELECT 1 FROM memories WHERE id = ? AND agent_id = ?)"
# A first delivery, the common case, in one statement: HANDLING, unless the message is stored
# already or claimed (no row then). Parameters: agent, memory, room, HANDLING, created, claimant,
# then memory and agent (_STORED).
_INSERT_NEW = (
    f"INSERT INTO message_handling {_COLUMNS} SELECT ?, ?, ?, ?, 1, ?, {{clock}}, NULL, ? "
    f"WHERE NOT {_STORED} ON CONFLICT (agent_id, memory_id) DO NOTHING"
)
# The same, but DONE at once when the message itself is stored (by a troupe from before claims).
# Parameters: agent, memory, room, DONE, HANDLING, created, claimant, then memory and agent.
_INSERT_FIRST = (
    f"INSERT INTO message_handling {_COLUMNS} "
    "SELECT ?, ?, ?, CASE WHEN s.stored THEN ? ELSE ? END, 1, ?, {clock}, "
    "CASE WHEN s.stored THEN 'duplicate' END, ? "
    f"FROM (SELECT {_STORED} AS stored) s WHERE true "
    "ON CONFLICT (agent_id, memory_id) DO NOTHING RETURNING status"
)


class HandlingMixin(Statements):
    """The ``message_handling`` and ``inbox`` tables."""

    __slots__ = ()

    async def claim_message(
        self, memory_id: str, room_id: str, created_at: int, *, retries: int = 1, claimant: str = ANONYMOUS
    ) -> Claim:
        """Claim the message ``memory_id`` for ``claimant``; what the caller should do with it.

        A message never seen is ``NEW``. One seen before is a ``DUPLICATE`` when it was handled (or
        stored before claims existed), a ``RETRY`` when it was given back unsent, when its claimant
        claims it again (its claim met a store error), or when a process died while handling it
        and it has been taken up fewer than ``retries`` times again (only this counts an attempt),
        else ``ABANDONED``; ``SENT`` when its reply had started going out. The last two are
        recorded as done, so later deliveries are duplicates. Whether *this* process is handling
        it right now is the caller's to know: a row is not a lock. Atomic across processes
        sharing the database.
        """
        agent = self._agent_id
        key = (agent, memory_id)
        handling, done = Handling.HANDLING.value, Handling.DONE.value
        if await self._run(
            _INSERT_NEW, (agent, memory_id, room_id, handling, created_at, claimant, memory_id, agent), tables=_TABLES
        ):
            return Claim.NEW

        def claim() -> Unit[Claim]:
            while True:
                found = yield Step(
                    "SELECT status, attempts, claimant FROM message_handling "
                    "WHERE agent_id = ? AND memory_id = ?{for_update}",
                    key,
                )
                if found.rows:
                    break
                # No claim: the message was stored before claims existed, or its claim was pruned
                # a moment ago. Should another claim insert one first, read that one.
                inserted = yield Step(
                    _INSERT_FIRST, (agent, memory_id, room_id, done, handling, created_at, claimant, memory_id, agent)
                )
                if inserted.rows:
                    return Claim.DUPLICATE if inserted.rows[0]["status"] == done else Claim.NEW
            row = found.rows[0]
            status, attempts = Handling(row["status"]), int(row["attempts"])
            if status is Handling.DONE:
                return Claim.DUPLICATE
            # Given back unsent, or claimed again by its own claimant: not a crash, no attempt counted.
            if status is Handling.RELEASED or (
                status is Handling.HANDLING and same_claimant(row["claimant"], claimant)
            ):
                yield Step(
                    "UPDATE message_handling SET status = ?, claimant = ?, updated_at = {clock} "
                    "WHERE agent_id = ? AND memory_id = ?",
                    (handling, claimant, *key),
                )
                return Claim.RETRY
            if status is Handling.HANDLING and attempts <= retries:
                yield Step(
                    "UPDATE message_handling SET attempts = attempts + 1, claimant = ?, updated_at = {clock} "
                    "WHERE agent_id = ? AND memory_id = ?",
                    (claimant, *key),
                )
                return Claim.RETRY
            claim = Claim.SENT if status is Handling.SENDING else Claim.ABANDONED
            yield Step(
                "UPDATE message_handling SET status = ?, outcome = ?, updated_at = {clock} "
                "WHERE agent_id = ? AND memory_id = ?",
                (done, CLOSED_AS[claim], *key),
            )
            return claim

        return await self._write(claim, tables=_TABLES)

    async def mark_message(
        self, memory_id: str, status: Handling, outcome: str | None = None, *, claimant: str = ANONYMOUS
    ) -> bool:
        """Record where ``claimant``'s answer to ``memory_id`` stands: ``SENDING`` (from
        ``HANDLING``) or ``DONE`` (from either; ``outcome``: how it ended). False, and nothing
        changed, when the claim is not ``claimant``'s (taken over) or not in such a state
        (answered, given back): the caller must not send."""
        changed = await self._run(
            "UPDATE message_handling SET status = ?, outcome = COALESCE(CAST(? AS TEXT), outcome), "
            f"updated_at = {{clock}} WHERE agent_id = ? AND memory_id = ? AND claimant = ? AND status IN {marks(status)}",
            (status.value, outcome, self._agent_id, memory_id, claimant),
            tables=_TABLES,
        )
        return changed == 1

    async def expire_message(self, memory_id: str) -> bool:
        """Close an unfinished claim (``HANDLING`` or ``RELEASED``) as too old to answer now;
        False if it stands otherwise (a reply is going out, or it was answered meanwhile)."""
        changed = await self._run(
            "UPDATE message_handling SET status = ?, outcome = 'expired', updated_at = {clock} "
            f"WHERE agent_id = ? AND memory_id = ? AND {EXPIRABLE}",
            (Handling.DONE.value, self._agent_id, memory_id),
            tables=_TABLES,
        )
        return changed == 1

    async def clock_ms(self) -> int:
        """The database's clock, in ms since the epoch: what daemons sharing a database compare the
        times they store and read with (their own clocks may disagree)."""
        row = await self._row("SELECT {clock} AS now")
        assert row is not None
        return int(row["now"])

    async def get_message_handling(self, memory_id: str) -> MessageHandling | None:
        """Where the answer to ``memory_id`` stands; None if it was never claimed (or pruned)."""
        row = await self._row(
            "SELECT memory_id, room_id, status, outcome, attempts, created_at FROM message_handling "
            "WHERE agent_id = ? AND memory_id = ?",
            (self._agent_id, memory_id),
        )
        if row is None:
            return None
        return MessageHandling(
            str(row["memory_id"]),
            str(row["room_id"]),
            Handling(row["status"]),
            row["outcome"],
            int(row["attempts"]),
            int(row["created_at"]),
        )

    async def release_message(self, memory_id: str, *, claimant: str = ANONYMOUS) -> bool:
        """Give back a message ``claimant`` claimed and could not answer because it lost the
        character's lease (its reply refused by the fence, before or after marking ``SENDING``):
        ``RELEASED``, for the lease holder to answer (:meth:`unfinished_messages`,
        :meth:`claim_message`), no attempt counted. Also when the holder, finding it ``SENDING``,
        already closed it as sent before a crash. False if it stands otherwise: answered, or
        taken over by another claimant."""
        changed = await self._run(
            "UPDATE message_handling SET status = ?, updated_at = {clock} "
            f"WHERE agent_id = ? AND memory_id = ? AND claimant = ? AND {RELEASABLE}",
            (Handling.RELEASED.value, self._agent_id, memory_id, claimant),
            tables=_TABLES,
        )
        return changed == 1

    async def unfinished_messages(self, *, idle_before: int | None = None) -> list[tuple[str, int, int]]:
        """Messages claimed but never finished (``HANDLING``: what a process that died left) and
        those given back unsent (``RELEASED``), oldest first, as (memory id, the message's own time
        in ms, times taken up). With ``idle_before`` (ms), only those given back and those whose
        claim has not changed since then: what a daemon that lost the character's lease left
        while the character is served elsewhere (the caller skips what it is answering itself)."""
        condition, params = orphaned(idle_before)
        rows = await self._rows(
            "SELECT memory_id, created_at, attempts FROM message_handling WHERE agent_id = ? "
            f"AND {condition.format(*'?' * len(params))} ORDER BY created_at, memory_id",
            (self._agent_id, *params),
        )
        return [(str(r["memory_id"]), int(r["created_at"]), int(r["attempts"])) for r in rows]

    async def prune_handled(self, before: int) -> int:
        """Forget the claims of messages older than ``before`` (ms), finished or not; how many went.

        A later redelivery of such a message is still a duplicate: the message itself is stored.
        """
        return await self._run(
            "DELETE FROM message_handling WHERE agent_id = ? AND created_at < ?",
            (self._agent_id, before),
            tables=_TABLES,
        )

    # -- the inbox ---------------------------------------------------------------------------------

    async def inbox_put(self, source: str, event_id: str, payload: str) -> None:
        """Keep a platform event (``payload``: as the platform sent it) until :meth:`inbox_done`."""
        await self._run(
            "INSERT INTO inbox (agent_id, source, event_id, payload, received_at) VALUES (?, ?, ?, ?, {clock}) "
            "ON CONFLICT (agent_id, source, event_id) DO UPDATE "
            "SET payload = excluded.payload, received_at = excluded.received_at",
            (self._agent_id, source, event_id, payload),
            tables=_INBOX,
        )

    async def inbox_done(self, source: str, event_id: str) -> None:
        """The event was dealt with: forget it."""
        await self._run(
            "DELETE FROM inbox WHERE agent_id = ? AND source = ? AND event_id = ?",
            (self._agent_id, source, event_id),
            tables=_INBOX,
        )

    async def inbox_pending(self, source: str) -> list[tuple[str, str, int]]:
        """Events from ``source`` never dealt with (a process died), oldest first, as (event id,
        payload, received at in ms)."""
        rows = await self._rows(
            "SELECT event_id, payload, received_at FROM inbox WHERE agent_id = ? AND source = ? "
            "ORDER BY received_at, event_id",
            (self._agent_id, source),
        )
        return [(str(r["event_id"]), str(r["payload"]), int(r["received_at"])) for r in rows]
