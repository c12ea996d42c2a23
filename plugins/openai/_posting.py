"""JSON posted straight over aiohttp, retried as the SDK retries: the hot path's requests.

A chat completion or an embedding through ``openai.AsyncOpenAI.post`` cost about 0.6 ms of CPU
in the client, a plain aiohttp post about 0.2 ms: the SDK's request options, its httpx request
and the httpx-to-aiohttp adaptation made the difference, on every message. So these two kinds
are posted here, over the same aiohttp session (and connections) as the SDK's other calls.

:func:`post_json` returns a 2xx reply's body, or raises :class:`HttpStatusError` (the last
reply was not a 2xx), :class:`TimeoutError` or :class:`aiohttp.ClientError`; ``Calls`` turns
those into troupe's errors, in the same words as the SDK's.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Mapping
from importlib import metadata

import aiohttp

from bot.sdk import BodyTooLarge, ExponentialBackoff, read_limited

from ._config import display_url

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_RETRY_AFTER_S",
    "BodyTooLarge",
    "HttpStatusError",
    "get_bytes",
    "longest_call_s",
    "parse_body",
    "post_json",
    "retry_after",
    "user_agent",
]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

#: A server's ``Retry-After`` is waited when it is at most this long; a longer one is not retried:
#: a minute plus a try would not fit in MODEL_TIMEOUT_S, and the caller may try another provider.
MAX_RETRY_AFTER_S = 60.0

#: The most of a reply's body read (a chat completion, a batch of embeddings, drawn images in
#: base64): far above any real one; a server that sends more (or never stops) gets an error, and
#: the daemon does not hold gigabytes for it.
MAX_REPLY_BYTES = 64 * 1024 * 1024

# The SDK's own back-off when the server names no wait: 0.5 s doubling up to 8 s, with jitter.
_RETRY_BASE_S = 0.5
_RETRY_CAP_S = 8.0

# Statuses worth asking again, as the SDK has them: request timeout, lock timeout, rate limit.
_RETRIED_STATUSES = frozenset({408, 409, 429})


class HttpStatusError(Exception):
    """The server's last reply was not a 2xx: its status, headers and parsed body."""

    def __init__(self, status: int, headers: Mapping[str, str], body: object) -> None:
        super().__init__(f"HTTP {status}")  # never the body: it may echo the key
        self.status = status
        self.headers = headers
        self.body = body


def user_agent() -> str:
    """``troupe/<version>``, sent with every request."""
    try:
        return f"troupe/{metadata.version('troupe')}"
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "troupe"


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: bytes,
    headers: Mapping[str, str],
    *,
    timeout_s: float,
    max_retries: int,
    limit: int = MAX_REPLY_BYTES,
    retry_timeouts: bool = True,
) -> bytes:
    """POST ``payload`` (JSON) to ``url``; the body of the first 2xx reply.

    Each try has ``timeout_s`` in all; a connection error, a timeout (unless ``retry_timeouts``
    is false), HTTP 408/409/429/5xx are tried again up to ``max_retries`` times, unless the
    server says ``x-should-retry: false`` (or ``true`` for any other status) or asks for a wait
    above :data:`MAX_RETRY_AFTER_S`.

    Raises:
        BodyTooLarge: a reply's body is longer than ``limit`` bytes (read no further, not retried).
    """
    return await _request(
        session,
        "POST",
        url,
        payload,
        headers,
        timeout_s=timeout_s,
        max_retries=max_retries,
        limit=limit,
        retry_timeouts=retry_timeouts,
    )


async def get_bytes(
    session: aiohttp.ClientSession, url: str, *, timeout_s: float, max_retries: int, limit: int
) -> bytes:
    """GET ``url`` (no credentials: it is another host's, such as a drawn image's address); the
    body of the first 2xx reply, retried as :func:`post_json` is.

    Raises:
        BodyTooLarge: the body is longer than ``limit`` bytes (read no further).
    """
    return await _request(session, "GET", url, None, {}, timeout_s=timeout_s, max_retries=max_retries, limit=limit)


async def _request(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    payload: bytes | None,
    headers: Mapping[str, str],
    *,
    timeout_s: float,
    max_retries: int,
    limit: int,
    retry_timeouts: bool = True,
) -> bytes:
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    backoff = ExponentialBackoff(_RETRY_BASE_S, _RETRY_CAP_S)
    retries = 0
    while True:
        try:
            async with session.request(method, url, data=payload, headers=headers, timeout=timeout) as response:
                # Counted as it arrives: content.read(n) would stop at the first chunk, read() never.
                body = await read_limited(response.content.iter_any(), limit, declared=response.content_length)
                status, reply_headers = response.status, response.headers
        except (aiohttp.ClientError, TimeoutError) as exc:
            if retries >= max_retries or (isinstance(exc, TimeoutError) and not retry_timeouts):
                raise
            wait = backoff.delay()
            _log.debug("%s from %s; trying again in %.2f s", type(exc).__name__, display_url(url), wait)
        else:
            if 200 <= status < 300:
                return body
            seconds = retry_after(reply_headers)
            if retries >= max_retries or not _should_retry(status, reply_headers, seconds):
                raise HttpStatusError(status, reply_headers, parse_body(body))
            wait = seconds if seconds is not None and 0 < seconds <= MAX_RETRY_AFTER_S else backoff.delay()
            _log.debug("HTTP %d from %s; trying again in %.2f s", status, display_url(url), wait)
        retries += 1
        await asyncio.sleep(wait)


def longest_call_s(timeout_s: float, max_retries: int) -> float:
    """The longest :func:`post_json` takes when every try uses its whole ``timeout_s`` and each
    back-off its longest (a server's ``Retry-After`` of up to :data:`MAX_RETRY_AFTER_S` aside)."""
    return (max_retries + 1) * timeout_s + max_retries * _RETRY_CAP_S


def _should_retry(status: int, headers: Mapping[str, str], seconds: float | None) -> bool:
    if seconds is not None and seconds > MAX_RETRY_AFTER_S:
        return False
    # Not a standard header, but OpenAI's: the server knows best whether trying again helps.
    said = headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return status in _RETRIED_STATUSES or status >= 500


def parse_body(body: bytes) -> object:
    """An error reply's body: its JSON, else its text."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: object = json.loads(text)
    except ValueError:
        return text
    return parsed


def retry_after(headers: Mapping[str, str]) -> float | None:
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
