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
"""

from __future__ import annotations

from bot.store._claims import ANONYMOUS, CLOSED_AS, EXPIRABLE, RELEASABLE, marks, orphaned, same_claimant
from bot.store._connect import Connection
from bot.store._scoped import AgentScoped
from bot.store._values import MessageHandling
from bot.types import Claim, Handling, now_ms

__all__ = ["HandlingMixin"]

_TABLES = ("message_handling",)
_INBOX = ("inbox",)


class HandlingMixin(AgentScoped):
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
        it right now is the caller's to know: a row is not a lock.
        """
        agent, now = self._agent_id, now_ms()

        def claim(conn: Connection) -> Claim:
            row = conn.execute(
                "SELECT status, attempts, claimant FROM message_handling WHERE agent_id = ? AND memory_id = ?",
                (agent, memory_id),
            ).fetchone()
            if row is None:
                stored = conn.execute(
                    "SELECT 1 FROM memories WHERE id = ? AND agent_id = ?", (memory_id, agent)
                ).fetchone()
                status = Handling.DONE if stored else Handling.HANDLING
                conn.execute(
                    "INSERT INTO message_handling (agent_id, memory_id, room_id, status, attempts, created_at, "
                    "updated_at, outcome, claimant) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)",
                    (
                        agent,
                        memory_id,
                        room_id,
                        status.value,
                        created_at,
                        now,
                        "duplicate" if stored else None,
                        claimant,
                    ),
                )
                return Claim.DUPLICATE if stored else Claim.NEW
            status, attempts = Handling(row[0]), int(row[1])
            if status is Handling.DONE:
                return Claim.DUPLICATE
            # Given back unsent, or claimed again by its own claimant: not a crash, no attempt counted.
            if status is Handling.RELEASED or (status is Handling.HANDLING and same_claimant(str(row[2]), claimant)):
                conn.execute(
                    "UPDATE message_handling SET status = ?, claimant = ?, updated_at = ? "
                    "WHERE agent_id = ? AND memory_id = ?",
                    (Handling.HANDLING.value, claimant, now, agent, memory_id),
                )
                return Claim.RETRY
            if status is Handling.HANDLING and attempts <= retries:
                conn.execute(
                    "UPDATE message_handling SET attempts = attempts + 1, claimant = ?, updated_at = ? "
                    "WHERE agent_id = ? AND memory_id = ?",
                    (claimant, now, agent, memory_id),
                )
                return Claim.RETRY
            claim = Claim.SENT if status is Handling.SENDING else Claim.ABANDONED
            conn.execute(
                "UPDATE message_handling SET status = ?, outcome = ?, updated_at = ? WHERE agent_id = ? AND memory_id = ?",
                (Handling.DONE.value, CLOSED_AS[claim], now, agent, memory_id),
            )
            return claim

        return await self._db.write(claim, tables=_TABLES)

    async def mark_message(
        self, memory_id: str, status: Handling, outcome: str | None = None, *, claimant: str = ANONYMOUS
    ) -> bool:
        """Record where ``claimant``'s answer to ``memory_id`` stands: ``SENDING`` (from
        ``HANDLING``) or ``DONE`` (from either; ``outcome``: how it ended). False, and nothing
        changed, when the claim is not ``claimant``'s (taken over) or not in such a state
        (answered, given back): the caller must not send."""
        agent, now, expected = self._agent_id, now_ms(), marks(status)

        def mark(conn: Connection) -> bool:
            cur = conn.execute(
                "UPDATE message_handling SET status = ?, outcome = COALESCE(?, outcome), updated_at = ? "
                f"WHERE agent_id = ? AND memory_id = ? AND claimant = ? AND status IN {expected}",
                (status.value, outcome, now, agent, memory_id, claimant),
            )
            return cur.rowcount == 1

        return await self._db.write(mark, tables=_TABLES)

    async def expire_message(self, memory_id: str) -> bool:
        """Close an unfinished claim (``HANDLING`` or ``RELEASED``) as too old to answer now;
        False if it stands otherwise (a reply is going out, or it was answered meanwhile)."""
        agent, now = self._agent_id, now_ms()

        def expire(conn: Connection) -> bool:
            cur = conn.execute(
                "UPDATE message_handling SET status = ?, outcome = 'expired', updated_at = ? "
                f"WHERE agent_id = ? AND memory_id = ? AND {EXPIRABLE}",
                (Handling.DONE.value, now, agent, memory_id),
            )
            return cur.rowcount == 1

        return await self._db.write(expire, tables=_TABLES)

    async def clock_ms(self) -> int:
        """The database's clock, in ms since the epoch: what daemons sharing a database compare the
        times they store and read with. One machine here: its own clock."""
        return now_ms()

    async def get_message_handling(self, memory_id: str) -> MessageHandling | None:
        """Where the answer to ``memory_id`` stands; None if it was never claimed (or pruned)."""
        row = await self._db.fetchone(
            "SELECT memory_id, room_id, status, outcome, attempts, created_at FROM message_handling "
            "WHERE agent_id = ? AND memory_id = ?",
            (self._agent_id, memory_id),
        )
        if row is None:
            return None
        return MessageHandling(str(row[0]), str(row[1]), Handling(row[2]), row[3], int(row[4]), int(row[5]))

    async def release_message(self, memory_id: str, *, claimant: str = ANONYMOUS) -> bool:
        """Give back a message ``claimant`` claimed and could not answer because it lost the
        character's lease (its reply refused by the fence, before or after marking ``SENDING``):
        ``RELEASED``, for the lease holder to answer (:meth:`unfinished_messages`,
        :meth:`claim_message`), no attempt counted. Also when the holder, finding it ``SENDING``,
        already closed it as sent before a crash. False if it stands otherwise: answered, or
        taken over by another claimant."""
        agent, now = self._agent_id, now_ms()

        def release(conn: Connection) -> bool:
            cur = conn.execute(
                "UPDATE message_handling SET status = ?, updated_at = ? "
                f"WHERE agent_id = ? AND memory_id = ? AND claimant = ? AND {RELEASABLE}",
                (Handling.RELEASED.value, now, agent, memory_id, claimant),
            )
            return cur.rowcount == 1

        return await self._db.write(release, tables=_TABLES)

    async def unfinished_messages(self, *, idle_before: int | None = None) -> list[tuple[str, int, int]]:
        """Messages claimed but never finished (``HANDLING``: what a process that died left) and
        those given back unsent (``RELEASED``), oldest first, as (memory id, the message's own time
        in ms, times taken up). With ``idle_before`` (ms), only those given back and those whose
        claim has not changed since then: what a daemon that lost the character's lease left
        while the character is served elsewhere (the caller skips what it is answering itself)."""
        condition, params = orphaned(idle_before)
        rows = await self._db.fetchall(
            "SELECT memory_id, created_at, attempts FROM message_handling WHERE agent_id = ? "
            f"AND {condition.format(*'?' * len(params))} ORDER BY created_at, memory_id",
            (self._agent_id, *params),
        )
        return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def prune_handled(self, before: int) -> int:
        """Forget the claims of messages older than ``before`` (ms), finished or not; how many went.

        A later redelivery of such a message is still a duplicate: the message itself is stored.
        """
        agent = self._agent_id

        def prune(conn: Connection) -> int:
            cur = conn.execute("DELETE FROM message_handling WHERE agent_id = ? AND created_at < ?", (agent, before))
            return int(cur.rowcount)

        return await self._db.write(prune, tables=_TABLES)

    # -- the inbox ---------------------------------------------------------------------------------

    async def inbox_put(self, source: str, event_id: str, payload: str) -> None:
        """Keep a platform event (``payload``: as the platform sent it) until :meth:`inbox_done`."""
        row = (self._agent_id, source, event_id, payload, now_ms())

        def put(conn: Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO inbox (agent_id, source, event_id, payload, received_at) "
                "VALUES (?, ?, ?, ?, ?)",
                row,
            )

        await self._db.write(put, tables=_INBOX)

    async def inbox_done(self, source: str, event_id: str) -> None:
        """The event was dealt with: forget it."""
        key = (self._agent_id, source, event_id)

        def done(conn: Connection) -> None:
            conn.execute("DELETE FROM inbox WHERE agent_id = ? AND source = ? AND event_id = ?", key)

        await self._db.write(done, tables=_INBOX)

    async def inbox_pending(self, source: str) -> list[tuple[str, str, int]]:
        """Events from ``source`` never dealt with (a process died), oldest first, as (event id,
        payload, received at in ms)."""
        rows = await self._db.fetchall(
            "SELECT event_id, payload, received_at FROM inbox WHERE agent_id = ? AND source = ? "
            "ORDER BY received_at, event_id",
            (self._agent_id, source),
        )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]
