"""HTTP connection pools shared by a daemon's characters: one per base URL, not one per character.

Twenty characters on one server opened twenty pools, each with its own connections, buffers and
aiohttp session. A daemon's characters now share one ``aiohttp.ClientSession`` per base URL:
chat completions and embeddings are posted on it directly (``_posting``), and the SDK's client
for the other calls (``openai.DefaultAioHttpClient``, opened on the first of them) sends over
it too, so that one pool of connections serves both. Each character keeps its own
``openai.AsyncOpenAI`` (its key, timeout and retries, sent with every request) on top of it.
The pools belong to the daemon (``runtime.shared.instance_of(HttpPools)``) and close when the last
character using them closes — when the daemon closes, or when a reload leaves none — never
while another character still uses them. So do the lines in front of the servers
(:class:`~plugins.openai._queue.ServerQueue`): the characters of a daemon take turns at a
server that answers one request at a time.
"""

from __future__ import annotations

import ssl
from urllib.request import getproxies_environment

import aiohttp
import certifi
import openai
from openai._vendor.httpx_aiohttp.transport import AiohttpTransport

from ._queue import ServerQueue

__all__ = ["HttpPools"]


class HttpPools:
    """One daemon's HTTP sessions for the openai plugin, by base URL. Each user :meth:`join`\\ s
    once and :meth:`leave`\\ s once; the last to leave closes them all."""

    def __init__(self) -> None:
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._clients: dict[str, openai.DefaultAioHttpClient] = {}
        self._queues: dict[str, ServerQueue] = {}
        self._users = 0

    @property
    def opened(self) -> int:
        """How many pools are open."""
        return len(self._sessions)

    def join(self) -> None:
        """Count one more user (a character's plugin), until its :meth:`leave`."""
        self._users += 1

    def session(self, base_url: str) -> aiohttp.ClientSession:
        """The aiohttp session for ``base_url``, opened on first use; for users that have joined."""
        if self._users < 1:
            raise RuntimeError("HttpPools.session() before join(): nobody would close the pool")
        found = self._sessions.get(base_url)
        if found is None:
            # Timeouts are per request. Certificates are certifi's, as the SDK's own client had them.
            connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=certifi.where()))
            found = self._sessions[base_url] = aiohttp.ClientSession(
                connector=connector,
                # Like the SDK's httpx: HTTPS_PROXY and the like are honoured when set (read only
                # then: it costs a thread hop per request).
                trust_env=bool(getproxies_environment()),
            )
        return found

    def client(self, base_url: str) -> openai.DefaultAioHttpClient:
        """The SDK's HTTP client for ``base_url``, over :meth:`session`'s connections; opened on first use."""
        found = self._clients.get(base_url)
        if found is None:
            # Timeouts are the SDK client's, sent with each request; the transport is aiohttp's,
            # which costs about a quarter less CPU per request than the default httpx2's.
            transport = AiohttpTransport(client=self.session(base_url))
            found = self._clients[base_url] = openai.DefaultAioHttpClient(transport=transport)
        return found

    def queue(self, base_url: str, limit: int) -> ServerQueue:
        """The line in front of ``base_url``, shared by the daemon's characters: at most ``limit``
        requests at once (0: no limit). The character that asked last sets the limit (a reload
        that changes it applies at once)."""
        found = self._queues.get(base_url)
        if found is None:
            found = self._queues[base_url] = ServerQueue(limit)
        elif found.limit != limit:
            found.limit = limit
        return found

    def waiting(self, base_url: str) -> int:
        """How many requests wait their turn at ``base_url`` now."""
        found = self._queues.get(base_url)
        return found.waiting if found is not None else 0

    async def leave(self) -> None:
        """Count one user fewer; the last one out closes every pool (a later user opens new ones)."""
        self._users = max(0, self._users - 1)
        if self._users:
            return
        clients, self._clients = list(self._clients.values()), {}
        sessions, self._sessions = list(self._sessions.values()), {}
        self._queues = {}
        for client in clients:
            await client.aclose()  # closes its session too
        for session in sessions:
            await session.close()
