"""The model handlers of one agent, over ``openai.AsyncOpenAI``.

:class:`OpenAIModels` owns one client per distinct endpoint (base URL and key) of one agent.
Every call goes through :meth:`OpenAIModels._call`, the one seam where the SDK's exceptions
become troupe's :class:`~bot.errors.ModelError` family and where calls are timed and logged.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from typing import Any, TypeVar

import httpx
import openai

from bot.errors import ModelAuthError, ModelError, ModelRateLimited, ModelUnavailable
from bot.models import (
    EmbeddingBatchParams,
    EmbeddingParams,
    ImageDescriptionParams,
    ModelType,
    SpeechParams,
    SpeechStream,
    TextParams,
    TranscriptionParams,
)
from bot.text import repair_text

from ._config import Endpoint, ProviderConfig, display_url
from ._parse import audio_filename, parse_image_description, parse_json_object, probe_vector

__all__ = ["OpenAIModels"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

_T = TypeVar("_T")

_JSON_INSTRUCTION = "Reply with one JSON object and nothing else."
_IMAGE_QUESTION = "Describe this image."
_IMAGE_FORMAT = (
    'Reply with a JSON object with two keys: "title", a short title of at most eight words, '
    'and "description", a detailed description of what the image shows.'
)
# Longest excerpt of a server's error message quoted in a ModelError.
_DETAIL_LIMIT = 200
# response_format → bot.models.SpeechStream format: OpenAI's raw PCM is 24 kHz mono s16le.
_SPEECH_FORMATS = {"pcm": "pcm_24000"}


class OpenAIModels:
    """One agent's handlers and clients. Create, :meth:`register`, and :meth:`aclose` at the end.

    Handlers take ``(runtime, params)`` as bot/models.py describes. They raise
    :class:`~bot.errors.ModelError` (or a subclass) for anything the server or the model got
    wrong; the SDK already retried 408/409/429/5xx and timeouts ``max_retries`` times.
    """

    def __init__(self, config: ProviderConfig, *, agent: str) -> None:
        self.config = config
        self.agent = agent
        # One client per base URL and key: chat and embeddings share one when they can.
        self._clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        for endpoint in config.endpoints():
            if _client_key(endpoint) not in self._clients:
                self._clients[_client_key(endpoint)] = openai.AsyncOpenAI(
                    api_key=endpoint.api_key.get_secret_value(),
                    base_url=endpoint.base_url,
                    timeout=config.timeout_s,
                    max_retries=config.max_retries,
                )
        self._auth_reported: set[str] = set()

    def __repr__(self) -> str:
        return f"<OpenAIModels {self.agent} {self.config.preset}>"

    def register(self, runtime: Any) -> None:
        """Register a handler for every type this preset serves."""
        handlers: dict[ModelType, Callable[[Any, Any], Awaitable[Any]]] = {
            ModelType.TEXT_SMALL: self.text_small,
            ModelType.TEXT_LARGE: self.text_large,
            ModelType.OBJECT_SMALL: self.object_small,
            ModelType.OBJECT_LARGE: self.object_large,
            ModelType.TEXT_EMBEDDING: self.embedding,
            ModelType.TRANSCRIPTION: self.transcription,
            ModelType.IMAGE_DESCRIPTION: self.image_description,
            ModelType.TEXT_TO_SPEECH: self.text_to_speech,
        }
        for kind, handler in handlers.items():
            if kind not in self.config.types:
                continue
            runtime.register_model(kind, handler, self._endpoint(kind).provider, self.config.priority)

    async def aclose(self) -> None:
        """Close every client; safe to call again."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()

    # -- handlers -------------------------------------------------------------------------

    async def text_small(self, runtime: Any, params: TextParams) -> str:
        return await self._text(runtime, params, ModelType.TEXT_SMALL, self.config.small_model)

    async def text_large(self, runtime: Any, params: TextParams) -> str:
        return await self._text(runtime, params, ModelType.TEXT_LARGE, self.config.large_model)

    async def object_small(self, runtime: Any, params: TextParams) -> dict[str, Any]:
        return await self._object(runtime, params, ModelType.OBJECT_SMALL, self.config.small_model)

    async def object_large(self, runtime: Any, params: TextParams) -> dict[str, Any]:
        return await self._object(runtime, params, ModelType.OBJECT_LARGE, self.config.large_model)

    async def embedding(
        self, runtime: Any, params: EmbeddingParams | EmbeddingBatchParams | str | None
    ) -> list[float] | list[list[float]]:
        """The text's vector, or with ``{"texts": [...]}`` one vector per text from a single request;
        ``None`` asks for the dimension probe, answered without a request."""
        dimensions = self.config.embedding_dimensions
        if params is None:
            return probe_vector(dimensions)
        if isinstance(params, str):
            texts, batch = [params], False
        elif "texts" in params:
            texts, batch = list(params["texts"]), True  # type: ignore[typeddict-item]
        else:
            texts, batch = [params["text"]], False
        endpoint = self._endpoint(ModelType.TEXT_EMBEDDING)
        model = self.config.embedding_model
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise ModelError(
                "cannot embed empty text",
                provider=endpoint.provider,
                model_type=ModelType.TEXT_EMBEDDING,
                agent=self.agent,
            )
        extra: dict[str, Any] = {}
        # Only text-embedding-3 models take ``dimensions``; others reject or ignore it.
        if model.startswith("text-embedding-3"):
            extra["dimensions"] = dimensions
        request: str | list[str] = texts if batch else texts[0]
        response = await self._call(
            ModelType.TEXT_EMBEDDING,
            endpoint,
            model,
            # Floats, not the SDK's default base64: not every compatible server speaks base64.
            lambda c: c.embeddings.create(model=model, input=request, encoding_format="float", **extra),
        )
        # Servers may answer out of order; each item says which input it belongs to.
        data = sorted(response.data or [], key=lambda item: item.index)
        vectors = [list(item.embedding) for item in data]
        if len(vectors) != len(texts):
            raise ModelError(
                f"embedding model {model!r} on {endpoint.provider} returned {len(vectors)} vectors "
                f"for {len(texts)} texts",
                provider=endpoint.provider,
                model_type=ModelType.TEXT_EMBEDDING,
                agent=self.agent,
            )
        for vector in vectors:
            if len(vector) != dimensions:
                raise ModelError(
                    f"embedding model {model!r} on {endpoint.provider} returned {len(vector)} "
                    f"dimensions, but OPENAI_EMBEDDING_DIMENSIONS is {dimensions}; set it to the model's length "
                    f"or choose a model that returns {dimensions}",
                    provider=endpoint.provider,
                    model_type=ModelType.TEXT_EMBEDDING,
                    agent=self.agent,
                )
        return vectors if batch else vectors[0]

    async def transcription(self, runtime: Any, params: TranscriptionParams) -> str:
        audio = bytes(params["audio"])
        filename = params.get("filename") or audio_filename(audio)
        model = self.config.transcription_model
        extra: dict[str, Any] = {}
        if params.get("language"):
            extra["language"] = params["language"]
        response = await self._call(
            ModelType.TRANSCRIPTION,
            self.config.chat,
            model,
            lambda c: c.audio.transcriptions.create(model=model, file=(filename, audio), **extra),
        )
        return repair_text(response if isinstance(response, str) else response.text).strip()

    async def image_description(self, runtime: Any, params: ImageDescriptionParams) -> dict[str, str]:
        """``{"title", "description"}``; asks for JSON and makes do with prose."""
        question = params.get("prompt") or _IMAGE_QUESTION
        model = self.config.image_model
        messages: list[Any] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"{question}\n\n{_IMAGE_FORMAT}"},
                    {"type": "image_url", "image_url": {"url": params["image_url"]}},
                ],
            }
        ]
        response = await self._call(
            ModelType.IMAGE_DESCRIPTION,
            self.config.chat,
            model,
            lambda c: c.chat.completions.create(
                model=model, messages=messages, max_tokens=self.config.image_max_tokens
            ),
        )
        return parse_image_description(self._content(response, ModelType.IMAGE_DESCRIPTION))

    async def text_to_speech(self, runtime: Any, params: SpeechParams) -> bytes | SpeechStream:
        """Audio bytes in ``params["format"]`` (mp3 by default); with ``stream``, a SpeechStream.

        A stream is returned once its first audio has arrived (bot/models.py), so a refused key
        raises here and the runtime can try another provider. Its response stays open until the
        stream is read to the end or its ``chunks`` are closed.
        """
        model = self.config.tts_model
        audio_format = params.get("format") or "mp3"
        request: dict[str, Any] = {
            "model": model,
            "voice": params.get("voice") or self.config.tts_voice,
            "input": params["text"],
            "response_format": audio_format,
        }
        if self.config.tts_instructions:
            request["instructions"] = self.config.tts_instructions
        if params.get("stream"):
            return await self._speech_stream(model, audio_format, request)
        response = await self._call(
            ModelType.TEXT_TO_SPEECH, self.config.chat, model, lambda c: c.audio.speech.create(**request)
        )
        return response.content

    async def _speech_stream(self, model: str, audio_format: str, request: dict[str, Any]) -> SpeechStream:
        """Open a streamed speech response and read until its first audio (see text_to_speech)."""
        kind, endpoint = ModelType.TEXT_TO_SPEECH, self.config.chat
        client = self._clients.get(_client_key(endpoint))
        if client is None:
            raise ModelError(
                "the openai plugin is closed", provider=endpoint.provider, model_type=kind, agent=self.agent
            )
        started = time.perf_counter()
        # The response is entered here and left by whoever finishes with it: this method on a
        # failure, the chunk generator below otherwise.
        stack = AsyncExitStack()
        try:
            with self._translate_errors(kind, endpoint, model):
                response = await stack.enter_async_context(
                    client.audio.speech.with_streaming_response.create(**request)
                )
            chunks = response.iter_bytes()
            first = await self._next_audio(chunks, endpoint, model)
        except BaseException:
            await stack.aclose()
            raise
        if not first:
            await stack.aclose()
            raise ModelError(
                f"{model} on {endpoint.provider} returned no audio",
                provider=endpoint.provider,
                model_type=kind,
                agent=self.agent,
            )
        _log.debug(
            "%s: %s %s via %s: first audio in %.0f ms",
            self.agent,
            kind.value,
            model,
            endpoint.provider,
            (time.perf_counter() - started) * 1000,
        )

        async def rest() -> AsyncGenerator[bytes, None]:
            try:
                yield b""  # see below
                while chunk := await self._next_audio(chunks, endpoint, model):
                    yield chunk
            finally:  # read to the end, failed, or closed early by the consumer
                await stack.aclose()

        # Started up to its first (empty) yield, so that closing it runs the ``finally`` even
        # if nobody read from it: an async generator closed before it starts never runs its body.
        audio = rest()
        await anext(audio)
        return SpeechStream(_SPEECH_FORMATS.get(audio_format, audio_format), audio, endpoint.provider, first=first)

    async def _next_audio(self, chunks: AsyncIterator[bytes], endpoint: Endpoint, model: str) -> bytes:
        """The next non-empty piece of a streamed body; ``b""`` at its end."""
        kind = ModelType.TEXT_TO_SPEECH
        try:
            with self._translate_errors(kind, endpoint, model):
                async for chunk in chunks:
                    if chunk:
                        return chunk
        except httpx.HTTPError as exc:  # the body is read by httpx itself; openai does not wrap these
            raise ModelUnavailable(
                f"{kind.value} via {endpoint.provider} ({model}): the audio stream from "
                f"{display_url(endpoint.base_url)} broke ({type(exc).__name__})",
                provider=endpoint.provider,
                model_type=kind,
                agent=self.agent,
            ) from exc
        return b""

    # -- helpers --------------------------------------------------------------------------

    async def _text(self, runtime: Any, params: TextParams, kind: ModelType, model: str, **extra: Any) -> str:
        messages = self._messages(runtime, params, json_reply="response_format" in extra)
        for name in ("temperature", "max_tokens", "stop"):
            if params.get(name) is not None:
                extra[name] = params[name]
        on_delta = params.get("on_delta")
        if on_delta is not None:
            return await self._streamed_text(kind, model, messages, on_delta, extra)
        response = await self._call(
            kind, self.config.chat, model, lambda c: c.chat.completions.create(model=model, messages=messages, **extra)
        )
        return self._content(response, kind)

    async def _streamed_text(
        self, kind: ModelType, model: str, messages: list[Any], on_delta: Callable[[str], None], extra: dict[str, Any]
    ) -> str:
        """The answer, streamed: ``on_delta`` sees each piece as it arrives (voice starts speaking early)."""
        endpoint = self.config.chat
        stream = await self._call(
            kind,
            endpoint,
            model,
            lambda c: c.chat.completions.create(model=model, messages=messages, stream=True, **extra),
        )
        pieces: list[str] = []
        with self._translate_errors(kind, endpoint, model):
            async for chunk in stream:
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    pieces.append(delta)
                    on_delta(repair_text(delta))
        if not pieces:
            raise ModelError(
                f"{model} on {endpoint.provider} streamed no text ({kind.value})",
                provider=endpoint.provider,
                model_type=kind,
                agent=self.agent,
            )
        return repair_text("".join(pieces))  # halves of a pair split across pieces meet again

    async def _object(self, runtime: Any, params: TextParams, kind: ModelType, model: str) -> dict[str, Any]:
        text = await self._text(runtime, params, kind, model, response_format={"type": "json_object"})
        parsed = parse_json_object(text)
        if parsed is None:
            _log.debug("%s: %s reply that is not a JSON object: %.300r", self.agent, kind.value, text)
            raise ModelError(
                f"{model} on {self.config.chat.provider} did not return a JSON object "
                f"for {kind.value} ({len(text)} characters of something else)",
                provider=self.config.chat.provider,
                model_type=kind,
                agent=self.agent,
            )
        return parsed

    @staticmethod
    def _messages(runtime: Any, params: TextParams, *, json_reply: bool) -> list[Any]:
        # A lone surrogate (from a character file, say) would stop the request from being encoded.
        system = repair_text(params.get("system") or runtime.character.system or "") or None
        prompt = repair_text(params["prompt"])
        # OpenAI rejects json_object replies unless a message mentions JSON.
        if json_reply and "json" not in f"{system or ''} {prompt}".lower():
            system = f"{system}\n\n{_JSON_INSTRUCTION}" if system else _JSON_INSTRUCTION
        messages: list[Any] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        return messages

    def _content(self, response: Any, kind: ModelType) -> str:
        """The text of a chat completion's first choice."""
        message = response.choices[0].message if response.choices else None
        if message is None or (not message.content and getattr(message, "refusal", None)):
            reason = "refused the request" if message is not None else "returned no choices"
            raise ModelError(
                f"{response.model or 'the model'} on {self.config.chat.provider} {reason} ({kind.value})",
                provider=self.config.chat.provider,
                model_type=kind,
                agent=self.agent,
            )
        return repair_text(message.content or "")

    def _endpoint(self, kind: ModelType) -> Endpoint:
        endpoint = self.config.embedding if kind is ModelType.TEXT_EMBEDDING else self.config.chat
        if endpoint is None:  # register() never registers a handler without its endpoint
            raise ModelError(f"no endpoint serves {kind.value}", model_type=kind, agent=self.agent)
        return endpoint

    async def _call(
        self, kind: ModelType, endpoint: Endpoint, model: str, request: Callable[[openai.AsyncOpenAI], Awaitable[_T]]
    ) -> _T:
        """Make one request (the SDK retries it), translating errors and logging the timing."""
        client = self._clients.get(_client_key(endpoint))
        if client is None:
            raise ModelError(
                "the openai plugin is closed", provider=endpoint.provider, model_type=kind, agent=self.agent
            )
        started = time.perf_counter()
        with self._translate_errors(kind, endpoint, model):
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
    def _translate_errors(self, kind: ModelType, endpoint: Endpoint, model: str) -> Iterator[None]:
        """The SDK's exceptions as troupe's, most specific first, chained ``from`` the original."""
        provider = endpoint.provider
        where = f"{kind.value} via {provider} ({model})"
        try:
            yield
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            message = (
                f"{provider} refused the API key (HTTP {exc.status_code}); "
                f"check {endpoint.key_setting} for this character"
            )
            # Every call would fail the same way: say it once per agent and provider.
            if provider not in self._auth_reported:
                self._auth_reported.add(provider)
                _log.error("%s: %s", self.agent, message)
            raise ModelAuthError(message, agent=self.agent, provider=provider, model_type=kind) from exc
        except openai.RateLimitError as exc:
            retry_after = _retry_after(exc.response.headers)
            wait = f"; retry after {retry_after:g} s" if retry_after is not None else ""
            raise ModelRateLimited(
                f"{where}: rate limited{wait}: {self._detail(exc, endpoint)}",
                retry_after=retry_after,
                agent=self.agent,
                provider=provider,
                model_type=kind,
            ) from exc
        except openai.APITimeoutError as exc:
            raise ModelUnavailable(
                f"{where}: no answer from {display_url(endpoint.base_url)} within {self.config.timeout_s:g} s",
                agent=self.agent,
                provider=provider,
                model_type=kind,
            ) from exc
        except openai.APIConnectionError as exc:
            raise ModelUnavailable(
                f"{where}: cannot connect to {display_url(endpoint.base_url)}",
                agent=self.agent,
                provider=provider,
                model_type=kind,
            ) from exc
        except openai.InternalServerError as exc:
            raise ModelUnavailable(
                f"{where}: server error HTTP {exc.status_code}: {self._detail(exc, endpoint)}",
                agent=self.agent,
                provider=provider,
                model_type=kind,
            ) from exc
        except openai.APIStatusError as exc:
            raise ModelError(
                f"{where}: HTTP {exc.status_code}: {self._detail(exc, endpoint)}",
                agent=self.agent,
                provider=provider,
                model_type=kind,
            ) from exc
        except openai.OpenAIError as exc:
            raise ModelError(
                f"{where}: {type(exc).__name__}", agent=self.agent, provider=provider, model_type=kind
            ) from exc

    @staticmethod
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


def _retry_after(headers: Any) -> float | None:
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
