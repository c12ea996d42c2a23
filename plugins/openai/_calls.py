"""The one seam to the SDK: a client per endpoint, its exceptions as troupe's, every call timed.

Every request of :class:`~plugins.openai._handlers.OpenAIModels` goes through :meth:`Calls.call`
(or, for a streamed body, :meth:`Calls.translate_errors`): this is where ``openai``'s exceptions
become troupe's :class:`~bot.errors.ModelError` family.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import aiohttp
import openai

from bot.errors import ModelAuthError, ModelError, ModelRateLimited, ModelRequestRejected, ModelUnavailable
from bot.models import ModelType

from ._config import Endpoint, ProviderConfig, display_url
from ._pools import HttpPools

__all__ = ["Calls"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

_T = TypeVar("_T")

# Longest excerpt of a server's error message quoted in a ModelError.
_DETAIL_LIMIT = 200


class Calls:
    """One agent's clients, one per distinct endpoint (base URL and key), over the daemon's HTTP
    pools (one per base URL, shared with its other characters); :meth:`aclose` at the end."""

    def __init__(self, config: ProviderConfig, *, agent: str, pools: HttpPools | None = None) -> None:
        self.agent = agent
        self.timeout_s = config.timeout_s
        self._pools = pools if pools is not None else HttpPools()
        self._pools.join()
        self._joined = True
        # One client per base URL and key: chat and embeddings share one when they can.
        self.clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        for endpoint in config.endpoints():
            if _client_key(endpoint) not in self.clients:
                self.clients[_client_key(endpoint)] = openai.AsyncOpenAI(
                    api_key=endpoint.api_key.get_secret_value(),
                    base_url=endpoint.base_url,
                    timeout=config.timeout_s,
                    max_retries=config.max_retries,
                    http_client=self._pools.client(endpoint.base_url),
                )
        # Providers whose refused key was logged already: every call would fail the same way.
        self.auth_reported: set[str] = set()

    async def aclose(self) -> None:
        """Let go of the clients and of the pools (closed by their last user); safe to call again."""
        if self._joined:
            self._joined = False
            # Not client.close(): that would close the HTTP pool the daemon's other characters use.
            self.clients = {}
            await self._pools.leave()

    def client(self, kind: ModelType, endpoint: Endpoint) -> openai.AsyncOpenAI:
        """The client for ``endpoint``; ModelError once closed."""
        client = self.clients.get(_client_key(endpoint))
        if client is None:
            raise ModelError(
                "the openai plugin is closed", provider=endpoint.provider, model_type=kind, agent=self.agent
            )
        return client

    async def call(
        self, kind: ModelType, endpoint: Endpoint, model: str, request: Callable[[openai.AsyncOpenAI], Awaitable[_T]]
    ) -> _T:
        """Make one request (the SDK retries it), translating errors and logging the timing."""
        client = self.client(kind, endpoint)
        started = time.perf_counter()
        with self.translate_errors(kind, endpoint, model):
            result = await request(client)
        usage = getattr(result, "usage", None)
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
        return result

    @contextmanager
    def translate_errors(self, kind: ModelType, endpoint: Endpoint, model: str) -> Iterator[None]:
        """The SDK's exceptions as troupe's, most specific first, chained ``from`` the original."""
        provider = endpoint.provider
        where = f"{kind.value} via {provider} ({model})"

        def error(cls: type[ModelError], text: str, **extra: Any) -> ModelError:
            return cls(text, agent=self.agent, provider=provider, model_type=kind, **extra)

        try:
            yield
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            message = (
                f"{provider} refused the API key (HTTP {exc.status_code}); "
                f"check {endpoint.key_setting} for this character"
            )
            # Every call would fail the same way: say it once per agent and provider.
            if provider not in self.auth_reported:
                self.auth_reported.add(provider)
                _log.error("%s: %s", self.agent, message)
            raise error(ModelAuthError, message) from exc
        except openai.RateLimitError as exc:
            retry_after = _retry_after(exc.response.headers)
            wait = f"; retry after {retry_after:g} s" if retry_after is not None else ""
            raise error(
                ModelRateLimited, f"{where}: rate limited{wait}: {_detail(exc, endpoint)}", retry_after=retry_after
            ) from exc
        except openai.APIConnectionError as exc:  # a timeout too (APITimeoutError)
            url = display_url(endpoint.base_url)
            if isinstance(exc, openai.APITimeoutError) and _timed_out(exc):
                problem = f"no answer from {url} within {self.timeout_s:g} s"
            else:
                problem = f"cannot connect to {url}"
            raise error(ModelUnavailable, f"{where}: {problem}") from exc
        except aiohttp.ClientError as exc:
            # The aiohttp transport passes on what it does not map to httpx's errors, such as a
            # reply that is not HTTP, and the SDK passes those on unwrapped.
            raise error(
                ModelUnavailable, f"{where}: cannot connect to {display_url(endpoint.base_url)} ({type(exc).__name__})"
            ) from exc
        except openai.InternalServerError as exc:
            raise error(
                ModelUnavailable, f"{where}: server error HTTP {exc.status_code}: {_detail(exc, endpoint)}"
            ) from exc
        except openai.APIStatusError as exc:
            rejected = isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError))
            cls = ModelRequestRejected if rejected else ModelError
            raise error(cls, f"{where}: HTTP {exc.status_code}: {_detail(exc, endpoint)}") from exc
        except openai.OpenAIError as exc:
            raise error(ModelError, f"{where}: {type(exc).__name__}") from exc


def _timed_out(exc: BaseException) -> bool:
    """Whether a timeout is one: the aiohttp transport reports a refused or dropped connection as
    a connect timeout, from an aiohttp error that is no TimeoutError."""
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientError):
            return isinstance(cause, TimeoutError)
        cause = cause.__cause__
    return True


def _detail(exc: openai.APIStatusError, endpoint: Endpoint) -> str:
    """The server's own error message, short, with the key taken out should it echo it."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error")
        text = body.get("message") or (inner.get("message") if isinstance(inner, dict) else inner)
    else:
        text = body
    detail = " ".join(str(text or "no details").split())
    key = endpoint.api_key.get_secret_value()
    if key:
        detail = detail.replace(key, "<redacted>")
    return detail if len(detail) <= _DETAIL_LIMIT else detail[: _DETAIL_LIMIT - 1] + "…"


def _client_key(endpoint: Endpoint) -> tuple[str, str]:
    return endpoint.base_url, endpoint.api_key.get_secret_value()


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
    value = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(value) if value else None
    if parsed is not None:
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None
