"""Model types and the shapes of their parameters.

A model plugin registers a handler per type (``runtime.register_model``); the runtime picks the
highest-priority handler and falls back to the next when one fails (``runtime.use_model``).

Handlers are ``async def handler(runtime, params) -> result``:

==================  ====================================  =======================================
type                params                                result
==================  ====================================  =======================================
TEXT_SMALL/LARGE    :class:`TextParams`                   ``str``
OBJECT_SMALL/LARGE  :class:`TextParams`                   ``dict`` (parsed JSON)
TEXT_EMBEDDING      :class:`EmbeddingParams` or ``None``  ``list[float]``; ``None`` asks for the
                                                          dimension probe (a vector of the right
                                                          length, no network call)
TRANSCRIPTION       :class:`TranscriptionParams`          ``str``
IMAGE_DESCRIPTION   :class:`ImageDescriptionParams`       ``{"title": str, "description": str}``
TEXT_TO_SPEECH      :class:`SpeechParams`                 ``bytes`` (audio in ``format``)
==================  ====================================  =======================================
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, NotRequired, TypedDict

__all__ = [
    "EmbeddingParams",
    "ImageDescriptionParams",
    "ModelType",
    "SpeechParams",
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


# Names elizaOS's documents use for the same types.
_ALIASES = {
    "SPEECH_TO_TEXT": ModelType.TRANSCRIPTION,
    "IMAGE_ANALYSIS": ModelType.IMAGE_DESCRIPTION,
    "COMPLETION": ModelType.TEXT_LARGE,
    "TEXT_MEDIUM": ModelType.TEXT_LARGE,
    "EMBEDDING": ModelType.TEXT_EMBEDDING,
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


class TextParams(TypedDict):
    prompt: str
    system: NotRequired[str | None]
    """System prompt; the character's ``system`` when absent."""
    temperature: NotRequired[float]
    max_tokens: NotRequired[int]
    stop: NotRequired[list[str]]


class EmbeddingParams(TypedDict):
    text: str


class TranscriptionParams(TypedDict):
    audio: bytes
    filename: NotRequired[str]
    """Tells the server the format (``voice.ogg``, ``speech.wav``)."""
    language: NotRequired[str]


class ImageDescriptionParams(TypedDict):
    image_url: str
    prompt: NotRequired[str]


class SpeechParams(TypedDict):
    text: str
    voice: NotRequired[str]
    format: NotRequired[Literal["mp3", "opus", "wav", "pcm"]]
