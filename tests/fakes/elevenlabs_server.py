"""A fake ElevenLabs text-to-speech API: a real HTTP server in the test's event loop.

The real ``elevenlabs`` client talks to it, so tests exercise the production code path::

    async with FakeElevenLabsServer(keys={"xi-test-key"}) as server:
        client = AsyncElevenLabs(api_key="xi-test-key", base_url=server.url)
        chunks = [c async for c in client.text_to_speech.stream(DEFAULT_VOICE, text="Hello")]
        assert server.requests[-1].json["text"] == "Hello"

Endpoints, as the real API has them:

- ``POST /v1/text-to-speech/{voice_id}/stream``: the audio, sent in chunks (chunked transfer)
  while it is being "generated".
- ``POST /v1/text-to-speech/{voice_id}``: the same audio in one response, once all of it exists.
- anything else: 404.

Both take the key in the ``xi-api-key`` header, ``output_format`` and
``optimize_streaming_latency`` in the query, and a JSON body (``text``, ``model_id``,
``voice_settings`` …). The audio is a sine tone lasting ``seconds_per_character`` per character
of text: real MP3 (PyAV's libmp3lame) for ``mp3_<rate>_<kbps>``, Ogg/Opus (libopus) for
``opus_48000_<kbps>``, raw 16-bit little-endian mono for ``pcm_<rate>``; other formats get
HTTP 400.

Errors have the real API's shape, ``{"detail": {"status": "<code>", "message": "..."}}``:

- a key not in ``keys`` (or none): 401 ``invalid_api_key``;
- a voice not in ``voices``: ``voice_not_found_status`` (404) ``voice_not_found``;
- scripted failures: ``server.fail(Fail.quota_exceeded(), Fail.system_busy(times=1), ...)``
  queues them; each request takes the head, a ``Fail`` is sent ``times`` times (``None``: for
  ever) and then the queue moves on; an empty queue means success.

Latency, per server (change the attributes at any time): ``first_byte_delay`` before the first
audio, ``chunk_delay`` between chunks of ``chunk_seconds`` of audio each. For tests that must not
depend on timing, ``hold(after=n)`` stops generating after ``n`` chunks until ``release()``, and
``cut(after=n)`` drops the connection after ``n`` chunks (a failure after audio started).

Every request is recorded in ``server.requests`` before any failure or delay, as a
:class:`RecordedRequest` whose ``events`` grow as the response is sent (``"chunk"`` per chunk,
then ``"end"``; ``"aborted"`` when the client went away first; ``"cut"``; ``"error <status>"``).
The key itself is never kept, only whether it was known and its last four characters.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import av
import numpy as np
from aiohttp import web

from ._local import LocalServer

__all__ = ["DEFAULT_VOICE", "Fail", "FakeElevenLabsServer", "RecordedRequest", "audio_format"]

#: The voice plugin-elevenlabs uses by default ("Sarah").
DEFAULT_VOICE = "EXAVITQu4vr4xnSDxMaL"

_MP3_RATES = frozenset({8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000})
_TONE_HZ = 220.0
_AMPLITUDE = 0.3


@dataclass(frozen=True)
class Fail:
    """An error reply with the real API's body, sent ``times`` times (``None``: always)."""

    status: int
    code: str
    """``detail.status`` in the body: ``quota_exceeded``, ``system_busy`` …"""
    message: str = ""
    times: int | None = None
    retry_after: float | None = None
    """Sent as ``Retry-After`` (seconds) when given."""

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 1:
            raise ValueError("Fail.times is a count of 1 or more, or None for always")

    @classmethod
    def quota_exceeded(cls, *, status: int = 401, times: int | None = None) -> Fail:
        """Out of credits (the real API answers 401; some clients report 429)."""
        return cls(status, "quota_exceeded", "", times)

    @classmethod
    def too_many_concurrent_requests(cls, *, times: int | None = None, retry_after: float | None = None) -> Fail:
        return cls(
            429,
            "too_many_concurrent_requests",
            "You have too many concurrent requests. Your plan allows 2 concurrent requests.",
            times,
            retry_after,
        )

    @classmethod
    def system_busy(cls, *, times: int | None = None, retry_after: float | None = None) -> Fail:
        return cls(
            429,
            "system_busy",
            "Our services are experiencing high levels of traffic and cannot process your request.",
            times,
            retry_after,
        )

    @classmethod
    def server_error(cls, status: int = 500, *, times: int | None = None) -> Fail:
        return cls(status, "internal_server_error", "An internal error occurred.", times)


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    number: int
    """1 for the server's first request, and so on."""
    path: str
    voice_id: str
    streaming: bool
    """``True`` for the ``/stream`` endpoint."""
    query: dict[str, str]
    json: Any
    headers: dict[str, str]
    """Request headers without ``xi-api-key``."""
    key_known: bool
    key_suffix: str | None
    """The last four characters of the key sent, if any."""
    events: list[str] = field(default_factory=list)

    @property
    def chunks_sent(self) -> int:
        return self.events.count("chunk")


