"""Making attachments something the model can read: images described, audio transcribed,
text files read.

Runs only once the agent has decided to respond, so ignored messages cost no model calls. The
bytes come from the platform: the message's reply channel fetches them (``ReplyChannel.fetch``),
because only the platform knows how to download its files (and some URLs, such as Telegram's, carry the bot token
and must never be handed to a model provider). A public ``http(s)`` image URL is given to the
model as it is; anything else is fetched and sent as a ``data:`` URL.

Every failure (fetch, model, oversized file) leaves that attachment as it was and is logged; the
message is answered regardless. Audio a platform already transcribed (``transcribed: True``, as
Telegram marks voice notes it turned into the message's text) is left alone, even when nothing
was heard in it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from bot.models import ModelType
from bot.speech import transcribe
from bot.types import Memory

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["AttachmentFetcher", "attachment_kind", "process_attachments"]

_log = logging.getLogger(__name__)

#: Downloads one attachment (a Media mapping) and returns its bytes.
AttachmentFetcher = Callable[[Mapping[str, Any]], Awaitable[bytes]]

_MAX_ATTACHMENTS = 8
_FETCH_TIMEOUT_S = 30.0
_MAX_BYTES = {"image": 10 * 1024 * 1024, "audio": 25 * 1024 * 1024, "text": 1024 * 1024}
_MAX_TEXT_CHARS = 20_000
_EXTENSIONS = {
    "image": (".png", ".jpg", ".jpeg", ".gif", ".webp"),
    "audio": (".mp3", ".ogg", ".oga", ".opus", ".wav", ".m4a", ".flac", ".webm"),
    "text": (".txt", ".md", ".csv", ".json", ".log", ".py", ".js", ".ts", ".yaml", ".yml", ".toml", ".xml", ".html"),
}
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml", "application/toml")


class _TooLarge(Exception):
    pass


def attachment_kind(item: Mapping[str, Any]) -> str | None:
    """``image``, ``audio``, ``text`` or None, from the content type, else the file name."""
    content_type = str(item.get("contentType") or "").lower()
    if content_type.startswith("image/"):
        return "image"
    if content_type.startswith("audio/"):
        return "audio"
    if content_type.startswith(_TEXT_TYPES):
        return "text"
    name = str(item.get("title") or item.get("url") or "").lower().split("?", 1)[0]
    for kind, extensions in _EXTENSIONS.items():
        if name.endswith(extensions):
            return kind
    return None


def _needs_work(item: Mapping[str, Any], kind: str | None) -> bool:
    if kind == "image":
        return not item.get("description")
    if kind == "audio":
        return not item.get("text") and not item.get("transcribed")
    if kind == "text":
        return not item.get("text")
    return False


async def _fetch(item: Mapping[str, Any], kind: str, fetch: AttachmentFetcher | None) -> bytes | None:
    if fetch is None:
        return None
    try:
        async with asyncio.timeout(_FETCH_TIMEOUT_S):
            data = await fetch(item)
    except LookupError:  # the platform has no way to download it: there is nothing to read
        return None
    if len(data) > _MAX_BYTES[kind]:
        raise _TooLarge(f"{len(data)} bytes, more than the {_MAX_BYTES[kind]} read for {kind}")
    return data


async def _describe(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    url = str(item.get("url") or "")
    if not url.startswith(("http://", "https://")) or item.get("private"):
        data = await _fetch(item, "image", fetch)
        if data is None:
            return False
        mime = str(item.get("contentType") or "image/png")
        url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    result = await runtime.use_model(ModelType.IMAGE_DESCRIPTION, {"image_url": url})
    if not isinstance(result, Mapping):  # a handler that answers in prose
        result = {"description": str(result or "")}
    description = str(result.get("description") or "").strip()
    if not description:
        return False
    item["description"] = description
    item["title"] = item.get("title") or str(result.get("title") or "").strip() or "Image"
    item["text"] = item.get("text") or description
    return True


async def _transcribe(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    data = await _fetch(item, "audio", fetch)
    if not data:
        return False
    # No title: the model plugin tells the format from the bytes.
    transcript = await transcribe(runtime, data, str(item.get("title") or ""))
    if not transcript:
        return False
    item["text"] = transcript
    item["description"] = item.get("description") or "Transcript of an audio message"
    return True


async def _read(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    data = await _fetch(item, "text", fetch)
    if data is None:
        return False
    text = data.decode("utf-8", errors="replace")
    if len(text) > _MAX_TEXT_CHARS:
        text = text[:_MAX_TEXT_CHARS] + "\n[… truncated]"
    item["text"] = text
    item["title"] = item.get("title") or "Text file"
    return True


_WORK = {"image": _describe, "audio": _transcribe, "text": _read}


async def process_attachments(runtime: AgentRuntime, message: Memory, fetch: AttachmentFetcher | None = None) -> bool:
    """Fill in ``description``/``text`` of the message's attachments, concurrently.

    Returns whether anything changed; ``message.content["attachments"]`` is updated in place.
    """
    attachments = message.content.get("attachments")
    if not isinstance(attachments, list) or not attachments:
        return False
    todo: list[tuple[dict[str, Any], str]] = []
    for item in attachments[:_MAX_ATTACHMENTS]:
        if isinstance(item, dict) and (kind := attachment_kind(item)) is not None and _needs_work(item, kind):
            todo.append((item, kind))
    if not todo:
        return False

    async def work(item: dict[str, Any], kind: str) -> bool:
        try:
            return await _WORK[kind](runtime, item, fetch)
        except Exception as exc:
            # Only our own message is safe to log: a fetch error may quote a URL with a token in it.
            reason = str(exc) if isinstance(exc, _TooLarge) else exc.__class__.__name__
            _log.warning(
                "%s: could not read %s attachment %s: %s",
                runtime.character.name,
                kind,
                item.get("id") or item.get("title") or "?",
                reason,
            )
            return False

    results = await asyncio.gather(*(work(item, kind) for item, kind in todo))
    return any(results)
