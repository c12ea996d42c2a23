"""Telling systemd how the daemon is doing: sd_notify(3) without libsystemd.

systemd passes ``NOTIFY_SOCKET`` (a datagram socket; ``@`` means the abstract namespace) to a
``Type=notify`` service and ``WATCHDOG_USEC`` when ``WatchdogSec=`` is set. Without them every
call here does nothing, so the daemon runs the same outside systemd. Sending never blocks and
never raises: a full or vanished socket must not take the daemon down.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Mapping

__all__ = ["Notifier"]

_log = logging.getLogger(__name__)


class Notifier:
    """The service's notify socket, if systemd gave it one."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        path = env.get("NOTIFY_SOCKET", "")
        self._address = "\0" + path[1:] if path.startswith("@") else path
        self._socket: socket.socket | None = None
        self._warned = False
        self.watchdog_s = _watchdog_interval(env)

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def send(self, *assignments: str) -> bool:
        """Send ``KEY=value`` lines in one datagram; False when not sent (no socket, or an error)."""
        if not self._address:
            return False
        message = "\n".join(assignments).encode()
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._socket.setblocking(False)
            self._socket.sendto(message, self._address)
        except OSError as exc:
            if not self._warned:  # once: a broken socket would otherwise repeat this every ping
                _log.warning("could not notify systemd at %s: %s", self._address.lstrip("\0"), exc)
                self._warned = True
            return False
        return True

    def ready(self, status: str | None = None) -> None:
        self.send("READY=1", *_status(status))

    def waiting(self, status: str, seconds: float) -> None:
        """Still starting, for a reason: systemd is to wait ``seconds`` more before its start-up
        timeout (TimeoutStartSec) gives up on the service."""
        self.send(*_status(status), f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")

    def status(self, text: str) -> None:
        self.send(*_status(text))

    def reloading(self, status: str | None = None) -> None:
        # MONOTONIC_USEC lets Type=notify-reload match this message to the reload it started.
        self.send("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}", *_status(status))

    def stopping(self, status: str | None = None) -> None:
        self.send("STOPPING=1", *_status(status))

    async def keep_alive(self) -> None:
        """Ping the watchdog at half its interval, from the event loop itself: if the loop blocks,
        the pings stop and systemd restarts the service. Returns at once without a watchdog."""
        if not self._address or self.watchdog_s is None:
            return
        while True:
            self.send("WATCHDOG=1")
            await asyncio.sleep(self.watchdog_s)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _status(text: str | None) -> tuple[str, ...]:
    return (f"STATUS={' '.join(text.split())}",) if text else ()


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Half of ``WATCHDOG_USEC`` in seconds, when the watchdog is meant for this process."""
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2e6 if usec > 0 else None
