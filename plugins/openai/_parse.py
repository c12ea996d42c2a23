"""Reading what models write: chat completion bodies, JSON in fences or prose, vectors, drawn
images, and guessing an audio file's name.

Pure functions; the handlers call them on what a server returned.
"""

from __future__ import annotations

import base64
import json
import re
from array import array
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ChatReply",
    "DrawnImage",
    "Usage",
    "audio_filename",
    "parse_chat_completion",
    "parse_image_description",
    "parse_images",
    "parse_json_object",
    "parse_vectors",
    "per_token_vectors",
]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_LABEL = re.compile(r"^[\s#*_>-]*(?:title|description)[*_]*\s*[:：][*_]*\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens a chat completion reports, for the debug log; ``None`` when not reported."""

    prompt_tokens: object = None
    completion_tokens: object = None


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What troupe reads of a chat completion: its first choice's message, if any."""

    model: str | None
    answered: bool
    """Whether there is a first choice with a message (``False``: no choices)."""
    content: str | None = None
    refusal: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    """``length`` when the answer was cut at ``max_tokens``."""


def parse_chat_completion(body: bytes) -> ChatReply | None:
    """The first choice of a chat completion response body; None when ``body`` is not one.

    Read by hand rather than by the SDK's typed model: building that model cost more CPU than
    the request itself. Fields troupe does not read are ignored, as providers add their own.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(choices := data.get("choices"), list):
        return None
    model = data.get("model") if isinstance(data.get("model"), str) else None
    usage = data.get("usage")
    counts = Usage(usage.get("prompt_tokens"), usage.get("completion_tokens")) if isinstance(usage, dict) else None
    first = choices[0] if choices else None
    if first is not None and not isinstance(first, dict):
        return None
    message = first.get("message") if first is not None else None
    if message is None:
        return ChatReply(model, answered=False, usage=counts)
    if not isinstance(message, dict):
        return None
    content, refusal = message.get("content"), message.get("refusal")
    if not isinstance(content, str | None):
        return None
    finish = first.get("finish_reason") if first is not None else None
    return ChatReply(
        model,
        True,
        content,
        refusal if isinstance(refusal, str) else None,
        counts,
        finish if isinstance(finish, str) else None,
    )


def per_token_vectors(body: bytes) -> bool:
    """Whether an embeddings response body holds a list of vectors per input, one per token
    (llama.cpp's server without pooling), instead of one vector."""
    try:
        items = json.loads(body).get("data")
        embedding = items[0]["embedding"]
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):
        return False
    return isinstance(embedding, list) and bool(embedding) and isinstance(embedding[0], list)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``, tolerating code fences, ``<think>`` blocks and prose around it.

    Returns ``None`` when no JSON object can be read.
    """
    body = _THINK.sub("", text).strip()
    candidates = [body]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(body)]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_image_description(text: str) -> dict[str, str]:
    """``{"title", "description"}`` from a reply asked to be JSON, or from prose when it is not.

    Prose: a short first line (with or without a ``Title:`` label) is the title and the rest the
    description; a single paragraph gives its first sentence as the title.
    """
    parsed = parse_json_object(text)
    if parsed is not None:
        title = str(parsed.get("title") or "").strip()
        description = str(parsed.get("description") or "").strip()
        if title or description:
            return {"title": title or _first_sentence(description), "description": description or title}
    body = _THINK.sub("", text).strip()
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if not lines:
        return {"title": "", "description": ""}
    first = _LABEL.sub("", lines[0]).strip(" #*_")
    if len(lines) > 1 and len(first) <= 100:
        rest = "\n".join(lines[1:])
        return {"title": first, "description": _LABEL.sub("", rest, count=1).strip()}
    return {"title": _first_sentence(first), "description": first}


def _first_sentence(text: str, limit: int = 80) -> str:
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].strip()
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def audio_filename(audio: bytes) -> str:
    """A file name whose extension matches ``audio``'s format; the server reads the format from it."""
    if audio.startswith(b"OggS"):
        return "audio.ogg"
    if audio[:4] == b"RIFF" and audio[8:12] == b"WAVE":
        return "audio.wav"
    if audio.startswith(b"fLaC"):
        return "audio.flac"
    if audio.startswith(b"\x1a\x45\xdf\xa3"):
        return "audio.webm"
    if audio[4:8] == b"ftyp":
        return "audio.m4a"
    # ID3 tags or an MPEG frame sync; also the best guess for anything unrecognised.
    return "audio.mp3"


def parse_vectors(body: bytes) -> list[list[float]] | None:
    """The vectors of an embeddings response body, in the order of the inputs (servers may answer
    out of order; each item says which input it is for); None when it is not such a body. A
    vector sent as base64 (little-endian float32), as some servers do whatever was asked, is read too.
    """
    try:
        data = json.loads(body).get("data")
        items = sorted(data, key=lambda item: int(item["index"]))
        vectors = []
        for item in items:
            embedding = item["embedding"]
            if isinstance(embedding, str):
                vectors.append(array("f", base64.b64decode(embedding)).tolist())
            elif isinstance(embedding, list):
                vectors.append([float(x) for x in embedding])  # a non-number raises: not vectors
            else:
                return None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return vectors


@dataclass(frozen=True, slots=True)
class DrawnImage:
    """One picture of an images answer: its bytes (``b64_json``) or where to fetch them (``url``)."""

    data: bytes | None
    url: str | None
    revised_prompt: str = ""


def parse_images(body: bytes) -> list[DrawnImage] | None:
    """The pictures of an ``/images/generations`` answer, in order; None when it is no such
    answer (no ``data`` list, an item with neither ``b64_json`` nor an http(s) ``url``, bad base64)."""
    try:
        items = json.loads(body).get("data")
        if not isinstance(items, list) or not items:
            return None
        found = []
        for item in items:
            encoded, url = item.get("b64_json"), item.get("url")
            revised = str(item.get("revised_prompt") or "")
            if isinstance(encoded, str) and encoded:
                found.append(DrawnImage(base64.b64decode(encoded, validate=True), None, revised))
            elif isinstance(url, str) and url.startswith(("https://", "http://")):
                found.append(DrawnImage(None, url, revised))
            else:
                return None
    except (ValueError, TypeError, AttributeError):  # binascii.Error is a ValueError
        return None
    return found
