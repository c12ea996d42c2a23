"""The daemon's MCP sessions: one per server configuration, shared by the characters that list it.

Held by the daemon's shared state (``runtime.shared.instance_of(ServerPool)``), never in a module
global. Keyed by the configuration's fingerprint (secrets included, hashed): two characters that
list the same server the same way share its session; one that lists it with another key or
another command gets its own. A session stops when the last character using it stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._config import ServerConfig
from ._connection import ServerConnection

__all__ = ["ServerPool"]


@dataclass(slots=True)
class _Entry:
    connection: ServerConnection
    users: int = 0


class ServerPool:
    """The sessions of one daemon."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def acquire(self, config: ServerConfig) -> ServerConnection:
        """The session for ``config``, started if it is the first user; call :meth:`release` once
        for each call when done."""
        key = config.fingerprint
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(ServerConnection(config))
            entry.connection.start()
        entry.users += 1
        return entry.connection

    async def release(self, config: ServerConfig) -> None:
        """One user fewer; the last one stops the session (and a stdio server's process)."""
        key = config.fingerprint
        entry = self._entries.get(key)
        if entry is None:
            return
        entry.users -= 1
        if entry.users <= 0:
            del self._entries[key]
            await entry.connection.close()

    async def aclose(self) -> None:
        """Stop every session (the daemon is stopping)."""
        entries, self._entries = list(self._entries.values()), {}
        for entry in entries:
            await entry.connection.close()
