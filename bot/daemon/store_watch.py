"""The daemon's database: opened, waiting for it when that may help, and what the daemon says
about it while it cannot write.

:func:`open_store` waits for a server that cannot be reached now and, up to
``TROUPE_STORE_WAIT_S``, for a SQLite file another process holds locked. The store keeps its own :class:`~bot.store.StoreHealth` (ok, disk full, locked, corrupt …) and
logs when it changes; :class:`StoreWatch` shows it everywhere an operator looks: ``/readyz`` (not
ready, with the reason), ``troupe status``, systemd's status line, and the metrics
``troupe_store_writable`` and ``troupe_store_state{cause}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from bot.config.settings import DaemonSettings
from bot.daemon.control import StoreStatus
from bot.daemon.systemd import Notifier
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import StoreLocked, StoreUnavailable
from bot.kernel.metrics import Metrics
from bot.store import StoreBackend, StoreHealth, StoreState

__all__ = ["DATABASE_RETRY_CAP_S", "StoreWatch", "open_store"]

_log = logging.getLogger(__name__)

DATABASE_RETRY_CAP_S = 30.0  # at most this long between attempts to reach a database that is down
_LOCKED_RETRY_S = 1.0  # a locked file is tried again this soon at first (each try waits SQLite's busy timeout too)


async def open_store(
    backend: Callable[[], StoreBackend], notifier: Notifier, stopped: asyncio.Event, settings: DaemonSettings
) -> StoreBackend | None:
    """A new ``backend()``, open; None if ``stopped`` is set first.

    A server that cannot be reached now (down, restarting, its name not resolvable yet as a
    machine boots) is tried again with back-off, systemd told why (and to wait); so is a SQLite
    file another process holds locked, for up to ``settings.store_wait_s`` — then StoreLocked
    (exit 75: systemd starts troupe again, where 78 would leave it down for good). A refused
    login, an unknown database, a wrong URL or a corrupt file raises StoreError at once (exit 78).
    """
    loop = asyncio.get_running_loop()
    backoff, started = ExponentialBackoff(1.0, DATABASE_RETRY_CAP_S), loop.time()
    locked = ExponentialBackoff(_LOCKED_RETRY_S, DATABASE_RETRY_CAP_S)
    while True:
        db = backend()
        try:
            await db.open()
            if locked.attempts:
                _log.info("the database is no longer locked; starting")
            return db
        except StoreLocked as exc:
            left = settings.store_wait_s - (loop.time() - started)
            if left <= 0:
                raise StoreLocked(
                    f"{exc}; it is still locked after {settings.store_wait_s:g} s (TROUPE_STORE_WAIT_S): stop the "
                    "process holding it (fuser shows which), or wait longer; systemd starts troupe again"
                ) from None
            if not locked.attempts:
                _log.warning("%s; waiting for it up to %g s (TROUPE_STORE_WAIT_S)", exc, settings.store_wait_s)
            delay = min(locked.delay(), left)
            notifier.waiting(f"waiting for the database: {exc}", delay + DATABASE_RETRY_CAP_S)
        except StoreUnavailable as exc:
            delay = backoff.delay()
            _log.warning("%s; trying again in %.0f s", exc, delay)
            notifier.waiting(f"waiting for the database: {exc}", delay + DATABASE_RETRY_CAP_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopped.wait(), delay)
        if stopped.is_set():
            return None


class StoreWatch:
    """The daemon's view of one database's health (see the module docstring)."""

    def __init__(self, metrics: Metrics, changed: Callable[[], None]) -> None:
        self._metrics = metrics
        self._changed = changed  # the daemon's status line follows every change
        self._health: StoreHealth | None = None

    def watch(self, health: StoreHealth) -> None:
        """Follow ``health`` (the database just opened) from now on."""
        self._health = health
        health.on_change = self._on_change
        self._show(health.state)

    @property
    def writable(self) -> bool:
        return self._health is None or self._health.writable

    def not_ready(self) -> list[str]:
        """Why the store keeps the daemon from being ready: nothing while it writes."""
        return [] if self._health is None or self._health.writable else [self._health.reason()]

    def status(self) -> StoreStatus:
        health = self._health
        if health is None:
            return {"state": StoreState.OK.value, "detail": ""}
        return {"state": health.state.value, "detail": health.detail}

    def line(self, rest: str) -> str:
        """systemd's status line: ``rest``, after what keeps the database from writing, if anything."""
        if self._health is None or self._health.writable:
            return rest
        return f"database cannot write ({self._health.state}); {rest}"

    def _on_change(self, state: StoreState, old: StoreState) -> None:
        self._show(state)
        self._changed()

    def _show(self, state: StoreState) -> None:
        self._metrics.store_writable.set(state is StoreState.OK)
        for each in StoreState:
            self._metrics.store_state.labels(cause=each.value).set(each is state)
