"""The bus between the daemons of a troupe, in PostgreSQL: a table and LISTEN/NOTIFY (``bot/kernel/bus.py``).

A post is a row of ``bus_posts``; posting also NOTIFYs the channel ``troupe_bus`` with the row's
id (never the payload: a notification holds 8000 bytes at most), in the same statement, so the
notification goes out when the row is committed. NOTIFY is fire and forget — a daemon that is
reconnecting hears nothing — so a notification only says "read now": each daemon reads every row
of another daemon posted since its last read, on its listening connection, when notified and
at least every ``poll_s`` seconds, and after every reconnection. A post is heard once: the rows
read are remembered by id until the reads have moved past them. Reads overlap the previous one
by ``GRACE_S`` seconds: the posting time is taken when the row is written, and it is committed a
moment later, so a row may become visible after a read that started after its posting time.

Each daemon has one listening connection, outside the pool: the pool gives up one of its places
for it (``PostgresDatabase.connect_listener``), so a daemon still holds at most its six
connections, and the listening one is the one kept while idle. It reconnects with back-off
after the server restarts or the connection drops; every query on it has a timeout. Rows older
than ``KEEP_S`` are deleted (by any daemon's listener, once a minute).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any, NoReturn

import psycopg

from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.bus import Handler, Post
from bot.kernel.errors import StoreError

if TYPE_CHECKING:
    from bot.store.postgres._database import PostgresDatabase

__all__ = ["CHANNEL", "GRACE_S", "KEEP_S", "SCHEMA", "PgBus"]

_log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE bus_posts (
    id        bigserial PRIMARY KEY,
    topic     text NOT NULL,
    origin    text NOT NULL,
    payload   text NOT NULL,
    posted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX bus_posts_by_time ON bus_posts (posted_at);
"""

CHANNEL = "troupe_bus"
#: Seconds a read reaches back before the previous one began (rows committed late).
GRACE_S = 5.0
#: Seconds a post is kept: the longest a daemon can be cut off and still hear everything.
KEEP_S = 600.0
_POLL_S = 5.0  # a read at least this often, notified or not (it also checks the connection)
_QUERY_S = 10.0
_HANDLER_S = 10.0
_PRUNE_EVERY_S = 60.0
_RETRY_BASE_S = 0.5
_RETRY_CAP_S = 30.0

_POST = f"""
WITH p AS (INSERT INTO bus_posts (topic, origin, payload) VALUES (%(topic)s, %(origin)s, %(payload)s) RETURNING id)
SELECT pg_notify('{CHANNEL}', p.id::text) FROM p
"""
_NOW = "SELECT extract(epoch FROM clock_timestamp())::float8 AS now"
_SINCE = """
SELECT id, topic, origin, payload, extract(epoch FROM posted_at)::float8 AS at FROM bus_posts
WHERE posted_at > to_timestamp(%(since)s) AND origin <> %(origin)s AND topic = ANY(%(topics)s) ORDER BY id
"""
_RECENT = """
SELECT id, topic, origin, payload FROM bus_posts
WHERE topic = %(topic)s AND posted_at > clock_timestamp() - make_interval(secs => %(within)s) ORDER BY id
"""
_PRUNE = "DELETE FROM bus_posts WHERE posted_at < clock_timestamp() - make_interval(secs => %(keep)s)"


