"""The bus: what one daemon posts for the other daemons of its troupe to hear.

Several daemons can serve one troupe (PostgreSQL). Most of what their characters share lives in
the database already; what is left is news that must reach another process while it happens —
the Telegram relay hands what one character said in a group to the others there, and Telegram
never tells another bot. A post is a topic and a JSON text; each daemon's bus hands the posts of
the *other* daemons to the handlers subscribed to the topic, each once, in the order they were
posted. A daemon delivers its own news to its own characters directly, without the bus.

Posts stay readable for a while after they were posted (:meth:`Bus.recent`), so a character that
starts serving on a daemon (it moved there) can catch up on what it may have missed.

:class:`LocalBus` is the bus of a daemon alone with its database (SQLite): there is nobody to
tell, so it costs nothing. The PostgreSQL backend's bus (``bot/store/postgres/_bus.py``) is a
table and LISTEN/NOTIFY. The daemon makes its bus (``StoreBackend.bus``), runs it, and hands it
to its runtimes through :class:`~bot.runtime.shared.Shared`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Bus", "Handler", "LocalBus", "Post"]


@dataclass(frozen=True, slots=True)
class Post:
    """One post, as a subscriber hears it."""

    id: int
    """Grows with each post on the troupe's bus."""
    topic: str
    origin: str
    """The daemon that posted it."""
    payload: str
    """JSON text."""


Handler = Callable[[Post], Awaitable[None]]


@runtime_checkable
class Bus(Protocol):
    """Posts between the daemons of one troupe."""

    @property
    def spans_daemons(self) -> bool:
        """Whether other daemons can hear this one (False: posting is pointless)."""
        ...

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Call ``handler`` with each post of ``topic`` that another daemon makes from now on (a
        few of the last seconds' may come too; a handler that raises is logged, and still hears
        the next post)."""
        ...

    def unsubscribe(self, topic: str, handler: Handler) -> None: ...

    async def post(self, topic: str, payload: str) -> None:
        """Tell the other daemons (``payload``: JSON text of any size).

        Raises:
            StoreError: the post could not be written; nobody will hear it.
        """
        ...

    async def recent(self, topic: str, within_s: float) -> list[Post]:
        """The posts of ``topic`` made in the last ``within_s`` seconds by any daemon (this one
        too), oldest first.

        Raises:
            StoreError: they could not be read.
        """
        ...

    async def run(self) -> None:
        """Listen for the other daemons' posts until cancelled (returns at once when there are
        none to hear)."""
        ...


class LocalBus:
    """The bus of a daemon alone with its database: nobody else to tell."""

    @property
    def spans_daemons(self) -> bool:
        return False

    def subscribe(self, topic: str, handler: Handler) -> None:
        pass

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        pass

    async def post(self, topic: str, payload: str) -> None:
        pass

    async def recent(self, topic: str, within_s: float) -> list[Post]:
        return []

    async def run(self) -> None:
        pass
