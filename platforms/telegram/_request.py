"""python-telegram-bot's HTTP requests made with aiohttp.

PTB's default backend (``HTTPXRequest``: httpx, httpcore and h11, all pure Python) costs about
three times the CPU per request of aiohttp, whose HTTP parser is compiled; a daemon running
many bots spends a noticeable share of its main thread there. :class:`AiohttpRequest` is a
``telegram.request.BaseRequest``, the seam PTB documents for another networking library: PTB
keeps its own policy (429 → ``RetryAfter``, 403 → ``Forbidden``, 400 → ``BadRequest`` …) and
this class only moves bytes.

What goes on the wire is what ``HTTPXRequest`` sends: form fields (objects JSON-encoded by PTB),
multipart when files are uploaded. The bot token is part of every URL path, so no error raised
here carries the URL.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit
from urllib.request import getproxies_environment

import aiohttp
import certifi
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData
from yarl import URL

from bot.sdk import BodyTooLarge, read_limited

if TYPE_CHECKING:
    from telegram._utils.types import ODVInput  # BaseRequest.do_request's own annotation

__all__ = ["MAX_BODY", "AiohttpRequest", "UpdatesRequest"]

#: The most of one answer read: a page of updates is a few MB at most, and a file bots may
#: download is 20 MB (a local Bot API server allows more, which troupe does not take anyway).
MAX_BODY = 64 * 1024 * 1024

# How long a poll held back (a lost lease, a refused token) waits before it answers itself.
_FENCED_WAIT_S = 0.5
_NO_UPDATES = b'{"ok": true, "result": []}'
# Updates kept for the inbox at most (a poll returns at most 100; each is taken at once).
_KEPT_LIMIT = 1000
_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# A token in a URL path as PTB builds them ({base_url}{token}/…, base_url ending in "bot").
_TOKEN = re.compile(r"(?<=bot)\d+:[^/\s'\"]+")
# PTB passes BaseRequest.DEFAULT_NONE (a DefaultValue) for a timeout the call did not set.
_DEFAULT = type(BaseRequest.DEFAULT_NONE)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds; ``None`` waits without limit (PTB's meaning)."""

    connect: float | None
    read: float | None
    write: float | None
    pool: float | None
    media_write: float | None


