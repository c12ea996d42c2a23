"""``StoreHealth``: whether the database can write now, and why not.

A write that fails because of the store itself (the disk is full, another process holds the
file locked, the file is corrupt, the file system went read-only or failed) says something
about every write after it; a write that breaks a constraint says something only about itself.
The backend tells its ``StoreHealth`` how each write ended; the health turns the first kind into
a state (:class:`StoreState`), logs one ERROR when the store stops writing and one INFO when it
writes again — not a line per message —, and lets whoever holds something to keep wait until
it can (:meth:`StoreHealth.wait_writable`). The daemon shows the state in ``/readyz``,
``troupe status``, systemd's status line and the ``troupe_store_state`` metric.
"""

from __future__ import annotations

import asyncio
import enum
import errno
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import StoreError
from bot.store._connect import sqlean

__all__ = ["CORRUPT_RECOVERY", "StoreHealth", "StoreState", "classify"]

_log = logging.getLogger("bot.store")

T = TypeVar("T")

#: Retries of a write while the store cannot write: soon at first, then at most this far apart
#: (a write that works sooner, anyone's, wakes every waiter at once).
_RETRY_FIRST_S = 0.25
_RETRY_CAP_S = 10.0
#: Tries of a write whose error is not the store's (a bug, a constraint) before it is given up.
_OTHER_TRIES = 3


class StoreState(enum.Enum):
    """Whether the store can write now; when it cannot, the cause."""

    OK = "ok"
    DISK_FULL = "disk full"
    LOCKED = "locked"
    CORRUPT = "corrupt"
    READ_ONLY = "read-only"
    FAILING = "failing"  # an I/O error, a file that cannot be opened: the system's log says more

    def __str__(self) -> str:
        return self.value


#: What to do about a corrupt SQLite file (docs/operations.md: "When the database cannot write").
CORRUPT_RECOVERY = (
    "stop troupe and keep a copy of the file; then restore your last backup, or rebuild it with "
    "sqlite3 FILE '.recover' | sqlite3 FILE.new and move FILE.new into its place (docs/operations.md: when the database is corrupt)"
)

_WHAT_TO_DO = {
    StoreState.DISK_FULL: "free space on its disk; troupe keeps what it hears meanwhile and carries on by itself",
    StoreState.LOCKED: "another process holds it locked (a backup, sqlite3 at a shell); troupe waits for it",
    StoreState.READ_ONLY: "its file or file system is read-only; make it writable again",
    StoreState.FAILING: "see the system's log for the disk's errors",
}

# SQLite's primary result codes (sqlite3.h), as the driver reports them in ``sqlite_errorcode``.
_SQLITE_CODES = {
    5: StoreState.LOCKED,  # SQLITE_BUSY
    6: StoreState.LOCKED,  # SQLITE_LOCKED
    8: StoreState.READ_ONLY,  # SQLITE_READONLY
    10: StoreState.FAILING,  # SQLITE_IOERR
    11: StoreState.CORRUPT,  # SQLITE_CORRUPT
    13: StoreState.DISK_FULL,  # SQLITE_FULL
    14: StoreState.FAILING,  # SQLITE_CANTOPEN
    26: StoreState.CORRUPT,  # SQLITE_NOTADB
}
# The same, by the words of the message, for errors raised without a code.
_SQLITE_WORDS = (
    ("disk is full", StoreState.DISK_FULL),
    ("malformed", StoreState.CORRUPT),
    ("not a database", StoreState.CORRUPT),
    ("database is locked", StoreState.LOCKED),
    ("database table is locked", StoreState.LOCKED),
    ("database is busy", StoreState.LOCKED),
    ("readonly database", StoreState.READ_ONLY),
    ("disk i/o error", StoreState.FAILING),
    ("no space left on device", StoreState.DISK_FULL),  # PostgreSQL's disk_full (53100), an OSError's words
)
_ERRNOS = {
    errno.ENOSPC: StoreState.DISK_FULL,
    errno.EDQUOT: StoreState.DISK_FULL,
    errno.EROFS: StoreState.READ_ONLY,
    errno.EIO: StoreState.FAILING,
}


def classify(exc: BaseException | None) -> StoreState | None:
    """The store's state that ``exc`` (or an error it was raised from) shows; None for an error
    about one statement only (a constraint, a bug) or no error."""
    found = _find(exc)
    return None if found is None else found[0]


