"""One agent's ElevenLabs voice, over ``elevenlabs.AsyncElevenLabs``.

:class:`ElevenLabsSpeech` owns one client per agent. Every request goes through
:meth:`ElevenLabsSpeech._open`, the one seam where the SDK's and httpx's exceptions become
troupe's :class:`~bot.kernel.errors.ModelError` family, where retries happen (only before any audio
has arrived) and where failures are logged.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import struct
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from elevenlabs import AsyncElevenLabs, VoiceSettings
from elevenlabs.core.api_error import ApiError

from bot.sdk import (
    MAX_AUDIO_BYTES,
    BodyTooLarge,
    ExponentialBackoff,
    ModelAuthError,
    ModelError,
    ModelHost,
    ModelRateLimited,
    ModelType,
    ModelUnavailable,
    SpeechParams,
    SpeechStream,
    scrub_secret,
)

from ._config import ElevenLabsConfig

__all__ = ["ElevenLabsSpeech", "PRIORITY", "PROVIDER"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.elevenlabs")

PROVIDER = "elevenlabs"
#: Above plugins/openai (50), so OpenAI's TTS is the fallback when ElevenLabs fails.
PRIORITY = 100

# A busy or failing server may be asked again this many times, before any audio has arrived.
_MAX_RETRIES = 2
# Seconds; module-level so tests can shorten them.
_RETRY_BASE_S = 0.5
_RETRY_CAP_S = 4.0
# Longest excerpt of the server's error message quoted in a ModelError.
_DETAIL_LIMIT = 200
# What the API says in ``detail.status`` for the failures that are not the HTTP status alone.
_QUOTA = frozenset({"quota_exceeded"})
_NO_VOICE = frozenset({"voice_not_found", "voice_does_not_exist"})
# OpenAI's raw PCM is 24 kHz; asking for "pcm" gets the same here so the two are interchangeable.
_PCM_DEFAULT = "pcm_24000"


@dataclass(frozen=True, slots=True)
class _Target:
    """What to ask ElevenLabs for, and what the caller gets."""

    output_format: str
    """ElevenLabs' ``output_format``."""
    format: str
    """What the returned bytes are (bot.kernel.models.SpeechStream): ``mp3``, ``opus``, ``pcm_<rate>``, ``wav``."""

    @property
    def wav(self) -> bool:
        return self.format == "wav"

    @property
    def rate(self) -> int:
        return int(self.output_format.split("_")[1])


@dataclass(frozen=True, slots=True)
class _Failure:
    error: ModelError
    retry: bool = False
    """A busy or failing server: asking again may work."""
    retry_after: float | None = None
    """Seconds the server asked us to wait, if it said."""


