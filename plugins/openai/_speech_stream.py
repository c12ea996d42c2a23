"""Streamed speech: a response opened, read to its first audio, then handed over as a SpeechStream."""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from bot.sdk import MAX_AUDIO_BYTES, BodyTooLarge, ModelError, ModelType, ModelUnavailable, SpeechStream

from ._calls import Calls
from ._config import Endpoint, display_url

__all__ = ["open_speech_stream", "read_speech"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

# response_format → bot.kernel.models.SpeechStream format: OpenAI's raw PCM is 24 kHz mono s16le.
_SPEECH_FORMATS = {"pcm": "pcm_24000"}


async def open_speech_stream(
    calls: Calls, endpoint: Endpoint, model: str, audio_format: str, request: dict[str, Any]
) -> SpeechStream:
    """Open a streamed speech response and read until its first audio (see OpenAIModels.text_to_speech)."""
    kind = ModelType.TEXT_TO_SPEECH
    client = calls.client(kind, endpoint)
    started = time.perf_counter()
    # The response is entered here and left by whoever finishes with it: this function on a
    # failure, the chunk generator below otherwise.
    stack = AsyncExitStack()
    try:
        with calls.translate_errors(kind, endpoint, model):
            response = await stack.enter_async_context(client.audio.speech.with_streaming_response.create(**request))
        chunks = response.iter_bytes()
        first = await _next_audio(calls, chunks, endpoint, model)
    except BaseException:
        await stack.aclose()
        raise
    if not first:
        await stack.aclose()
        raise ModelError(
            f"{model} on {endpoint.provider} returned no audio",
            provider=endpoint.provider,
            model_type=kind,
            agent=calls.agent,
        )
    _log.debug(
        "%s: %s %s via %s: first audio in %.0f ms",
        calls.agent,
        kind.value,
        model,
        endpoint.provider,
        (time.perf_counter() - started) * 1000,
    )

    async def rest() -> AsyncGenerator[bytes, None]:
        read = len(first)
        try:
            yield b""  # see below
            while chunk := await _next_audio(calls, chunks, endpoint, model):
                read += len(chunk)
                if read > MAX_AUDIO_BYTES:  # a voice that never stops is cut off, not kept
                    with calls.translate_errors(kind, endpoint, model):
                        raise BodyTooLarge(read, MAX_AUDIO_BYTES)
                yield chunk
        finally:  # read to the end, failed, or closed early by the consumer
            await stack.aclose()

    # Started up to its first (empty) yield, so that closing it runs the ``finally`` even
    # if nobody read from it: an async generator closed before it starts never runs its body.
    audio = rest()
    await anext(audio)
    return SpeechStream(_SPEECH_FORMATS.get(audio_format, audio_format), audio, endpoint.provider, first=first)


async def read_speech(
    calls: Calls, endpoint: Endpoint, model: str, audio_format: str, request: dict[str, Any]
) -> bytes:
    """The whole audio of a speech request, read as it arrives, up to :data:`~bot.kernel.bodies.MAX_AUDIO_BYTES`
    (the SDK's ``audio.speech.create`` would read any length)."""
    stream = await open_speech_stream(calls, endpoint, model, audio_format, request)
    return b"".join([chunk async for chunk in stream])


def _http_errors() -> tuple[type[Exception], ...]:
    """The base errors of the HTTP libraries the openai SDK may read bodies with: httpx2 from
    openai 3 on, httpx before."""
    found: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(name).HTTPError)
    return tuple(found)


_HTTP_ERRORS = _http_errors()


async def _next_audio(calls: Calls, chunks: AsyncIterator[bytes], endpoint: Endpoint, model: str) -> bytes:
    """The next non-empty piece of a streamed body; ``b""`` at its end."""
    kind = ModelType.TEXT_TO_SPEECH
    try:
        with calls.translate_errors(kind, endpoint, model):
            async for chunk in chunks:
                if chunk:
                    return chunk
    except _HTTP_ERRORS as exc:  # the body is read by the HTTP library itself; openai does not wrap these
        raise ModelUnavailable(
            f"{kind.value} via {endpoint.provider} ({model}): the audio stream from "
            f"{display_url(endpoint.base_url)} broke ({type(exc).__name__})",
            provider=endpoint.provider,
            model_type=kind,
            agent=calls.agent,
        ) from exc
    return b""
