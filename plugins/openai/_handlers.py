"""The model handlers of one agent: chat completions and embeddings posted as plain JSON, the
rest over ``openai.AsyncOpenAI``.

:class:`OpenAIModels` turns each model type's params into a request and the answer into what
bot/kernel/models.py promises. Every request goes through :class:`~plugins.openai._calls.Calls`, the
one seam where failures become troupe's :class:`~bot.kernel.errors.ModelError` family and where calls
are timed and logged; streamed speech is in ``_speech_stream``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from openai.types.chat import ChatCompletionMessageParam

from bot.sdk import (
    JSON,
    BodyTooLarge,
    EmbeddingBatchParams,
    EmbeddingParams,
    Gauge,
    ImageDescriptionParams,
    ImageParams,
    ModelAuthError,
    ModelContextExceeded,
    ModelError,
    ModelHost,
    ModelRateLimited,
    ModelRequestRejected,
    ModelType,
    OutgoingFile,
    ResponseSchema,
    SpeechParams,
    SpeechStream,
    TextParams,
    ToolsRefused,
    ToolTurn,
    ToolTurnParams,
    TranscriptionParams,
    repair_text,
    sniff_image_type,
)

from ._batching import EmbeddingBatches
from ._calls import Calls, http_status
from ._config import Endpoint, ProviderConfig, display_url, model_sets_length
from ._context import LearnedContexts, preset_context_length
from ._parse import (
    ChatReply,
    DrawnImage,
    audio_filename,
    parse_chat_completion,
    parse_image_description,
    parse_images,
    parse_json_object,
    parse_vectors,
    per_token_vectors,
)
from ._pools import HttpPools
from ._posting import MAX_REPLY_BYTES, longest_call_s
from ._speech_stream import open_speech_stream, read_speech
from ._structured import REFUSING_STATUSES, OutputForm, OutputForms, response_format
from ._tools import UNTRUSTED_NOTE, ToolStream, parse_tool_turn, refuses_tools, tool_messages, tool_schema
from ._vectors import SharedVectors

__all__ = ["OpenAIModels"]

# Named after the public package, like every troupe logger.
_log = logging.getLogger("plugins.openai")

# The types whose prompts are built to the model's context window.
_TEXT_MODELS = frozenset(
    {ModelType.TEXT_SMALL, ModelType.TEXT_LARGE, ModelType.OBJECT_SMALL, ModelType.OBJECT_LARGE, ModelType.TEXT_TOOLS}
)

_JSON_INSTRUCTION = "Reply with one JSON object and nothing else."
_IMAGE_QUESTION = "Describe this image."
# What is embedded to learn the model's vector length at start.
_PROBE_TEXT = "What length are your vectors?"
_MAX_IMAGE_BYTES = 25 * 1024 * 1024  # a drawn picture fetched from its URL; PNGs of 1792x1024 stay under 10 MB
_IMAGE_FORMAT = (
    'Reply with a JSON object with two keys: "title", a short title of at most eight words, '
    'and "description", a detailed description of what the image shows.'
)


class OpenAIModels:
    """One agent's handlers and clients. Create, :meth:`register`, and :meth:`aclose` at the end.

    Handlers take ``(runtime, params)`` as bot/kernel/models.py describes. They raise
    :class:`~bot.kernel.errors.ModelError` (or a subclass) for anything the server or the model got
    wrong; 408/409/429/5xx and timeouts were already retried ``max_retries`` times.
    """

    def __init__(
        self,
        config: ProviderConfig,
        *,
        agent: str,
        vectors: SharedVectors | None = None,
        pools: HttpPools | None = None,
        batches: EmbeddingBatches | None = None,
        forms: OutputForms | None = None,
        waiting: Gauge | None = None,
        contexts: LearnedContexts | None = None,
    ) -> None:
        self.config = config
        self.agent = agent
        # The daemon's pools, shared by its characters; ``waiting`` counts requests waiting their turn.
        self._calls = Calls(config, agent=agent, pools=pools, waiting=waiting)
        self._vectors = vectors or SharedVectors()  # the daemon's, so that its characters share requests
        self._batches = batches or EmbeddingBatches()  # the daemon's: texts asked for together share a request
        self._forms = forms or OutputForms()  # the daemon's: a server's refused schema form is learned once
        self._contexts = contexts or LearnedContexts()  # the daemon's: windows servers named when refusing
        # Servers (base URL, model) that refused ``tools``: refused at once from then on.
        self._no_tools: set[tuple[str, str]] = set()
        # Servers (base URL, model) that refused ``tools`` streamed: asked unstreamed from then on.
        self._unstreamed_tools: set[tuple[str, str]] = set()
        # Embedding endpoints (base URLs) that refused base64: asked for floats from then on.
        self._floats_only: set[str] = set()
        # The length of the embedding model's vectors: the setting's, else the first answer's.
        self._length: int | None = config.embedding_dimensions

    def __repr__(self) -> str:
        return f"<OpenAIModels {self.agent} {self.config.preset}>"

    @property
    def longest_call_s(self) -> float:
        """How long one request may take by this plugin's own timeouts and retries (a wait for
        the server's turn aside): what the runtime gives a model call unless MODEL_TIMEOUT_S says."""
        return longest_call_s(self.config.timeout_s, self.config.max_retries)

    def register(self, runtime: ModelHost) -> None:
        """Register a handler for every type this preset serves."""
        handlers: dict[ModelType, Callable[..., Awaitable[object]]] = {
            ModelType.TEXT_SMALL: self.text_small,
            ModelType.TEXT_LARGE: self.text_large,
            ModelType.OBJECT_SMALL: self.object_small,
            ModelType.OBJECT_LARGE: self.object_large,
            ModelType.TEXT_EMBEDDING: self.embedding,
            ModelType.TRANSCRIPTION: self.transcription,
            ModelType.IMAGE_DESCRIPTION: self.image_description,
            ModelType.TEXT_TO_SPEECH: self.text_to_speech,
            ModelType.IMAGE: self.image,
            ModelType.TEXT_TOOLS: self.text_tools,
        }
        for kind, handler in handlers.items():
            if kind not in self.config.types:
                continue
            window = self._context_length_of(kind) if kind in _TEXT_MODELS else None
            runtime.register_model(
                kind,
                handler,
                self._endpoint(kind).provider,
                self.config.priority,
                timeout_s=self.longest_call_s,
                context_length=window,
            )

    def context_length(self, kind: ModelType) -> int:
        """The context window of ``kind``'s model: what its server said when it refused a longer
        prompt, else ``MODEL_CONTEXT_LENGTH``, else the preset's guess."""
        model = self._model_of(kind)
        base_url = self.config.chat.base_url
        learned = self._contexts.get(base_url, model)
        if learned is not None:
            return learned
        if self.config.context_length is not None:
            return self.config.context_length
        return preset_context_length(self.config.preset, base_url, model)

    def _context_length_of(self, kind: ModelType) -> Callable[[], int]:
        return lambda: self.context_length(kind)

    def _model_of(self, kind: ModelType) -> str:
        small = kind in (ModelType.TEXT_SMALL, ModelType.OBJECT_SMALL)
        return self.config.small_model if small else self.config.large_model

    async def aclose(self) -> None:
        """Close every client; safe to call again."""
        await self._calls.aclose()

    # -- handlers -------------------------------------------------------------------------

    async def text_small(self, runtime: ModelHost, params: TextParams) -> str:
        return await self._text(runtime, params, ModelType.TEXT_SMALL, self.config.small_model)

    async def text_large(self, runtime: ModelHost, params: TextParams) -> str:
        return await self._text(runtime, params, ModelType.TEXT_LARGE, self.config.large_model)

    async def object_small(self, runtime: ModelHost, params: TextParams) -> JSON:
        return await self._object(runtime, params, ModelType.OBJECT_SMALL, self.config.small_model)

    async def object_large(self, runtime: ModelHost, params: TextParams) -> JSON:
        return await self._object(runtime, params, ModelType.OBJECT_LARGE, self.config.large_model)

    async def embedding(
        self, runtime: ModelHost, params: EmbeddingParams | EmbeddingBatchParams | str | None
    ) -> list[float] | list[list[float]]:
        """The text's vector, or with ``{"texts": [...]}`` one vector per text from a single request;
        ``None`` asks for the model's vector length: one request, whose vector says it (and is
        checked against ``OPENAI_EMBEDDING_DIMENSIONS`` when that is set)."""
        dimensions = self.config.embedding_dimensions
        if params is None and dimensions and model_sets_length(self.config.embedding_model):
            # The server returns the length it is asked for: no request at every start.
            return [0.0] * dimensions
        if params is None:
            texts, batch = [_PROBE_TEXT], False
        elif isinstance(params, str):
            texts, batch = [params], False
        elif "texts" in params:
            texts, batch = list(params["texts"]), True  # type: ignore[typeddict-item]
        else:
            texts, batch = [params["text"]], False
        endpoint = self._endpoint(ModelType.TEXT_EMBEDDING)
        model = self.config.embedding_model
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise self._error("cannot embed empty text", ModelType.TEXT_EMBEDDING, endpoint)
        extra: dict[str, Any] = {}
        # Only text-embedding-3 models take ``dimensions``; others reject or ignore it.
        if model_sets_length(model):
            extra["dimensions"] = dimensions
        if batch or params is None:
            found: list[float] | list[list[float]] = await self._embed(endpoint, model, texts, extra, batch=batch)
            return found
        text = texts[0]
        line = (endpoint.base_url, endpoint.api_key.get_secret_value(), model, dimensions or 0)

        async def send(together: list[str]) -> list[list[float]]:
            if len(together) == 1:  # asked as one string, as a request of its own always was
                return [await self._embed(endpoint, model, together, extra, batch=False)]
            vectors: list[list[float]] = await self._embed(endpoint, model, together, extra, batch=True)
            return vectors

        return await self._vectors.vector(
            (endpoint.base_url, model, dimensions or 0, text), lambda: self._batches.vector(line, text, send)
        )

    async def _embed(
        self, endpoint: Endpoint, model: str, texts: list[str], extra: dict[str, Any], *, batch: bool
    ) -> Any:
        """One request for the vectors of ``texts`` (``batch``: a list of them, else the one), checked."""
        request: str | list[str] = texts if batch else texts[0]
        body = {"model": model, "input": request, "encoding_format": "base64", **extra}
        if endpoint.base_url in self._floats_only:
            body["encoding_format"] = "float"
        try:
            raw = await self._post_embeddings(endpoint, model, body)
        except ModelRequestRejected:
            if body["encoding_format"] == "float":
                raise
            # Some gateways refuse base64 (the SDK's own default); floats are the format every
            # server speaks. If floats are refused too, that error is the one that says why.
            raw = await self._post_embeddings(endpoint, model, {**body, "encoding_format": "float"})
            self._floats_only.add(endpoint.base_url)
            _log.info(
                "%s: %s refused base64 embeddings; asking it for floats from now on", self.agent, endpoint.provider
            )
        vectors = parse_vectors(raw)
        if vectors is None and per_token_vectors(raw):
            raise self._error(
                f"embedding model {model!r} on {endpoint.provider} answered one vector per token, not one per "
                "text: the server does not pool them (start llama.cpp's server with --pooling mean, or serve "
                f"an embedding model), or set {self._model_setting()} to none to search by keywords alone",
                ModelType.TEXT_EMBEDDING,
                endpoint,
            )
        if vectors is None:
            raise self._error(
                f"embedding model {model!r} on {endpoint.provider} answered something that is not a list of vectors",
                ModelType.TEXT_EMBEDDING,
                endpoint,
            )
        if len(vectors) != len(texts):
            raise self._error(
                f"embedding model {model!r} on {endpoint.provider} returned {len(vectors)} vectors "
                f"for {len(texts)} texts",
                ModelType.TEXT_EMBEDDING,
                endpoint,
            )
        for vector in vectors:
            self._check_length(endpoint, model, len(vector))
        return vectors if batch else vectors[0]

    def _check_length(self, endpoint: Endpoint, model: str, length: int) -> None:
        """Every vector has the length of the first (or of ``OPENAI_EMBEDDING_DIMENSIONS``)."""
        expected = self._length
        if expected is None and length > 0:
            self._length = length  # the model's own length, learned from its first answer
            return
        if length == expected:
            return
        if length == 0:
            reason = "an empty vector"
        elif self.config.embedding_dimensions is not None:
            reason = (
                f"{length} dimensions, but OPENAI_EMBEDDING_DIMENSIONS is {expected}; set it to the model's length, "
                f"leave it unset to take the model's own, or choose a model that returns {expected}"
            )
        else:
            reason = (
                f"{length} dimensions where it returned {expected} before; restart the character to take the new length"
            )
        raise self._error(
            f"embedding model {model!r} on {endpoint.provider} returned {reason}", ModelType.TEXT_EMBEDDING, endpoint
        )

    def _model_setting(self) -> str:
        return "OLLAMA_EMBEDDING_MODEL" if self.config.preset == "ollama" else "OPENAI_EMBEDDING_MODEL"

    async def _post_embeddings(self, endpoint: Endpoint, model: str, body: dict[str, Any]) -> bytes:
        # Base64 (little-endian float32) by default: a sixth of the bytes of floats as JSON text,
        # and far less CPU on both sides; a server that ignores it and sends floats is read too.
        # The raw body, read by hand: the SDK builds a typed object per float (≈1,500 per vector);
        # and plain JSON posted straight over aiohttp, skipping the SDK's request machinery.
        return await self._calls.post_json(ModelType.TEXT_EMBEDDING, endpoint, model, "/embeddings", body, bytes)

    async def text_tools(self, runtime: ModelHost, params: ToolTurnParams) -> ToolTurn:
        """One round of a turn that may call tools, on the large model: the tools as OpenAI
        function tools, the prompt, and the rounds so far; the calls the model wants, or its text.

        Raises :class:`~bot.kernel.errors.ToolsRefused` when the server takes no tools (learned:
        asked no more), so that the caller offers them in its own format."""
        endpoint, model = self.config.chat, self.config.large_model
        server = (endpoint.base_url, model)
        if server in self._no_tools:
            raise self._refused(model, "it refused them before")
        system = repair_text(params.get("system") or runtime.character.system or "")
        system = f"{system}\n\n{UNTRUSTED_NOTE}" if system else UNTRUSTED_NOTE
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": repair_text(params["prompt"])},
            *tool_messages(params.get("rounds") or ()),
        ]
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": params.get("max_tokens") or self.config.max_tokens,
        }
        if params["tools"]:  # none on offer (the turn's last word): OpenAI refuses an empty list
            body["tools"] = [tool_schema(spec) for spec in params["tools"]]
        if params.get("temperature") is not None:
            body["temperature"] = params["temperature"]

        try:
            turn = await self._tool_answer(body, params.get("on_delta"))
        except ModelRequestRejected as exc:
            if isinstance(exc, ModelContextExceeded) or not refuses_tools(str(exc)):
                raise
            self._no_tools.add(server)
            _log.info(
                "%s: %s at %s takes no tools; they are offered in troupe's own format from now on",
                self.agent,
                model,
                display_url(endpoint.base_url),
            )
            raise self._refused(model, f"HTTP {http_status(exc)}") from exc
        return ToolTurn(text=repair_text(turn.text), calls=turn.calls)

    async def _tool_answer(self, body: dict[str, Any], on_delta: Callable[[str], None] | None) -> ToolTurn:
        """The answer to a ``TEXT_TOOLS`` request: streamed when asked for with ``on_delta``, unless
        this server refused that before. A server that refuses streamed tools (an older llama.cpp:
        "Cannot use tools with stream"), or answers with no stream, is asked again at once
        unstreamed, and not streamed to again once that works; its other errors are the
        unstreamed request's."""
        kind, endpoint, model = ModelType.TEXT_TOOLS, self.config.chat, self.config.large_model
        server = (endpoint.base_url, model)
        if on_delta is None or server in self._unstreamed_tools:
            return await self._calls.post_json(kind, endpoint, model, "/chat/completions", body, self._read_tool_turn)
        answer = ToolStream(on_delta, MAX_REPLY_BYTES)
        try:
            await self._read_stream(kind, model, body, answer.take)
        except ModelError as exc:
            if answer.answered or not _refuses_streaming(exc):
                raise
            why = str(exc)
        else:
            if answer.answered:
                return answer.turn()
            why = "it answered with no stream"
        turn = await self._calls.post_json(kind, endpoint, model, "/chat/completions", body, self._read_tool_turn)
        self._unstreamed_tools.add(server)
        _log.info(
            "%s: %s at %s does not stream answers with tools (%s); they are asked for whole from now on",
            self.agent,
            model,
            display_url(endpoint.base_url),
            why,
        )
        return turn

    def _read_tool_turn(self, raw: bytes) -> ToolTurn:
        turn = parse_tool_turn(raw)
        if turn is None:
            kind, endpoint = ModelType.TEXT_TOOLS, self.config.chat
            raise self._error(
                f"{self.config.large_model} on {endpoint.provider} answered something that is not a chat "
                f"completion ({kind.value}); is {display_url(endpoint.base_url)} an OpenAI-compatible API?",
                kind,
                endpoint,
            )
        return turn

    def _refused(self, model: str, why: str) -> ToolsRefused:
        endpoint = self.config.chat
        return ToolsRefused(
            f"{model} on {endpoint.provider} takes no tools ({why}); set OPENAI_TOOLS=false to stop asking",
            provider=endpoint.provider,
            model_type=ModelType.TEXT_TOOLS,
            agent=self.agent,
        )

    async def transcription(self, runtime: ModelHost, params: TranscriptionParams) -> str:
        audio = bytes(params["audio"])
        filename = params.get("filename") or audio_filename(audio)
        model = self.config.transcription_model
        extra: dict[str, Any] = {}
        if params.get("language"):
            extra["language"] = params["language"]
        response = await self._calls.call(
            ModelType.TRANSCRIPTION,
            self.config.chat,
            model,
            lambda c: c.audio.transcriptions.create(model=model, file=(filename, audio), **extra),
        )
        return repair_text(response if isinstance(response, str) else response.text).strip()

    async def image_description(self, runtime: ModelHost, params: ImageDescriptionParams) -> dict[str, str]:
        """``{"title", "description"}``; asks for JSON and makes do with prose."""
        question = params.get("prompt") or _IMAGE_QUESTION
        model = self.config.image_model
        messages: list[ChatCompletionMessageParam] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"{question}\n\n{_IMAGE_FORMAT}"},
                    {"type": "image_url", "image_url": {"url": params["image_url"]}},
                ],
            }
        ]
        body = {"model": model, "messages": messages, "max_tokens": self.config.image_max_tokens}
        return parse_image_description(await self._chat(ModelType.IMAGE_DESCRIPTION, model, body))

    async def image(self, runtime: ModelHost, params: ImageParams) -> list[OutgoingFile]:
        """The picture drawn for ``params["prompt"]`` (``/images/generations``, one image): from
        the answer's base64, or fetched from its URL (bounded, without the key)."""
        endpoint, model = self.config.chat, self.config.drawing_model
        prompt = repair_text(params["prompt"]).strip()
        if not prompt:
            raise self._error("cannot draw an empty prompt", ModelType.IMAGE, endpoint)
        body: dict[str, Any] = {
            "model": model,
            "prompt": prompt,
            "n": 1,
            "size": params.get("size") or self.config.image_size,
        }
        if not model.startswith("gpt-image"):  # those always answer base64, and refuse being asked
            body["response_format"] = "b64_json"

        def read(raw: bytes) -> list[DrawnImage]:
            images = parse_images(raw)
            if images is None:
                raise self._error(
                    f"{model} on {endpoint.provider} answered something that is not a list of images; "
                    f"does {display_url(endpoint.base_url)} serve /images/generations?",
                    ModelType.IMAGE,
                    endpoint,
                )
            return images

        drawn = await self._calls.post_json(ModelType.IMAGE, endpoint, model, "/images/generations", body, read)
        pictures = []
        for number, image in enumerate(drawn, start=1):
            data = image.data
            if data is None:
                assert image.url is not None  # parse_images gives one or the other
                data = await self._calls.get_bytes(ModelType.IMAGE, endpoint, model, image.url, _MAX_IMAGE_BYTES)
            kind = sniff_image_type(data)
            if kind is None:
                raise self._error(
                    f"{model} on {endpoint.provider} returned {len(data)} bytes that are not a PNG, JPEG, WebP or GIF",
                    ModelType.IMAGE,
                    endpoint,
                )
            name = f"image-{number}.{kind.removeprefix('image/').replace('jpeg', 'jpg')}"
            pictures.append(OutgoingFile.of_bytes(data, name, kind, description=image.revised_prompt or prompt))
        return pictures

    async def text_to_speech(self, runtime: ModelHost, params: SpeechParams) -> bytes | SpeechStream:
        """Audio bytes in ``params["format"]`` (mp3 by default); with ``stream``, a SpeechStream.

        A stream is returned once its first audio has arrived (bot/kernel/models.py), so a refused key
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
            return await open_speech_stream(self._calls, self.config.chat, model, audio_format, request)
        return await read_speech(self._calls, self.config.chat, model, audio_format, request)

    # -- helpers --------------------------------------------------------------------------

    async def _text(self, runtime: ModelHost, params: TextParams, kind: ModelType, model: str, **extra: Any) -> str:
        """The answer; with a ``schema``, asked in the first form this server takes (see ``_structured``)."""
        schema = params.get("schema")
        if schema is None or "response_format" in extra:  # OBJECT calls ask for JSON their own way
            return await self._ask(runtime, params, kind, model, extra)
        server = (self.config.chat.base_url, model)
        form = self._forms.first(server, self.config.structured_output)
        refused: list[str] = []
        while True:
            try:
                answer = await self._ask(runtime, params, kind, model, extra, schema, form)
            except ModelError as exc:
                status = http_status(exc)
                # A prompt too long for the model is refused in every form: no form to learn.
                if form is OutputForm.NONE or status not in REFUSING_STATUSES or isinstance(exc, ModelContextExceeded):
                    raise
                # Asked again at once in the next form, so that this turn is not lost.
                refused.append(f"{form.value} (HTTP {status})")
                form = form.next()
                continue
            # Learned only once a later form was taken: a refusal for another reason (a prompt
            # too long) fails every form alike and teaches nothing.
            if refused and self._forms.accepted(server, form):
                asked = f"JSON schemas as {form.value}" if form is not OutputForm.NONE else "no JSON schema"
                _log.info(
                    "%s: %s at %s refused response_format %s; asking it for %s from now on",
                    self.agent,
                    model,
                    display_url(self.config.chat.base_url),
                    " and ".join(refused),
                    asked,
                )
            return answer

    async def _ask(
        self,
        runtime: ModelHost,
        params: TextParams,
        kind: ModelType,
        model: str,
        extra: dict[str, Any],
        schema: ResponseSchema | None = None,
        form: OutputForm = OutputForm.NONE,
    ) -> str:
        """One chat completion (streamed when ``params`` has ``on_delta``), with ``schema`` in ``form``."""
        extra = dict(extra)
        constrained = response_format(form, schema) if schema is not None else None
        if constrained is not None:
            extra["response_format"] = constrained
        held = schema if constrained is not None else None
        messages = self._messages(runtime, params, json_reply="response_format" in extra, schema=held)
        for name in ("temperature", "max_tokens", "stop"):
            if params.get(name) is not None:
                extra[name] = params[name]
        extra.setdefault("max_tokens", self.config.max_tokens)  # a caller that gave none is bounded too
        on_delta = params.get("on_delta")
        try:
            if on_delta is not None:
                return await self._streamed_text(kind, model, messages, on_delta, extra)
            return await self._chat(kind, model, {"model": model, "messages": messages, **extra})
        except ModelContextExceeded as exc:
            if exc.limit is not None and self._contexts.learn(self.config.chat.base_url, model, exc.limit):
                _log.info(
                    "%s: %s at %s takes %d tokens at most; prompts are built to fit from now on",
                    self.agent,
                    model,
                    display_url(self.config.chat.base_url),
                    exc.limit,
                )
            raise

    async def _streamed_text(
        self,
        kind: ModelType,
        model: str,
        messages: list[ChatCompletionMessageParam],
        on_delta: Callable[[str], None],
        extra: dict[str, Any],
    ) -> str:
        """The answer, streamed: ``on_delta`` sees each piece as it arrives (voice starts speaking early)."""
        endpoint = self.config.chat
        pieces: list[str] = []
        read = 0
        finish: str | None = None

        def take(chunk: Any) -> None:
            nonlocal read, finish
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                read += len(delta)
                if read > MAX_REPLY_BYTES:  # a stream that never ends is cut off, as a body is
                    raise BodyTooLarge(read, MAX_REPLY_BYTES)
                pieces.append(delta)
                on_delta(repair_text(delta))

        await self._read_stream(kind, model, {"model": model, "messages": messages, **extra}, take)
        if not pieces:
            raise self._error(f"{model} on {endpoint.provider} streamed no text ({kind.value})", kind, endpoint)
        self._note_cut(kind, model, finish, extra)
        return repair_text("".join(pieces))  # halves of a pair split across pieces meet again

    async def _read_stream(
        self, kind: ModelType, model: str, request: Mapping[str, Any], take: Callable[[Any], None]
    ) -> None:
        """Ask for the chat completion ``request`` streamed, and hand ``take`` each chunk; errors
        (``take``'s :class:`BodyTooLarge` too) as troupe's."""
        endpoint = self.config.chat
        # The server is busy until the last piece: the turn lasts as long.
        async with self._calls.turn(kind, endpoint):
            stream = await self._calls.call(
                kind,
                endpoint,
                model,
                lambda c: c.chat.completions.create(**request, stream=True),
                take_turn=False,
            )
            with self._calls.translate_errors(kind, endpoint, model):
                async for chunk in stream:
                    take(chunk)

    async def _object(self, runtime: ModelHost, params: TextParams, kind: ModelType, model: str) -> JSON:
        text = await self._text(runtime, params, kind, model, response_format={"type": "json_object"})
        parsed = parse_json_object(text)
        if parsed is None:
            _log.debug("%s: %s reply that is not a JSON object: %.300r", self.agent, kind.value, text)
            raise self._error(
                f"{model} on {self.config.chat.provider} did not return a JSON object "
                f"for {kind.value} ({len(text)} characters of something else)",
                kind,
                self.config.chat,
            )
        return parsed

    @staticmethod
    def _messages(
        runtime: ModelHost, params: TextParams, *, json_reply: bool, schema: ResponseSchema | None = None
    ) -> list[ChatCompletionMessageParam]:
        # A lone surrogate (from a character file, say) would stop the request from being encoded.
        system = repair_text(params.get("system") or runtime.character.system or "") or None
        prompt = repair_text(params["prompt"])
        if schema is not None:  # the answer is held to it: the format in words goes, a note says so
            prompt = schema.apply(prompt)
        # OpenAI rejects json_object replies unless a message mentions JSON.
        if json_reply and "json" not in f"{system or ''} {prompt}".lower():
            system = f"{system}\n\n{_JSON_INSTRUCTION}" if system else _JSON_INSTRUCTION
        messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        return messages

    async def _chat(self, kind: ModelType, model: str, body: dict[str, Any]) -> str:
        """The text of a chat completion's first choice.

        Posted as plain JSON straight over aiohttp and read by hand (retried and timed out as
        the SDK would): the SDK's request machinery and typed response cost about as much CPU as
        the rest of a message's handling."""
        endpoint = self.config.chat

        def read(raw: bytes) -> ChatReply:
            reply = parse_chat_completion(raw)
            if reply is None:
                _log.debug("%s: %s answer that is not a chat completion: %.300r", self.agent, kind.value, raw)
                raise self._error(
                    f"{model} on {endpoint.provider} answered something that is not a chat completion "
                    f"({kind.value}); is {display_url(endpoint.base_url)} an OpenAI-compatible API?",
                    kind,
                    endpoint,
                )
            return reply

        reply = await self._calls.post_json(kind, endpoint, model, "/chat/completions", body, read)
        if not reply.answered or (not reply.content and reply.refusal):
            reason = "refused the request" if reply.answered else "returned no choices"
            raise self._error(f"{reply.model or model} on {endpoint.provider} {reason} ({kind.value})", kind, endpoint)
        self._note_cut(kind, model, reply.finish_reason, body)
        return repair_text(reply.content or "")

    def _note_cut(self, kind: ModelType, model: str, finish_reason: str | None, body: Mapping[str, Any]) -> None:
        """Say when an answer was cut at its bound: what it holds is still read, and a bound met
        often is one to raise (or a model that runs on)."""
        if finish_reason == "length":
            _log.info(
                "%s: %s stopped at its bound of %s tokens (%s); reading what it wrote",
                self.agent,
                model,
                body.get("max_tokens", "?"),
                kind.value,
            )

    def _error(self, message: str, kind: ModelType, endpoint: Endpoint) -> ModelError:
        return ModelError(message, provider=endpoint.provider, model_type=kind, agent=self.agent)

    def _endpoint(self, kind: ModelType) -> Endpoint:
        endpoint = self.config.embedding if kind is ModelType.TEXT_EMBEDDING else self.config.chat
        if endpoint is None:  # register() never registers a handler without its endpoint
            raise ModelError(f"no endpoint serves {kind.value}", model_type=kind, agent=self.agent)
        return endpoint


def _refuses_streaming(error: ModelError) -> bool:
    """Whether a streamed request with tools failed as a server that cannot stream them fails:
    refused outright (400, 422; or an error that names streaming, as llama.cpp's 500 does). A
    refused key, a rate limit, a prompt too long, a refusal of tools, or a server down fails
    unstreamed alike: asking again would only double the wait."""
    if isinstance(error, ModelAuthError | ModelRateLimited | ModelContextExceeded) or refuses_tools(str(error)):
        return False
    status = http_status(error)
    return status is not None and (status in (400, 422) or "stream" in str(error).lower())
