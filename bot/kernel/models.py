"""Model types and the shapes of their parameters.

A model plugin registers a handler per type (``runtime.register_model``); the runtime picks the
highest-priority handler and falls back to the next when one fails (``runtime.use_model``).

Handlers are ``async def handler(runtime, params) -> result``:

==================  ====================================  =======================================
type                params                                result
==================  ====================================  =======================================
TEXT_SMALL/LARGE    :class:`TextParams`                   ``str`` (with a ``schema`` in force,
                                                          the JSON object as text)
OBJECT_SMALL/LARGE  :class:`TextParams`                   ``dict`` (parsed JSON)
TEXT_EMBEDDING      :class:`EmbeddingParams` or ``None``  ``list[float]``; ``None`` asks for the
                                                          dimension probe (a vector of the right
                                                          length, no network call)
                    :class:`EmbeddingBatchParams`         ``list[list[float]]``, one per text, in
                                                          order (optional: a handler without
                                                          batches fails, and callers embed one by
                                                          one)
TRANSCRIPTION       :class:`TranscriptionParams`          ``str``
IMAGE_DESCRIPTION   :class:`ImageDescriptionParams`       ``{"title": str, "description": str}``
TEXT_TO_SPEECH      :class:`SpeechParams`                 ``bytes`` (audio in ``format``), or a
                                                          :class:`SpeechStream` when ``stream``
IMAGE               :class:`ImageParams`                  ``list[OutgoingFile]``: the pictures
                                                          drawn (bot/kernel/outgoing.py), at least one
TEXT_TOOLS          :class:`~bot.kernel.tools.ToolTurnParams`  :class:`~bot.kernel.tools.ToolTurn`: the
                                                          calls the model wants, or its final text;
                                                          a server that takes no tools raises
                                                          ``ToolsRefused`` (the caller falls back)
==================  ====================================  =======================================

A text handler may say how long a prompt its model takes: ``register_model(..., context_length=f)``
with ``f()`` the model's context window in tokens (prompt and reply together), or ``None`` when
unknown; asked afresh each time, so a plugin may learn it while running (from a server's
refusal). ``runtime.context_length(type)`` gives the best handler's answer; prompts are built to it.

A streaming TEXT_TO_SPEECH handler returns once the first audio has arrived, so a refused key or
an unknown voice fails inside ``use_model`` (and the next handler is tried) rather than later
while the audio is being played.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Protocol, TypedDict, TypeVar

if TYPE_CHECKING:
    from bot.kernel.metrics import Metrics

__all__ = [
    "ContextLength",
    "EmbeddingBatchParams",
    "EmbeddingParams",
    "ImageDescriptionParams",
    "ImageParams",
    "ModelHost",
    "ModelType",
    "ResponseSchema",
    "SpeechParams",
    "SpeechStream",
    "TextParams",
    "TranscriptionParams",
    "model_type",
]


class ModelType(StrEnum):
    """What a model call is for. Values equal names, as upstream."""

    TEXT_SMALL = "TEXT_SMALL"
    TEXT_LARGE = "TEXT_LARGE"
    OBJECT_SMALL = "OBJECT_SMALL"
    OBJECT_LARGE = "OBJECT_LARGE"
    TEXT_EMBEDDING = "TEXT_EMBEDDING"
    TRANSCRIPTION = "TRANSCRIPTION"
    IMAGE_DESCRIPTION = "IMAGE_DESCRIPTION"
    TEXT_TO_SPEECH = "TEXT_TO_SPEECH"
    IMAGE = "IMAGE"
    TEXT_TOOLS = "TEXT_TOOLS"
    """A chat turn that may call tools (bot/kernel/tools.py): the server is told the tools."""


# Names elizaOS's documents use for the same types.
_ALIASES = {
    "SPEECH_TO_TEXT": ModelType.TRANSCRIPTION,
    "IMAGE_ANALYSIS": ModelType.IMAGE_DESCRIPTION,
    "COMPLETION": ModelType.TEXT_LARGE,
    "TEXT_MEDIUM": ModelType.TEXT_LARGE,
    "EMBEDDING": ModelType.TEXT_EMBEDDING,
    "IMAGE_GENERATION": ModelType.IMAGE,
}


def model_type(name: str | ModelType) -> ModelType:
    """The canonical type for ``name`` (``"text:small"``, ``"SPEECH_TO_TEXT"`` …); raises ValueError."""
    if isinstance(name, ModelType):
        return name
    key = name.strip().upper().replace(":", "_")
    if key in _ALIASES:
        return _ALIASES[key]
    try:
        return ModelType(key)
    except ValueError:
        known = ", ".join(t.value for t in ModelType)
        raise ValueError(f"unknown model type {name!r}; known: {known}") from None


@dataclass(frozen=True, slots=True, eq=False)
class ResponseSchema:
    """The JSON schema a TEXT answer should follow, for servers that can hold a model to one
    (grammar-constrained sampling on local servers, structured outputs at OpenAI)."""

    name: str
    """A short identifier (letters, digits, ``_`` and ``-``): the server names the schema with it."""
    schema: Mapping[str, Any]
    """A JSON schema of one object. Every property required and no others (``additionalProperties:
    false``, nested objects too): OpenAI's strict mode takes nothing looser."""
    replaces: str = ""
    """The name of the prompt's section (``<output>…</output>``) that shows the answer's format in
    words, left out when the schema is in force: it would contradict the schema, and a weak model
    copies the example's placeholder values into the fields."""

    def note(self) -> str:
        """What a prompt that describes another format is told when the schema is in force."""
        keys = ", ".join(self.schema.get("properties") or {})
        return f"Write the answer as one JSON object with the keys {keys}, not as XML."

    def apply(self, prompt: str) -> str:
        """``prompt`` as it is sent when the server holds the answer to the schema: without the
        section it replaces (when there is one), ending with :meth:`note`."""
        if self.replaces:
            section = re.compile(rf"\n*<{re.escape(self.replaces)}>.*?</{re.escape(self.replaces)}>\n*", re.S)
            prompt = section.sub("\n", prompt).rstrip()
        return f"{prompt}\n\n{self.note()}"