def audio_format(output_format: str) -> tuple[str, int, int | None] | None:
    """``(codec, rate, kbps)`` for an ``output_format`` (``kbps`` ``None`` for pcm); else ``None``."""
    mp3 = re.fullmatch(r"mp3_(\d+)_(\d+)", output_format)
    if mp3 and int(mp3.group(1)) in _MP3_RATES:
        return "mp3", int(mp3.group(1)), int(mp3.group(2))
    opus = re.fullmatch(r"opus_48000_(\d+)", output_format)
    if opus:
        return "opus", 48000, int(opus.group(1))
    pcm = re.fullmatch(r"pcm_(\d+)", output_format)
    if pcm and 8000 <= int(pcm.group(1)) <= 48000:
        return "pcm", int(pcm.group(1)), None
    return None


class _Queue:
    def __init__(self) -> None:
        self._items: list[Fail] = []
        self._used = 0

    def set(self, failures: Iterable[Fail]) -> None:
        self._items, self._used = list(failures), 0

    def take(self) -> Fail | None:
        if not self._items:
            return None
        head = self._items[0]
        if head.times is not None:
            self._used += 1
            if self._used >= head.times:
                self._items.pop(0)
                self._used = 0
        return head


class FakeElevenLabsServer(LocalServer):
    """An ElevenLabs-compatible TTS server on ``127.0.0.1`` (a free port), in the running loop.

    Use as an async context manager, or ``await start()`` and ``await close()``; ``close()``
    may be called any number of times and cuts every delay and hold short.
    """

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(
        self,
        *,
        keys: Iterable[str] = ("xi-test-key-0001",),
        voices: Iterable[str] = (DEFAULT_VOICE,),
        voice_not_found_status: int = 404,
        seconds_per_character: float = 0.06,
        chunk_seconds: float = 0.25,
        first_byte_delay: float = 0.0,
        chunk_delay: float = 0.0,
    ) -> None:
        self.keys = set(keys)
        self.voices = set(voices)
        self.voice_not_found_status = voice_not_found_status
        self.seconds_per_character = seconds_per_character
        self.chunk_seconds = chunk_seconds
        self.first_byte_delay = first_byte_delay
        self.chunk_delay = chunk_delay
        self.requests: list[RecordedRequest] = []
        self._failures = _Queue()
        self._hold_after: int | None = None
        self._released = asyncio.Event()
        self._cut_after: int | None = None
        super().__init__()

    # -- lifecycle ------------------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/text-to-speech/{voice_id}/stream", self._stream)
        app.router.add_post("/v1/text-to-speech/{voice_id}", self._convert)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    async def _closing(self) -> None:
        self._released.set()  # cut short any hold

    @property
    def url(self) -> str:
        """The base URL to give the client (``ELEVENLABS_BASE_URL``; no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def make_url(self, path: str) -> str:
        return f"{self.url}/{path.lstrip('/')}"

    # -- scripting ------------------------------------------------------------------------

    def fail(self, *failures: Fail) -> None:
        """Replace the queue of scripted failures (see the module docstring)."""
        self._failures.set(failures)

    def hold(self, *, after: int = 1) -> None:
        """Stop generating after ``after`` chunks of each response until :meth:`release`."""
        self._hold_after = after
        self._released.clear()

    def release(self) -> None:
        """Let held responses go on (and stop holding new ones)."""
        self._hold_after = None
        self._released.set()

    def cut(self, *, after: int = 1) -> None:
        """Drop the connection after ``after`` chunks of each streamed response."""
        self._cut_after = after

    # -- request handling -----------------------------------------------------------------

    async def _record(self, request: web.Request, *, streaming: bool) -> RecordedRequest:
        key = request.headers.get("xi-api-key", "")
        raw = await request.read()
        try:
            body: Any = await request.json() if raw else None
        except ValueError:
            body = raw
        recorded = RecordedRequest(
            number=len(self.requests) + 1,
            path=request.path,
            voice_id=request.match_info["voice_id"],
            streaming=streaming,
            query=dict(request.query),
            json=body,
            headers={k: v for k, v in request.headers.items() if k.lower() != "xi-api-key"},
            key_known=key in self.keys,
            key_suffix=key[-4:] if key else None,
        )
        self.requests.append(recorded)
        self._changed()  # what wait_for() is woken by
        return recorded

    def _refusal(self, recorded: RecordedRequest) -> web.Response | None:
        """The error reply this request gets, if any."""
        if not recorded.key_known:
            return _error(recorded, Fail(401, "invalid_api_key", "Invalid API key"))
        if recorded.voice_id not in self.voices:
            message = f"A voice for the voice_id {recorded.voice_id} was not found."
            return _error(recorded, Fail(self.voice_not_found_status, "voice_not_found", message))
        output_format = recorded.query.get("output_format", "mp3_44100_128")
        if audio_format(output_format) is None:
            message = f"The output format {output_format} is not supported by this fake."
            return _error(recorded, Fail(400, "invalid_output_format", message))
        if not isinstance(recorded.json, dict) or not isinstance(recorded.json.get("text"), str):
            return _error(recorded, Fail(400, "invalid_request", "A JSON body with text is required."))
        failure = self._failures.take()
        if failure is not None:
            if failure.code == "quota_exceeded" and not failure.message:
                text = recorded.json["text"]
                message = (
                    f"This request exceeds your quota of 10000. You have 0 credits remaining, "
                    f"while {len(text)} credits are required for this request."
                )
                failure = Fail(failure.status, failure.code, message, failure.times, failure.retry_after)
            return _error(recorded, failure)
        return None

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), seconds)

    async def _generate(self, recorded: RecordedRequest, send: Callable[[bytes], Awaitable[Any]]) -> None:
        """Make the audio chunk by chunk, pausing as configured, and ``send`` each chunk."""
        output_format = recorded.query.get("output_format", "mp3_44100_128")
        parsed = audio_format(output_format)
        assert parsed is not None  # _refusal checked it
        codec, rate, kbps = parsed
        text = recorded.json["text"]
        total = max(1, int(rate * max(0.05, self.seconds_per_character * len(text))))
        step = max(1, int(rate * self.chunk_seconds))
        encoder: _Mp3Encoder | _OggOpusEncoder | None = None
        if codec == "mp3":
            encoder = _Mp3Encoder(rate, kbps or 128)
        elif codec == "opus":
            encoder = _OggOpusEncoder(kbps or 64)
        await self._sleep(self.first_byte_delay)
        sent = 0
        for start in range(0, total, step):
            samples = _tone(start, min(step, total - start), rate)
            chunk = encoder.encode(samples) if encoder else samples.astype("<i2").tobytes()
            if start + step >= total and encoder:
                chunk += encoder.flush()
            if not chunk:
                continue  # the MP3 encoder's start-up delay: nothing to send yet
            if sent:
                await self._sleep(self.chunk_delay)
            await send(chunk)
            sent += 1
            recorded.events.append("chunk")
            if self._cut_after is not None and recorded.streaming and sent >= self._cut_after:
                raise _Cut
            if self._hold_after is not None and sent >= self._hold_after:
                await self._released.wait()

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request, streaming=True)
        refusal = self._refusal(recorded)
        if refusal is not None:
            return refusal
        response = web.StreamResponse(headers={"Content-Type": _content_type(recorded)})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await self._generate(recorded, response.write)
        except _Cut:
            recorded.events.append("cut")
            if request.transport is not None:
                request.transport.abort()
            return response
        except (asyncio.CancelledError, ConnectionResetError):
            recorded.events.append("aborted")
            raise
        await response.write_eof()
        recorded.events.append("end")
        return response

    async def _convert(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request, streaming=False)
        refusal = self._refusal(recorded)
        if refusal is not None:
            return refusal
        audio = bytearray()

        async def keep(chunk: bytes) -> None:
            audio.extend(chunk)

        try:
            await self._generate(recorded, keep)
        except asyncio.CancelledError:
            recorded.events.append("aborted")
            raise
        recorded.events.append("end")
        return web.Response(body=bytes(audio), content_type=_content_type(recorded))

    async def _unknown(self, request: web.Request) -> web.Response:
        return web.json_response({"detail": "Not Found"}, status=404)


class _Cut(Exception):
    """Raised inside generation to drop the connection (see :meth:`FakeElevenLabsServer.cut`)."""


class _Mp3Encoder:
    """Incremental MP3 encoding: mono 16-bit samples in, MP3 frames out as they are ready."""

    def __init__(self, rate: int, kbps: int) -> None:
        self._context = av.CodecContext.create("libmp3lame", "w")
        self._context.sample_rate = rate
        self._context.layout = "mono"
        self._context.format = "s16p"
        self._context.bit_rate = kbps * 1000
        self._context.open()
        self._pts = 0

    def encode(self, samples: np.ndarray) -> bytes:
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16p", layout="mono")
        frame.sample_rate = self._context.sample_rate
        frame.pts = self._pts
        self._pts += len(samples)
        return b"".join(bytes(packet) for packet in self._context.encode(frame))

    def flush(self) -> bytes:
        return b"".join(bytes(packet) for packet in self._context.encode(None))


class _OggOpusEncoder:
    """Incremental Ogg/Opus at 48 kHz mono: pages come out as they fill."""

    def __init__(self, kbps: int) -> None:
        self._buffer = io.BytesIO()
        # Short pages (100 ms) so audio leaves as it is made, as a streaming server's would.
        self._container = av.open(self._buffer, "w", format="ogg", options={"page_duration": "100000"})
        self._stream = self._container.add_stream("libopus", rate=48000)
        self._stream.layout = "mono"
        self._stream.bit_rate = kbps * 1000
        self._pts = 0
        self._taken = 0

    def _new_bytes(self) -> bytes:
        data = self._buffer.getvalue()[self._taken :]
        self._taken += len(data)
        return data

    def encode(self, samples: np.ndarray) -> bytes:
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 48000
        frame.pts = self._pts
        self._pts += len(samples)
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        return self._new_bytes()

    def flush(self) -> bytes:
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._new_bytes()


def _tone(start: int, count: int, rate: int) -> np.ndarray:
    """``count`` samples of the tone from sample ``start`` on, as int16."""
    t = np.arange(start, start + count) / rate
    return (np.sin(2 * math.pi * _TONE_HZ * t) * _AMPLITUDE * 32767).astype(np.int16)


def _content_type(recorded: RecordedRequest) -> str:
    codec = recorded.query.get("output_format", "mp3").split("_", 1)[0]
    return {"mp3": "audio/mpeg", "opus": "audio/ogg"}.get(codec, "audio/pcm")


def _error(recorded: RecordedRequest, fail: Fail) -> web.Response:
    recorded.events.append(f"error {fail.status}")
    headers = {"Retry-After": f"{fail.retry_after:g}"} if fail.retry_after is not None else {}
    body = {"detail": {"status": fail.code, "message": fail.message or f"Fake error {fail.status}"}}
    return web.json_response(body, status=fail.status, headers=headers)
