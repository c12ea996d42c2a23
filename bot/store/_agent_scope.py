"""``Scoped``: what every part of an agent's store holds, whatever the backend: the shared
database and the agent id every query is scoped to."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from bot.store._health import StoreHealth

if TYPE_CHECKING:  # _rows builds on _scoped, which builds on this module
    from bot.store._rows import Payloads

__all__ = ["Scoped"]

_log = logging.getLogger("bot.store")


class _Database(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def health(self) -> StoreHealth: ...

    def shared_reads(self) -> AbstractContextManager[None]: ...

    @property
    def payloads(self) -> Payloads: ...


DB = TypeVar("DB", bound=_Database)


class Scoped(Generic[DB]):
    """Holds the shared database and the agent id every query is scoped to."""

    __slots__ = ("_agent_id", "_db")

    def __init__(self, db: DB, agent_id: str) -> None:
        self._db = db
        self._agent_id = agent_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent_id={self._agent_id!r} db={self._db.path!r}>"

    @property
    def agent_id(self) -> str:
        """The agent every read and write of this store is scoped to."""
        return self._agent_id

    @property
    def health(self) -> StoreHealth:
        """Whether the database writes now, and why not: shared by every agent's store."""
        return self._db.health

    @property
    def _payloads(self) -> Payloads:
        return self._db.payloads

    @property
    def database(self) -> DB:
        """The shared database behind this store: for the backend's own tests, not in ``Store``."""
        return self._db

    def shared_reads(self) -> AbstractContextManager[None]:
        """``with store.shared_reads():`` one unit of work (handling one message): within the block,
        and in tasks started inside it, identical reads of rooms, worlds and room state
        share one query, including one still in flight; a write that may have changed what was
        read ends the sharing, so no read returns rows older than troupe's last write. Nested
        blocks join the outermost one. Costs nothing outside the reads it saves."""
        return self._db.shared_reads()

    def _fail(self, what: str, exc: Exception) -> bool:
        # Row contents never go into logs; the driver's message names only the constraint. While
        # the store cannot write, it said so once: not a line per write.
        log = _log.debug if self._db.health.failed(exc) else _log.warning
        log("agent %s: %s failed: %s", self._agent_id, what, exc)
        return False
