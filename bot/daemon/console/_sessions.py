"""Who is logged in to the console: sessions kept in the daemon's memory, ended after idle hours."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["IDLE_LIMIT_S", "Session", "Sessions"]

#: A session not used for this long is over.
IDLE_LIMIT_S = 12 * 3600.0


@dataclass
class Session:
    """One browser's login: its cookie's id, the CSRF token its forms carry, when it was last used."""

    id: str = field(repr=False)
    csrf: str = field(repr=False)
    last_used: float

    @property
    def label(self) -> str:
        """What the audit log names it by: a prefix of the id, too short to log in with."""
        return self.id[:8]


class Sessions:
    """The open sessions, by id; a restart of the daemon ends them all."""

    def __init__(self, *, idle_limit_s: float = IDLE_LIMIT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_limit_s = idle_limit_s
        self._clock = clock
        self._open: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open(self) -> Session:
        """A new session, with fresh random ids."""
        self._drop_idle()
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), self._clock())
        self._open[session.id] = session
        return session

    def find(self, session_id: str | None) -> Session | None:
        """The open session with this id (now marked used), or None: unknown or idle too long."""
        if not session_id:
            return None
        session = self._open.get(session_id)
        now = self._clock()
        if session is None:
            return None
        if now - session.last_used > self.idle_limit_s:
            del self._open[session_id]
            return None
        session.last_used = now
        return session

    def end(self, session_id: str) -> None:
        """Log this session out (nothing if it is not open)."""
        self._open.pop(session_id, None)

    def _drop_idle(self) -> None:
        now = self._clock()
        for stale in [s.id for s in self._open.values() if now - s.last_used > self.idle_limit_s]:
            del self._open[stale]