def _find(exc: BaseException | None) -> tuple[StoreState, BaseException] | None:
    """:func:`classify`'s state and the error in ``exc``'s chain that shows it (the innermost:
    the driver's own words, not a wrapper's)."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not e for e in chain):
        chain.append(exc)
        inner = getattr(exc, "error", None)  # the batch writer's wrappers (BeginFailed, TransactionLost)
        exc = inner if isinstance(inner, BaseException) else exc.__cause__
    for error in reversed(chain):
        state = _state_of(error)
        if state is not None:
            return state, error
    return None


def _state_of(exc: BaseException) -> StoreState | None:
    if isinstance(exc, OSError) and exc.errno in _ERRNOS:
        return _ERRNOS[exc.errno]
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _SQLITE_CODES:
        return _SQLITE_CODES[code & 0xFF]
    if not isinstance(exc, (sqlean.Error, StoreError)):
        return None  # the words of other errors mean nothing about the store
    message = str(exc).lower()
    return next((state for words, state in _SQLITE_WORDS if words in message), None)


class StoreHealth:
    """One database's ability to write (see the module docstring). Lives as long as the backend;
    everything runs on the daemon's loop."""

    def __init__(self, where: str, *, watched: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.where = where
        # Whether the backend reports every write's end (failed and succeeded): only then does a
        # failure change the state, for only a later success can change it back.
        self._watched = watched
        self._clock = clock
        self.state = StoreState.OK
        self.detail = ""
        """The driver's message of the failure that set the state."""
        self.since: float | None = None
        """When (``clock``) the store stopped writing; None while it writes."""
        self._writable: asyncio.Event | None = None
        #: Told of each change, as (new state, old state): the daemon's metric and systemd status.
        self.on_change: Callable[[StoreState, StoreState], None] | None = None

    @property
    def writable(self) -> bool:
        return self.state is StoreState.OK

    def reason(self) -> str:
        """Why the store cannot write, for readiness and status (empty while it writes)."""
        if self.writable:
            return ""
        return f"the database cannot be written: {self.state} ({self.detail})"

    def failed(self, exc: BaseException) -> bool:
        """A write failed with ``exc``; True if it shows the store cannot write (the state changes)."""
        found = _find(exc)
        if found is None:
            return False
        if not self._watched:
            return True
        if self.state is StoreState.CORRUPT:
            return True  # said once, for good: a corrupt file does not heal by itself
        state, self.detail = found[0], str(found[1])
        if state is self.state:
            return True
        old, self.state = self.state, state
        if self.since is None:
            self.since = self._clock()
        if self._writable is not None:
            self._writable.clear()
        if state is StoreState.CORRUPT:
            recovery = CORRUPT_RECOVERY.replace("FILE", self.where)
            _log.error("the database %s is corrupt (%s): %s", self.where, self.detail, recovery)
        else:
            _log.error(
                "the database %s cannot be written: %s (%s); %s",
                self.where,
                state,
                self.detail,
                _WHAT_TO_DO[state],
            )
        self._changed(old)
        return True

    def read_failed(self, exc: BaseException) -> None:
        """A read failed with ``exc``: only a corrupt file says anything about the store."""
        if classify(exc) is StoreState.CORRUPT:
            self.failed(exc)

    def succeeded(self) -> None:
        """A write was committed: the store writes (again). Not after it was found corrupt: writes
        that touch no damaged page still work, but the file stays corrupt until it is recovered."""
        if self.state is StoreState.OK or self.state is StoreState.CORRUPT:
            return
        old, self.state = self.state, StoreState.OK
        lasted = self._clock() - (self.since or self._clock())
        self.since, self.detail = None, ""
        _log.info("the database %s can be written again (it could not for %.0f s: %s)", self.where, lasted, old)
        if self._writable is not None:
            self._writable.set()
        self._changed(old)

    async def wait_writable(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the store to write again; True if it does. Someone
        must try a write meanwhile: the store learns it writes again only from one that works."""
        if self.writable:
            return True
        if self._writable is None:
            self._writable = asyncio.Event()
        try:
            async with asyncio.timeout(timeout):
                await self._writable.wait()
        except TimeoutError:
            return False
        return True

    async def retry(self, write: Callable[[], Awaitable[T]], *, going_on: Callable[[], bool] = lambda: True) -> T:
        """``write()``'s result, trying it again with back-off for as long as it fails because
        the store cannot write (and ``going_on()`` says to go on). Raises the write's last error
        when ``going_on()`` turns False, and for an error that is not the store's after a few
        tries. Cancellable: nothing is kept but what ``write`` committed."""
        backoff, others = ExponentialBackoff(_RETRY_FIRST_S, _RETRY_CAP_S), 0
        while True:
            try:
                result = await write()
            except Exception as exc:
                if not self.failed(exc) and self.writable:  # while it cannot write, any error waits
                    others += 1
                    if others >= _OTHER_TRIES:
                        raise
                if not going_on():
                    raise
                _log.debug("a write waits for the database %s: %s", self.where, exc)
            else:
                return result
            await self.pause(backoff.delay())

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds`` before trying a write again — less, when the store cannot write now
        and writes again meanwhile."""
        if self.writable:  # the error was not the store's, or it passed: only time may help
            await asyncio.sleep(seconds)
        else:
            await self.wait_writable(seconds)

    def _changed(self, old: StoreState) -> None:
        if self.on_change is not None:
            self.on_change(self.state, old)
