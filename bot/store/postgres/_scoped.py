"""``PgScoped``: what every part of the PostgreSQL agent store holds: the database and the agent."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.store.postgres._database import PostgresDatabase

__all__ = ["PgScoped"]

_log = logging.getLogger("bot.store")


class PgScoped:
    """Holds the shared :class:`PostgresDatabase` and the agent id every query is scoped to."""

    __slots__ = ("_agent_id", "_db")

    def __init__(self, db: PostgresDatabase, agent_id: str) -> None:
        self._db = db
        self._agent_id = agent_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent_id={self._agent_id!r} db={self._db.path!r}>"

    @property
    def agent_id(self) -> str:
        """The agent every read and write of this store is scoped to."""
        return self._agent_id

    @property
    def database(self) -> PostgresDatabase:
        """The shared database behind this store: for the backend's own tests, not in ``Store``."""
        return self._db

    def shared_reads(self) -> AbstractContextManager[None]:
        """One unit of work; reads are not shared on PostgreSQL yet, so this changes nothing."""
        return self._db.shared_reads()

    def _fail(self, what: str, exc: Exception) -> bool:
        # Row contents never go into logs; the driver's message names only the constraint.
        _log.warning("agent %s: %s failed: %s", self._agent_id, what, exc)
        return False