class ElevenLabsSpeech:
    """One agent's TEXT_TO_SPEECH handler and client. Create, :meth:`register`, :meth:`aclose`.

    The handler returns ``bytes`` or, when ``params["stream"]``, a
    :class:`~bot.kernel.models.SpeechStream` once the first audio has arrived: a refused key, an unknown
    voice or an exhausted quota raise from the handler, where the runtime falls back to the next
    TEXT_TO_SPEECH provider, never later in the middle of playback.
    """

    def __init__(self, config: ElevenLabsConfig, *, agent: str) -> None:
        self.config = config
        self.agent = agent
        # Our own httpx client, so that aclose() can close it (the SDK offers no close).
        self._http: httpx.AsyncClient | None = httpx.AsyncClient(timeout=config.timeout_s, follow_redirects=True)
        self._client = AsyncElevenLabs(
            api_key=config.api_key.get_secret_value(),
            base_url=config.base_url,
            timeout=config.timeout_s,
            httpx_client=self._http,
        )
        self._voice_settings = VoiceSettings(
            stability=config.stability,
            similarity_boost=config.similarity_boost,
            style=config.style,
            use_speaker_boost=config.use_speaker_boost,
        )

    def __repr__(self) -> str:
        return f"<ElevenLabsSpeech {self.agent} voice {self.config.voice_id}>"

    def register(self, runtime: ModelHost) -> None:
        runtime.register_model(ModelType.TEXT_TO_SPEECH, self.text_to_speech, PROVIDER, PRIORITY)

    async def aclose(self) -> None:
        """Close the client; safe to call again. Streams still open fail with ModelUnavailable."""
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    # -- the handler ----------------------------------------------------------------------

    async def text_to_speech(self, runtime: ModelHost, params: SpeechParams | str) -> bytes | SpeechStream:
        """Speak ``params["text"]`` with the agent's voice (or ``params["voice"]``).

        ``format`` ``mp3``, ``opus`` (Ogg), ``pcm`` (24 kHz, as OpenAI's) or ``wav``; unset, the
        agent's ``ELEVENLABS_OUTPUT_FORMAT``, where ``bytes`` of a PCM format come as WAV so that
        they say their own sample rate. A stream's ``format`` says what its bytes are.

        Raises:
            ModelAuthError: the key was refused.
            ModelRateLimited: the quota is exhausted, or the server stayed busy through retries.
            ModelUnavailable: timeout, connection failure or server error.
            ModelError: an unknown voice, a format ElevenLabs cannot produce, anything else.
        """
        if isinstance(params, str):
            params = {"text": params}
        text = params["text"]
        streaming = bool(params.get("stream"))
        voice_id = params.get("voice") or self.config.voice_id
        if not text.strip():
            raise self._fail(
                ModelError(
                    "cannot speak empty text", provider=PROVIDER, model_type=ModelType.TEXT_TO_SPEECH, agent=self.agent
                )
            )
        target = _target(params.get("format"), self.config.output_format, streaming=streaming)
        if target is None:
            raise self._fail(
                ModelError(
                    f"ElevenLabs cannot produce {params.get('format')!r} audio (mp3, opus, pcm or wav)",
                    provider=PROVIDER,
                    model_type=ModelType.TEXT_TO_SPEECH,
                    agent=self.agent,
                )
            )

        def request() -> AsyncGenerator[bytes, None]:
            speak = self._client.text_to_speech.stream if streaming else self._client.text_to_speech.convert
            chunks: AsyncGenerator[bytes, None] = speak(  # both are async generator functions
                voice_id,
                text=text,
                model_id=self.config.model_id,
                output_format=target.output_format,
                voice_settings=self._voice_settings,
                optimize_streaming_latency=self.config.optimize_streaming_latency,
            )
            return chunks

        started = time.perf_counter()
        chunks, first = await self._open(request, voice_id)
        _log.debug(
            "%s: first audio from ElevenLabs (%s, %s) in %.0f ms",
            self.agent,
            self.config.model_id,
            target.output_format,
            (time.perf_counter() - started) * 1000,
        )
        rest = self._rest(chunks, voice_id, len(first))
        await anext(rest)  # into its try, so closing it closes the response even if never read
        if streaming:
            header = _wav_header(target.rate, None) if target.wav else b""
            return SpeechStream(target.format, rest, PROVIDER, first=header + first)
        audio = first + b"".join([chunk async for chunk in rest])
        return _wav_header(target.rate, len(audio)) + audio if target.wav else audio

    # -- the seam -------------------------------------------------------------------------

    async def _open(
        self, request: Callable[[], AsyncGenerator[bytes, None]], voice_id: str
    ) -> tuple[AsyncGenerator[bytes, None], bytes]:
        """Send the request and wait for the first audio, retrying a busy server.

        Returns the open chunk generator and the first chunk. A 429 that is not about the quota
        and a 5xx are retried at most ``_MAX_RETRIES`` times with back-off; nothing is retried
        once audio has arrived, since that audio may already be playing.
        """
        if self._http is None:
            raise ModelError(
                "the elevenlabs plugin is closed",
                provider=PROVIDER,
                model_type=ModelType.TEXT_TO_SPEECH,
                agent=self.agent,
            )
        backoff = ExponentialBackoff(_RETRY_BASE_S, _RETRY_CAP_S)
        retries = 0
        while True:
            chunks = request()
            try:
                first = await _first_chunk(chunks)
            except Exception as exc:
                await chunks.aclose()
                failure = self._translate(exc, voice_id)
                if failure.retry and retries < _MAX_RETRIES:
                    retries += 1
                    wait = failure.retry_after
                    delay = backoff.delay() if wait is None else min(wait, _RETRY_CAP_S)
                    _log.info(
                        "%s; asking again in %.1f s (retry %d of %d)", failure.error, delay, retries, _MAX_RETRIES
                    )
                    await asyncio.sleep(delay)
                    continue
                raise self._fail(failure.error) from exc
            except BaseException:  # cancelled: let go of the connection, then go on cancelling
                await chunks.aclose()
                raise
            if not first:
                raise self._fail(
                    ModelError(
                        f"ElevenLabs returned no audio (voice {voice_id})",
                        provider=PROVIDER,
                        model_type=ModelType.TEXT_TO_SPEECH,
                        agent=self.agent,
                    )
                )
            return chunks, first

    async def _rest(self, chunks: AsyncGenerator[bytes, None], voice_id: str, read: int) -> AsyncGenerator[bytes, None]:
        """The audio after the first chunk (``read`` bytes); the response is closed however the
        consumer stops, and cut off past :data:`~bot.kernel.bodies.MAX_AUDIO_BYTES` in all.

        Yields ``b""`` first: the caller takes it at once, so that the ``finally`` is armed. An
        async generator closed before it has started never runs its body, ``finally`` included.
        """
        try:
            yield b""
            async for chunk in chunks:
                read += len(chunk)
                if read > MAX_AUDIO_BYTES:
                    raise self._fail(self._too_long(voice_id, BodyTooLarge(read, MAX_AUDIO_BYTES)))
                if chunk:
                    yield chunk
        except ModelError:
            raise
        except Exception as exc:
            raise self._fail(self._translate(exc, voice_id, started=True).error) from exc
        finally:
            await chunks.aclose()

    def _too_long(self, voice_id: str, exc: BodyTooLarge) -> ModelError:
        return ModelError(
            f"ElevenLabs' audio for voice {voice_id} {exc}",
            provider=PROVIDER,
            model_type=ModelType.TEXT_TO_SPEECH,
            agent=self.agent,
        )

    def _fail(self, error: ModelError) -> ModelError:
        """Log the one warning line a failed call gets, and hand the error back to raise."""
        _log.warning("%s", error)
        return error

    def _translate(self, exc: Exception, voice_id: str, *, started: bool = False) -> _Failure:
        """The SDK's or httpx's exception as troupe's, and whether asking again may help.

        Most specific first: the API's ``detail.status`` says more than the HTTP status does
        (the quota running out comes as 401, like a bad key). ``started``: audio had arrived.
        """
        kind = ModelType.TEXT_TO_SPEECH
        where = f"ElevenLabs text to speech ({self.config.model_id}, voice {voice_id})"
        if started:
            where += " stopped after audio had started"

        def fail(error_type: type[ModelError], message: str, **extra: Any) -> ModelError:
            return error_type(message, agent=self.agent, provider=PROVIDER, model_type=kind, **extra)

        if isinstance(exc, ApiError):
            status = exc.status_code or 0
            code, detail = self._detail(exc.body)
            label = f"HTTP {status} {code}" if code else f"HTTP {status}"
            if code in _QUOTA:
                return _Failure(
                    fail(
                        ModelRateLimited,
                        f"the ElevenLabs quota is exhausted ({detail}); add credits to the account of "
                        "this character's ELEVENLABS_API_KEY or wait for the monthly reset",
                    )
                )
            if code in _NO_VOICE or (status == 404 and "voice" in detail.lower()):
                return _Failure(
                    fail(
                        ModelError,
                        f"ElevenLabs voice {voice_id} not found; check ELEVENLABS_VOICE_ID for this "
                        "character (the voice must be in the key's account or added from the voice library)",
                    )
                )
            if status in (401, 403):
                return _Failure(
                    fail(
                        ModelAuthError,
                        f"ElevenLabs refused the API key ({label}); check ELEVENLABS_API_KEY for this character",
                    )
                )
            retry_after = _retry_after(exc.headers or {})
            if status == 429:
                return _Failure(
                    fail(ModelRateLimited, f"{where}: rate limited ({label}): {detail}", retry_after=retry_after),
                    retry=True,
                    retry_after=retry_after,
                )
            if status >= 500:
                return _Failure(
                    fail(ModelUnavailable, f"{where}: server error {label}: {detail}"),
                    retry=True,
                    retry_after=retry_after,
                )
            return _Failure(fail(ModelError, f"{where}: {label}: {detail}"))
        host = _display_url(self.config.base_url)
        if isinstance(exc, httpx.TimeoutException):
            wait = f"{self.config.timeout_s:g} s"
            return _Failure(fail(ModelUnavailable, f"{where}: no answer from {host} within {wait}"))
        if isinstance(exc, httpx.ConnectError):
            return _Failure(fail(ModelUnavailable, f"{where}: cannot connect to {host}"))
        if isinstance(exc, httpx.TransportError):
            return _Failure(fail(ModelUnavailable, f"{where}: the connection to {host} broke ({type(exc).__name__})"))
        if self._http is None:  # closed under a running request: httpx says RuntimeError
            return _Failure(fail(ModelUnavailable, f"{where}: the elevenlabs plugin was closed"))
        return _Failure(fail(ModelError, f"{where}: {type(exc).__name__}"))

    def _detail(self, body: object) -> tuple[str | None, str]:
        """``detail.status`` and the server's own message, short, with the key taken out."""
        code: str | None = None
        text: object = body
        if isinstance(body, Mapping):
            detail = body.get("detail", body)
            if isinstance(detail, Mapping):
                code = str(detail["status"]) if detail.get("status") else None
                text = detail.get("message") or code
            else:
                text = detail
        clean = " ".join(str(text or "no details").split())
        clean = scrub_secret(clean, self.config.api_key.get_secret_value())
        return code, clean if len(clean) <= _DETAIL_LIMIT else clean[: _DETAIL_LIMIT - 1] + "…"