class TextParams(TypedDict):
    prompt: str
    system: NotRequired[str | None]
    """System prompt; the character's ``system`` when absent."""
    temperature: NotRequired[float]
    max_tokens: NotRequired[int]
    stop: NotRequired[list[str]]
    on_delta: NotRequired[Callable[[str], None]]
    """Called with each new piece of the answer as the model writes it (handlers that cannot
    stream simply never call it); the handler still returns the whole answer."""
    schema: NotRequired[ResponseSchema]
    """Hold the answer to this schema where the server can: the answer is then the JSON object,
    and the handler tells the prompt so (:meth:`ResponseSchema.note`). A handler or server that
    cannot ignores it, and the answer comes in the format the prompt asks for: callers read both."""


class EmbeddingParams(TypedDict):
    text: str


class EmbeddingBatchParams(TypedDict):
    texts: list[str]
    """Several texts embedded in one request (ingesting documents)."""


class TranscriptionParams(TypedDict):
    audio: bytes
    filename: NotRequired[str]
    """Tells the server the format (``voice.ogg``, ``speech.wav``)."""
    language: NotRequired[str]


class ImageDescriptionParams(TypedDict):
    image_url: str
    prompt: NotRequired[str]


class ImageParams(TypedDict):
    prompt: str
    """What the picture shows."""
    size: NotRequired[str]
    """``1024x1024`` …; the handler's configured size when absent."""


class SpeechParams(TypedDict):
    text: str
    voice: NotRequired[str]
    format: NotRequired[Literal["mp3", "opus", "wav", "pcm"]]
    stream: NotRequired[bool]
    """Return a :class:`SpeechStream` (audio as it is generated) instead of ``bytes``."""


@dataclass(slots=True)
class SpeechStream:
    """Audio arriving in pieces, in one format.

    ``format`` is what the bytes are: ``mp3``, ``opus`` (Ogg/Opus), ``wav``, or raw 16-bit
    little-endian mono PCM as ``pcm_<rate>`` (``pcm_16000``, ``pcm_24000`` …).
    """

    format: str
    chunks: AsyncIterator[bytes]
    provider: str = ""
    first: bytes = field(default=b"", repr=False)
    """Audio already received (handlers read ahead to know the request worked)."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[bytes]:
        if self.first:
            yield self.first
        async for chunk in self.chunks:
            if chunk:
                yield chunk

    async def aclose(self) -> None:
        """Stop receiving (the consumer wants no more): closes the request behind the stream."""
        close = getattr(self.chunks, "aclose", None)
        if close is not None:
            await close()

    async def read(self) -> bytes:
        """All of the audio (waits for the end)."""
        return b"".join([chunk async for chunk in self])

    @classmethod
    def of(cls, audio: bytes, format: str, provider: str = "") -> SpeechStream:
        """A stream of audio that is already complete."""

        async def nothing() -> AsyncIterator[bytes]:
            return
            yield b""  # pragma: no cover

        return cls(format, nothing(), provider, first=audio)


class _Character(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def system(self) -> str | None: ...


_T = TypeVar("_T")

#: How many tokens a handler's model takes in one request, prompt and reply together; ``None``
#: when unknown (see the module docstring).
ContextLength = Callable[[], int | None]


class _Shared(Protocol):
    def instance_of(self, kind: type[_T]) -> _T: ...


class ModelHost(Protocol):
    """What a model plugin asks of the agent's runtime: in ``setup(runtime)``, and as the first
    argument of each handler. :class:`~bot.runtime.agent.AgentRuntime` is one; a test may hand a plugin
    a small fake instead."""

    agent_id: str
    model_preset: str | None
    metrics: Metrics
    """The daemon's metrics (a model plugin's own gauges among them)."""

    @property
    def character(self) -> _Character: ...

    def get_setting(self, key: str) -> str | None: ...

    def register_model(
        self,
        model_type: ModelType,
        handler: Callable[..., Awaitable[object]],
        provider: str,
        priority: int,
        /,
        *,
        timeout_s: float | None = None,
        context_length: ContextLength | None = None,
    ) -> None:
        """``timeout_s``: the longest the handler may take by its own timeouts and retries;
        ``context_length``: how long a prompt its model takes."""
        ...

    def on_close(self, callback: Callable[[], Awaitable[None]], /) -> None: ...

    @property
    def shared(self) -> _Shared:
        """What the daemon's agents share (:class:`bot.runtime.shared.Shared`): one object of a kind."""
        ...
