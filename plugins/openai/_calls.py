"""The one seam to the servers: a client per endpoint, errors as troupe's, every call timed.

Every request of :class:`~plugins.openai._handlers.OpenAIModels` goes through :meth:`Calls.post_json`
(chat completions and embeddings, straight over aiohttp: see ``_posting``), :meth:`Calls.call`
(the SDK's other calls) or, for a streamed body, :meth:`Calls.translate_errors`: this is where
a server's refusals and ``openai``'s exceptions become troupe's :class:`~bot.kernel.errors.ModelError`
family, in one set of words (:meth:`Calls.status_error`, :meth:`Calls.connection_error`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import openai

from bot.sdk import (
    BodyTooLarge,
    Gauge,
    ModelAuthError,
    ModelContextExceeded,
    ModelError,
    ModelRateLimited,
    ModelRequestRejected,
    ModelType,
    ModelUnavailable,
    note_model_call,
    scrub_secret,
)

from ._config import Endpoint, ProviderConfig, display_url
from ._context import context_refusal
from ._pools import HttpPools
from ._posting import MAX_REPLY_BYTES, HttpStatusError, get_bytes, post_json, retry_after, user_agent
from ._queue import ServerQueue

__all__ = ["Calls", "http_status"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

_T = TypeVar("_T")

# Longest excerpt of a server's error message quoted in a ModelError.
_DETAIL_LIMIT = 200


class Calls:
    """One agent's clients, one per distinct endpoint (base URL and key), over the daemon's HTTP
    pools (one per base URL, shared with its other characters); :meth:`aclose` at the end.

    The SDK's clients are made on the first SDK call for their endpoint: most characters only
    chat and embed, which :meth:`post_json` does without them. Each request waits its
    :meth:`turn` at its server when the daemon's characters may send it only so many at once."""

    def __init__(
        self, config: ProviderConfig, *, agent: str, pools: HttpPools | None = None, waiting: Gauge | None = None
    ) -> None:
        self.agent = agent
        self.timeout_s = config.timeout_s
        self.max_retries = config.max_retries
        self.retry_timeouts = config.retries_timeouts
        self.max_concurrency = config.max_concurrency
        self._pools = pools if pools is not None else HttpPools()
        self._pools.join()
        self._joined = True
        # One client per base URL and key: chat and embeddings share one when they can.
        self.clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        # The headers of a direct post, per base URL and key (the key is in them).
        self._headers: dict[tuple[str, str], dict[str, str]] = {}
        # Providers whose refused key was logged already: every call would fail the same way.
        self.auth_reported: set[str] = set()
        # The daemon's line in front of each server (base URL) this agent has sent to.
        self._queues: dict[str, ServerQueue] = {}
        # The daemon's gauge of requests waiting their turn, by server.
        self._waiting = waiting

    async def aclose(self) -> None:
        """Let go of the clients and of the pools (closed by their last user); safe to call again."""
        if self._joined:
            self._joined = False
            # Not client.close(): that would close the HTTP pool the daemon's other characters use.
            self.clients = {}
            self._headers = {}
            self._queues = {}
            await self._pools.leave()

    def client(self, kind: ModelType, endpoint: Endpoint) -> openai.AsyncOpenAI:
        """The SDK's client for ``endpoint``, made on first use; ModelError once closed."""
        self._check_open(kind, endpoint)
        key = _client_key(endpoint)
        client = self.clients.get(key)
        if client is None:
            self._check_url(kind, endpoint)
            client = self.clients[key] = openai.AsyncOpenAI(
                api_key=endpoint.api_key.get_secret_value(),
                base_url=endpoint.base_url,
                timeout=self.timeout_s,
                # The SDK retries a timeout too, which a local server, still busy with the
                # abandoned request, would only queue: there, its calls are tried once.
                max_retries=self.max_retries if self.retry_timeouts else 0,
                http_client=self._pools.client(endpoint.base_url),
            )
        return client

    async def call(
        self,
        kind: ModelType,
        endpoint: Endpoint,
        model: str,
        request: Callable[[openai.AsyncOpenAI], Awaitable[_T]],
        *,
        take_turn: bool = True,
    ) -> _T:
        """Make one request through the SDK (which retries it), translating errors and logging the
        timing; in its :meth:`turn` at the server unless the caller already has one (``take_turn``)."""
        client = self.client(kind, endpoint)
        async with self.turn(kind, endpoint) if take_turn else contextlib.nullcontext():
            started = time.perf_counter()
            with self.translate_errors(kind, endpoint, model):
                result = await request(client)
        self._log_timing(kind, endpoint, model, started, result)
        return result

    @contextlib.asynccontextmanager
    async def turn(self, kind: ModelType, endpoint: Endpoint) -> AsyncIterator[None]:
        """Until this request may be sent to the endpoint's server: at once, unless the daemon's
        characters already send it as many as it takes (``OPENAI_MAX_CONCURRENCY``). The turn
        lasts until the ``async with`` ends; the wait is logged, and counts against no time limit."""
        queue = self._queues.get(endpoint.base_url)
        if queue is None:
            queue = self._queues[endpoint.base_url] = self._pools.queue(endpoint.base_url, self.max_concurrency)
        if queue.busy:
            url = display_url(endpoint.base_url)
            _log.info(
                "%s: %s waits its turn at %s (%d answering, %d waiting before it)",
                self.agent,
                kind.value,
                url,
                queue.running,
                queue.waiting,
            )
            started = time.perf_counter()
            await queue.acquire(self._waiting.labels(server=url) if self._waiting is not None else None)
            _log.debug(
                "%s: %s has its turn at %s after %.1f s", self.agent, kind.value, url, time.perf_counter() - started
            )
        else:
            await queue.acquire()
        try:
            yield
        finally:
            queue.release()

    async def post_json(
        self,
        kind: ModelType,
        endpoint: Endpoint,
        model: str,
        path: str,
        body: Mapping[str, Any],
        read: Callable[[bytes], _T],
    ) -> _T:
        """POST ``body`` as JSON to ``path`` under the endpoint's base URL, retried as the SDK
        would; ``read`` of the 2xx reply's body (its ModelErrors pass through), logged with the timing."""
        self._check_open(kind, endpoint)
        key = _client_key(endpoint)
        headers = self._headers.get(key)
        if headers is None:
            self._check_url(kind, endpoint)
            headers = self._headers[key] = {
                "Authorization": f"Bearer {endpoint.api_key.get_secret_value()}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": user_agent(),
            }
        async with self.turn(kind, endpoint):
            started = time.perf_counter()
            with self.translate_errors(kind, endpoint, model):
                raw = await post_json(
                    self._pools.session(endpoint.base_url),
                    endpoint.base_url.rstrip("/") + path,
                    json.dumps(body).encode(),
                    headers,
                    timeout_s=self.timeout_s,
                    max_retries=self.max_retries,
                    limit=MAX_REPLY_BYTES,
                    retry_timeouts=self.retry_timeouts,
                )
        result = read(raw)
        self._log_timing(kind, endpoint, model, started, result)
        return result

    async def get_bytes(self, kind: ModelType, endpoint: Endpoint, model: str, url: str, limit: int) -> bytes:
        """The body at ``url`` (what a model's answer points to), at most ``limit`` bytes; no key
        is sent. Retried and timed out as :meth:`post_json`; failures as troupe's errors."""
        self._check_open(kind, endpoint)
        with self.translate_errors(kind, endpoint, model, url):
            return await get_bytes(
                self._pools.session(endpoint.base_url),
                url,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                limit=limit,
            )

    @contextlib.contextmanager
    def translate_errors(
        self, kind: ModelType, endpoint: Endpoint, model: str, url: str | None = None
    ) -> Iterator[None]:
        """Failed requests as troupe's errors, chained ``from`` the original: the SDK's exceptions,
        a direct post's :class:`HttpStatusError`, a body over its limit (from ``url``, else the
        endpoint), and aiohttp's errors and timeouts."""
        try:
            yield
        except BodyTooLarge as exc:
            source = display_url(url or endpoint.base_url)
            raise self._error(
                kind, endpoint, ModelError, f"{_where(kind, endpoint, model)}: the answer from {source} {exc}"
            ) from None
        except HttpStatusError as exc:
            raise self.status_error(kind, endpoint, model, exc.status, exc.headers, exc.body) from exc
        except openai.APIStatusError as exc:
            raise self.status_error(kind, endpoint, model, exc.status_code, exc.response.headers, exc.body) from exc
        except (openai.APIConnectionError, aiohttp.ClientError, TimeoutError) as exc:  # APITimeoutError too
            raise self.connection_error(kind, endpoint, model, exc) from exc
        except openai.OpenAIError as exc:
            raise self._error(
                kind, endpoint, ModelError, f"{_where(kind, endpoint, model)}: {type(exc).__name__}"
            ) from exc

    def status_error(
        self, kind: ModelType, endpoint: Endpoint, model: str, status: int, headers: Mapping[str, str], body: object
    ) -> ModelError:
        """The error for a reply of HTTP ``status`` that is no success, whichever way it came."""
        provider = endpoint.provider
        where = _where(kind, endpoint, model)
        if status in (401, 403):
            message = f"{provider} refused the API key (HTTP {status}); check {endpoint.key_setting} for this character"
            # Every call would fail the same way: say it once per agent and provider.
            if provider not in self.auth_reported:
                self.auth_reported.add(provider)
                _log.error("%s: %s", self.agent, message)
            return self._error(kind, endpoint, ModelAuthError, message)
        detail = _detail(body, endpoint)
        if status == 429:
            wait_s = retry_after(headers)
            wait = f"; retry after {wait_s:g} s" if wait_s is not None else ""
            return self._error(
                kind, endpoint, ModelRateLimited, f"{where}: rate limited{wait}: {detail}", retry_after=wait_s
            )
        if status >= 500:
            return self._error(kind, endpoint, ModelUnavailable, f"{where}: server error HTTP {status}: {detail}")
        refused = context_refusal(status, body)
        if refused is not None:
            window = f" of {refused.limit} tokens" if refused.limit else ""
            return self._error(
                kind,
                endpoint,
                ModelContextExceeded,
                f"{where}: the prompt is longer than the model's context window{window} (HTTP {status}): {detail}",
                limit=refused.limit,
            )
        cls = ModelRequestRejected if status in (400, 422) else ModelError
        return self._error(kind, endpoint, cls, f"{where}: HTTP {status}: {detail}")

    def connection_error(self, kind: ModelType, endpoint: Endpoint, model: str, exc: BaseException) -> ModelError:
        """The error for no reply at all: no connection, a reply that is not HTTP, or none in time."""
        url = display_url(endpoint.base_url)
        if _timed_out(exc):
            problem = f"no answer from {url} within {self.timeout_s:g} s"
            if not self.retry_timeouts:
                problem += " (a local server: not sent again while it may still be busy with it; OPENAI_TIMEOUT_S sets the wait)"
        elif isinstance(exc, aiohttp.ClientError) and not isinstance(exc, aiohttp.ClientConnectorError):
            # Such as a reply that is not HTTP: the class says which.
            problem = f"cannot connect to {url} ({type(exc).__name__})"
        else:
            problem = f"cannot connect to {url}"
        return self._error(kind, endpoint, ModelUnavailable, f"{_where(kind, endpoint, model)}: {problem}")

    def _error(self, kind: ModelType, endpoint: Endpoint, cls: type[ModelError], text: str, **extra: Any) -> ModelError:
        return cls(text, agent=self.agent, provider=endpoint.provider, model_type=kind, **extra)

    def _check_open(self, kind: ModelType, endpoint: Endpoint) -> None:
        if not self._joined:
            raise self._error(kind, endpoint, ModelError, "the openai plugin is closed")

    def _check_url(self, kind: ModelType, endpoint: Endpoint) -> None:
        if urlsplit(endpoint.base_url).username is not None:
            # They would go as a second Authorization, which aiohttp refuses to send.
            raise self._error(
                kind,
                endpoint,
                ModelError,
                f"the {endpoint.provider} base URL {display_url(endpoint.base_url)} has a user name or password "
                f"in it, which cannot be sent along with the API key; take them out of the URL",
            )

    def _log_timing(self, kind: ModelType, endpoint: Endpoint, model: str, started: float, result: object) -> None:
        usage = getattr(result, "usage", None)
        # For the message's trace (troupe why): which model, and what the server counted.
        note_model_call(model, getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        _log.debug(
            "%s: %s %s via %s in %.0f ms (tokens: prompt %s, completion %s)",
            self.agent,
            kind.value,
            model,
            endpoint.provider,
            (time.perf_counter() - started) * 1000,
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
        )


def http_status(error: ModelError) -> int | None:
    """The HTTP status of the reply ``error`` was made of (:meth:`Calls.translate_errors`), if
    it was made of one."""
    cause = error.__cause__
    if isinstance(cause, HttpStatusError):
        return cause.status
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code
    return None


def _where(kind: ModelType, endpoint: Endpoint, model: str) -> str:
    return f"{kind.value} via {endpoint.provider} ({model})"


def _timed_out(exc: BaseException) -> bool:
    """Whether a failure is a timeout: the aiohttp transport reports a refused or dropped
    connection as the SDK's connect timeout, from an aiohttp error that is no TimeoutError."""
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        while cause is not None:
            if isinstance(cause, aiohttp.ClientError):
                return isinstance(cause, TimeoutError)
            cause = cause.__cause__
        return isinstance(exc, openai.APITimeoutError)
    return isinstance(exc, TimeoutError)


def _detail(body: object, endpoint: Endpoint) -> str:
    """The server's own error message, short, with the key taken out should it echo it.

    ``body`` is the reply's JSON (``{"error": {"message": …}}``, or the SDK's inner
    ``{"message": …}``) or its text."""
    if isinstance(body, dict):
        inner = body.get("error")
        text = body.get("message") or (inner.get("message") if isinstance(inner, dict) else inner)
    else:
        text = body
    detail = " ".join(str(text or "no details").split())
    detail = scrub_secret(detail, endpoint.api_key.get_secret_value())
    return detail if len(detail) <= _DETAIL_LIMIT else detail[: _DETAIL_LIMIT - 1] + "…"


def _client_key(endpoint: Endpoint) -> tuple[str, str]:
    return endpoint.base_url, endpoint.api_key.get_secret_value()
