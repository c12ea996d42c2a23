"""HTTP connection pools shared by a daemon's characters: one per base URL, not one per character.

Twenty characters on one server opened twenty pools, each with its own connections, buffers and
aiohttp session. A daemon's characters now share one HTTP client per base URL; each keeps its
own ``openai.AsyncOpenAI`` (its key, timeout and retries, sent with every request) on top of it.
The pools belong to the daemon (``runtime.shared.one(HttpPools)``) and close when the last
character using them closes — when the daemon closes, or when a reload leaves none — never
while another character still uses them.
"""

from __future__ import annotations

import openai

__all__ = ["HttpPools"]


class HttpPools:
    """One daemon's HTTP clients for the openai plugin, by base URL. Each user :meth:`join`\\ s
    once and :meth:`leave`\\ s once; the last to leave closes them all."""

    def __init__(self) -> None:
        self._clients: dict[str, openai.DefaultAioHttpClient] = {}
        self._users = 0

    @property
    def opened(self) -> int:
        """How many pools are open."""
        return len(self._clients)

    def join(self) -> None:
        """Count one more user (a character's plugin), until its :meth:`leave`."""
        self._users += 1

    def client(self, base_url: str) -> openai.DefaultAioHttpClient:
        """The HTTP client for ``base_url``, opened on first use; for users that have joined."""
        if self._users < 1:
            raise RuntimeError("HttpPools.client() before join(): nobody would close the pool")
        found = self._clients.get(base_url)
        if found is None:
            # Timeouts are the SDK client's, sent with each request; the transport is aiohttp's,
            # which costs about a quarter less CPU per request than the default httpx2's.
            found = self._clients[base_url] = openai.DefaultAioHttpClient()
        return found

    async def leave(self) -> None:
        """Count one user fewer; the last one out closes every pool (a later user opens new ones)."""
        self._users = max(0, self._users - 1)
        if self._users:
            return
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