async def _first_chunk(chunks: AsyncIterator[bytes]) -> bytes:
    """The first non-empty chunk, or ``b""`` when the response had no audio at all."""
    async for chunk in chunks:
        if chunk:
            return chunk
    return b""


def _target(requested: str | None, configured: str, *, streaming: bool) -> _Target | None:
    """The ElevenLabs format for what the caller asked; ``None`` if ElevenLabs cannot serve it."""
    codec = configured.split("_", 1)[0]
    configured_pcm = configured if codec == "pcm" else None
    if requested is None:
        if configured_pcm and not streaming:
            return _Target(configured, "wav")  # bare PCM bytes could not say their rate
        return _Target(configured, configured if configured_pcm else codec)
    if requested == "mp3":
        return _Target(configured if codec == "mp3" else "mp3_44100_128", "mp3")
    if requested == "opus":  # ElevenLabs' Opus comes in Ogg pages, as OpenAI's does
        return _Target(configured if codec == "opus" else "opus_48000_64", "opus")
    if requested == "pcm":
        output = (configured_pcm or _PCM_DEFAULT) if streaming else _PCM_DEFAULT
        return _Target(output, output)
    if requested == "wav":
        return _Target(configured_pcm or _PCM_DEFAULT, "wav")
    return None


def _wav_header(rate: int, size: int | None) -> bytes:
    """A RIFF/WAVE header for 16-bit mono PCM; ``size`` ``None`` while the length is unknown."""
    # Streaming writers put the largest sizes in when the length is not known yet; decoders
    # (FFmpeg, browsers) then read to the end of the data.
    data = 0xFFFFFFFF if size is None else size
    riff = 0xFFFFFFFF if size is None else 36 + size
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", riff, b"WAVE", b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16, b"data", data
    )


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``Retry-After`` (seconds or an HTTP date), if the server sent it."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return max(0.0, email.utils.mktime_tz(parsed) - time.time()) if parsed else None


def _display_url(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: no credentials, path or query in messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}"