class PgBus:
    """One daemon's end of the troupe's bus (``origin``: the daemon's id)."""

    def __init__(self, db: PostgresDatabase, origin: str, *, poll_s: float = _POLL_S) -> None:
        self._db = db
        self._origin = origin
        self._poll_s = poll_s
        self._handlers: dict[str, list[Handler]] = defaultdict(list)
        self._since: float | None = None  # the database's clock: where the next read starts
        self._heard: dict[int, float] = {}  # ids of posts read at or after _since -> their time
        self._pruned_at = 0.0
        #: Set while the listening connection is up (tests wait for it).
        self.listening = asyncio.Event()

    def __repr__(self) -> str:
        return f"<PgBus {self._origin} on {self._db.path}>"

    @property
    def spans_daemons(self) -> bool:
        return True

    def subscribe(self, topic: str, handler: Handler) -> None:
        self._handlers[topic].append(handler)

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        handlers = self._handlers.get(topic, [])
        if handler in handlers:
            handlers.remove(handler)
        if not handlers:
            self._handlers.pop(topic, None)

    async def post(self, topic: str, payload: str) -> None:
        await self._db.execute(_POST, {"topic": topic, "origin": self._origin, "payload": payload})

    async def recent(self, topic: str, within_s: float) -> list[Post]:
        rows = await self._db.fetchall(_RECENT, {"topic": topic, "within": within_s})
        return [_post(r) for r in rows]

    # -- listening -------------------------------------------------------------------------------

    async def run(self) -> None:
        backoff = ExponentialBackoff(_RETRY_BASE_S, _RETRY_CAP_S)
        while True:
            try:
                await self._listen(backoff)
            except (StoreError, psycopg.Error, OSError, TimeoutError) as exc:
                delay = backoff.delay()
                reason = str(exc).strip() or type(exc).__name__
                _log.warning("cannot hear the other daemons (%s); connecting again in %.1f s", reason, delay)
            except Exception:  # a bug must not leave the daemon deaf for the rest of its life
                delay = backoff.delay()
                _log.exception("the bus stopped listening; connecting again in %.1f s", delay)
            finally:
                self.listening.clear()
            await asyncio.sleep(delay)

    async def _listen(self, backoff: ExponentialBackoff) -> NoReturn:
        """Listen on a connection of its own until it fails (raises)."""
        async with await self._db.connect_listener() as conn:
            async with asyncio.timeout(_QUERY_S):
                await conn.execute(f"LISTEN {CHANNEL}")
            if backoff.attempts:
                _log.info("hearing the other daemons again")
            backoff.reset()
            self.listening.set()
            while True:
                # What was posted before LISTEN took effect, or while not connected, comes first.
                await self._dispatch(await self._read(conn))
                async for _ in conn.notifies(timeout=self._poll_s, stop_after=1):
                    pass  # a notification only says that there is something to read

    async def _read(self, conn: psycopg.AsyncConnection[Any]) -> list[Post]:
        """The other daemons' posts not read yet (and old rows deleted, now and then)."""
        async with asyncio.timeout(_QUERY_S):
            row = await (await conn.execute(_NOW)).fetchone()
            assert row is not None
            now = float(row["now"])
            since = self._since if self._since is not None else now - GRACE_S
            rows: list[dict[str, Any]] = []
            if self._handlers:
                params = {"since": since, "origin": self._origin, "topics": list(self._handlers)}
                rows = await (await conn.execute(_SINCE, params)).fetchall()
            if now - self._pruned_at >= _PRUNE_EVERY_S:
                await conn.execute(_PRUNE, {"keep": KEEP_S})
                self._pruned_at = now
        self._since = max(since, now - GRACE_S)
        new = [r for r in rows if int(r["id"]) not in self._heard]
        for r in new:
            self._heard[int(r["id"])] = float(r["at"])
        # Rows at or before the next read's start are never read again: forget them.
        self._heard = {i: at for i, at in self._heard.items() if at > self._since}
        return [_post(r) for r in new]

    async def _dispatch(self, posts: list[Post]) -> None:
        for post in posts:
            for handler in list(self._handlers.get(post.topic, ())):
                try:
                    async with asyncio.timeout(_HANDLER_S):
                        await handler(post)
                except Exception:
                    _log.exception("a handler of %r failed on post %d from %s", post.topic, post.id, post.origin)


def _post(row: dict[str, Any]) -> Post:
    return Post(int(row["id"]), str(row["topic"]), str(row["origin"]), str(row["payload"]))