class AiohttpRequest(BaseRequest):
    """One ``aiohttp.ClientSession`` (opened by :meth:`initialize`, closed by :meth:`shutdown`)
    with at most ``connection_pool_size`` connections. The timeouts are the defaults a call uses
    when it passes none (``BaseRequest.DEFAULT_NONE``); their defaults are ``HTTPXRequest``'s.

    aiohttp has no per-write timeout: a request's small form body goes out in one write, and an
    upload's whole exchange is bounded by the sum of its pool, connect, write and read timeouts.
    """

    __slots__ = ("_pool_size", "_session", "timeouts")

    def __init__(
        self,
        connection_pool_size: int = 256,
        read_timeout: float | None = 5.0,
        write_timeout: float | None = 5.0,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 1.0,
        media_write_timeout: float | None = 20.0,
    ) -> None:
        if connection_pool_size < 1:
            raise ValueError(f"connection_pool_size must be at least 1, not {connection_pool_size}")
        self._pool_size = connection_pool_size
        self.timeouts = Timeouts(connect_timeout, read_timeout, write_timeout, pool_timeout, media_write_timeout)
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self.timeouts.read

    @property
    def closed(self) -> bool:
        """No session is open: before :meth:`initialize`, and after :meth:`shutdown`."""
        return self._session is None or self._session.closed

    async def initialize(self) -> None:
        """Open the session (in the running loop); a second call keeps the open one."""
        if not self.closed:
            return
        connector = aiohttp.TCPConnector(limit=self._pool_size, ssl=ssl.create_default_context(cafile=certifi.where()))
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self.USER_AGENT},
            # Like httpx: HTTPS_PROXY and the like are honoured when set (read only then: it costs per request).
            trust_env=bool(getproxies_environment()),
        )

    async def shutdown(self) -> None:
        """Close the session and its connections; safe to call more than once."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        write_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        connect_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        pool_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        """Send the request; return Telegram's status code and body for PTB to interpret.

        Raises:
            TimedOut: connecting, waiting for a pooled connection, or reading took too long.
            NetworkError: the connection failed (refused, reset, DNS…); the message names the
                aiohttp error but never the URL, which holds the bot token.
            RuntimeError: :meth:`initialize` was not called, or :meth:`shutdown` was.
        """
        session = self._session
        if session is None or session.closed:
            raise RuntimeError("This AiohttpRequest is not initialized: call initialize() first (Bot.initialize does)")
        files = request_data.multipart_data if request_data is not None else None
        t = self.timeouts
        read = _given(read_timeout, t.read)
        connect = _given(connect_timeout, t.connect)
        pool = _given(pool_timeout, t.pool)
        write = _given(write_timeout, t.media_write if files else t.write)
        body: aiohttp.FormData | bytes | None = None
        headers = None
        if request_data is not None and files:
            body = _multipart(request_data.json_parameters, files)
        elif request_data is not None and (fields := request_data.json_parameters):
            body, headers = urlencode(fields).encode(), _FORM
        timeout = aiohttp.ClientTimeout(
            total=_sum(pool, connect, write, read) if isinstance(body, aiohttp.FormData) else None,
            connect=_sum(pool, connect),  # aiohttp's "connect" includes the wait for a pooled connection
            sock_connect=connect,
            sock_read=read,
        )
        try:
            async with session.request(
                method, url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            ) as response:
                # Counted as it arrives: read() would hold whatever the server sends.
                answer = await read_limited(response.content.iter_any(), MAX_BODY, declared=response.content_length)
                return response.status, answer
        except BodyTooLarge as exc:
            error: NetworkError = NetworkError(f"the Bot API's answer {exc}")
        except TimeoutError as exc:
            error = TimedOut(_timed_out(exc, read, timeout.total))
        except aiohttp.ClientError as exc:
            error = NetworkError(f"aiohttp.{exc.__class__.__name__}: {_redacted(str(exc), url)}")
        # Raised outside the handlers, so the aiohttp error (whose text may quote the URL) is
        # not chained to it as its context.
        raise error


class UpdatesRequest(AiohttpRequest):
    """The long poll's request, which also keeps each update's JSON as Telegram sent it.

    The inbox (:class:`~platforms.telegram._inbox.InboxQueue`) stores every update before it
    is handled; serialising PTB's ``Update`` back with ``to_json()`` cost about a millisecond
    per update — a fifth of the daemon's CPU for a group shared by five bots. :meth:`take`
    hands over the text kept here instead, once.

    ``may_poll``: whether this daemon may poll now. A daemon that lost the character's lease (it
    was paused) must not poll again: the next getUpdates would confirm to Telegram the updates
    it received last, which the daemon holding the lease then never gets. Its polls are answered
    "no updates" without asking Telegram until it is stopped (or holds the lease again).

    ``on_refused``: Telegram answered a poll 401 Unauthorized (the token was revoked). PTB ends
    its polling for good on that (``InvalidToken``), and says so only in its own log; the poll is
    answered "no updates" here instead, so polling goes on as soon as ``may_poll`` allows again
    (the token works once more).
    """

    __slots__ = ("_may_poll", "_on_refused", "_received")

    def __init__(
        self,
        *,
        may_poll: Callable[[], bool] = lambda: True,
        on_refused: Callable[[], None] = lambda: None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._may_poll = may_poll
        self._on_refused = on_refused
        self._received: dict[int, str] = {}

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        if self._may_poll():
            status, body = await super().do_request(*args, **kwargs)
            if status != HTTPStatus.UNAUTHORIZED:
                return status, body
            self._on_refused()
        # Answered here, not by Telegram: no updates. PTB polls on (or, stopping, makes its
        # last call) and nothing is confirmed until this daemon may poll again.
        await asyncio.sleep(_FENCED_WAIT_S)
        return 200, _NO_UPDATES

    # PTB's documented hook for the JSON, a staticmethod there; PTB calls it on the instance.
    def parse_json_payload(self, payload: bytes) -> dict[str, Any]:  # type: ignore[override]
        data = super().parse_json_payload(payload)
        result = data.get("result") if isinstance(data, dict) else None
        if isinstance(result, list):
            if len(self._received) > _KEPT_LIMIT:
                self._received.clear()  # never taken (an update PTB dropped): do not keep it forever
            for update in result:
                if isinstance(update, dict) and isinstance(update_id := update.get("update_id"), int):
                    self._received[update_id] = json.dumps(update, ensure_ascii=False)
        return data

    def take(self, update_id: int) -> str | None:
        """The JSON of update ``update_id`` as received, if this poll received it; once."""
        return self._received.pop(update_id, None)


def _given(value: ODVInput[float], default: float | None) -> float | None:
    if isinstance(value, _DEFAULT):
        return default
    return value  # type: ignore[return-value]  # a DefaultValue is only ever PTB's "not given"


def _sum(*seconds: float | None) -> float | None:
    if any(s is None for s in seconds):
        return None
    return sum(s for s in seconds if s is not None)


def _multipart(fields: Mapping[str, str], files: Mapping[str, tuple[str, Any, str]]) -> aiohttp.FormData:
    # quote_fields=False: file names go out as UTF-8, as httpx sends them, not percent-encoded.
    form = aiohttp.FormData(quote_fields=False)
    for name, value in fields.items():
        form.add_field(name, value)
    for name, (filename, content, mime) in files.items():
        # aiohttp warns that a large body of raw bytes blocks the loop while written; from a
        # buffer it is written in chunks.
        body = io.BytesIO(content) if isinstance(content, bytes) else content
        form.add_field(name, body, filename=filename, content_type=mime)
    return form


def _timed_out(exc: TimeoutError, read: float | None, total: float | None) -> str:
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "Timed out connecting to Telegram (or waiting for a free connection in the pool)"
    if isinstance(exc, aiohttp.SocketTimeoutError) and read is not None:
        return f"Timed out: Telegram sent nothing for {read:g} s"
    if total is not None:
        return f"Timed out: the upload and its answer took over {total:g} s"
    return "Timed out"


def _redacted(text: str, url: str) -> str:
    """``text`` without ``url``'s path (where the token is), however aiohttp quoted it."""
    path = urlsplit(url).path
    for form in (path, URL(url).raw_path):
        if form not in ("", "/"):
            text = text.replace(form, "/<redacted>")
    return _TOKEN.sub("<redacted>", text)
