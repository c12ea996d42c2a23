"""Making attachments something the model can read: images described, audio transcribed,
text files, PDFs and Word documents read, short videos heard and looked at, links in the text read.

Runs only once the agent has decided to respond, so ignored messages cost no model calls. The
bytes come from the platform: the message's reply channel fetches them (``ReplyChannel.fetch``),
because only the platform knows how to download its files (and some URLs, such as Telegram's, carry the bot token
and must never be handed to a model provider). A public ``http(s)`` image URL is given to the
model as it is; anything else is fetched and sent as a ``data:`` URL.

Every failure (fetch, model, oversized file) leaves that attachment as it was and is logged; the
message is answered regardless. Audio a platform already transcribed (``transcribed: True``, as
Telegram marks voice notes it turned into the message's text) is left alone, even when nothing
was heard in it.

A PDF's text is read in a thread (:mod:`bot.media.pdf`), a Word document's (``.docx``) too
(:mod:`bot.media.word`); one that cannot be read (encrypted, damaged, scanned) is described as such. A video up to :data:`MAX_VIDEO_S` seconds has its sound transcribed
and its middle frame described (:mod:`bot.media.video`, decoded in a thread); a longer or larger one is
described by its size and length only. Links in the message's text become ``link`` attachments
(:mod:`._links`).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    Attachment,
    AudioError,
    Memory,
    ModelError,
    ModelType,
    UnreadableDocx,
    UnreadablePdf,
    docx_text,
    pdf_text,
    transcribe,
)

from ._links import read_links

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["AttachmentFetcher", "MAX_VIDEO_S", "SOUNDLESS", "SOUND_PREFIX", "attachment_kind", "process_attachments"]

_log = logging.getLogger(__name__)

#: Downloads one attachment (a Media mapping) and returns its bytes.
AttachmentFetcher = Callable[[Mapping[str, Any]], Awaitable[bytes]]

_MAX_ATTACHMENTS = 8
_FETCH_TIMEOUT_S = 30.0
_MB = 1024 * 1024
_MAX_BYTES = {"image": 10 * _MB, "audio": 25 * _MB, "text": _MB, "pdf": 20 * _MB, "word": 20 * _MB, "video": 25 * _MB}
_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_MAX_TEXT_CHARS = 20_000
_MAX_PDF_PAGES = 50
MAX_VIDEO_S = 120
#: A video's text: its transcript after this prefix, or SOUNDLESS (TRANSCRIBE_MEDIA reads them back).
SOUND_PREFIX = "Transcript of its sound: "
SOUNDLESS = "Nothing was heard in it."
_EXTENSIONS = {
    "image": (".png", ".jpg", ".jpeg", ".gif", ".webp"),
    "audio": (".mp3", ".ogg", ".oga", ".opus", ".wav", ".m4a", ".flac", ".webm"),
    "pdf": (".pdf",),
    "word": (".docx",),
    "video": (".mp4", ".mov", ".mkv", ".avi", ".m4v"),
    "text": (".txt", ".md", ".csv", ".json", ".log", ".py", ".js", ".ts", ".yaml", ".yml", ".toml", ".xml", ".html"),
}
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml", "application/toml")


class _TooLarge(Exception):
    def __init__(self, size: int, kind: str) -> None:
        super().__init__(f"{size} bytes, more than the {_MAX_BYTES[kind]} read for {kind}")
        self.size = size


def attachment_kind(item: Mapping[str, Any]) -> str | None:
    """``image``, ``audio``, ``video``, ``pdf``, ``word`` (.docx), ``text`` or None, from the content type, else
    the file name. A ``link`` (a page read from the message's text) is none of them."""
    content_type = str(item.get("contentType") or "").lower()
    if content_type == "link":
        return None
    if content_type == "application/pdf":
        return "pdf"
    if content_type == _DOCX:
        return "word"
    if content_type.startswith("video/"):
        return "video"
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
    if kind in ("text", "pdf", "word", "video"):
        return not item.get("text") and not item.get("description")
    return False


async def _fetch(item: Mapping[str, Any], kind: str, fetch: AttachmentFetcher | None) -> bytes | None:
    if fetch is None:
        return None
    declared = item.get("size")
    if isinstance(declared, int) and declared > _MAX_BYTES[kind]:  # the platform said: no need to download it
        raise _TooLarge(declared, kind)
    try:
        async with asyncio.timeout(_FETCH_TIMEOUT_S):
            data = await fetch(item)
    except LookupError:  # the platform has no way to download it: there is nothing to read
        return None
    if len(data) > _MAX_BYTES[kind]:
        raise _TooLarge(len(data), kind)
    return data


async def _look(runtime: AgentRuntime, image_url: str) -> tuple[str, str]:
    """``(title, description)`` of the image, from the IMAGE_DESCRIPTION model."""
    result = await runtime.use_model(ModelType.IMAGE_DESCRIPTION, {"image_url": image_url})
    if not isinstance(result, Mapping):  # a handler that answers in prose
        result = {"description": str(result or "")}
    return str(result.get("title") or "").strip(), str(result.get("description") or "").strip()


async def _describe(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    url = str(item.get("url") or "")
    if not url.startswith(("http://", "https://")) or item.get("private"):
        data = await _fetch(item, "image", fetch)
        if data is None:
            return False
        mime = str(item.get("contentType") or "image/png")
        url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    title, description = await _look(runtime, url)
    if not description:
        return False
    item["description"] = description
    item["title"] = item.get("title") or title or "Image"
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
    item["text"] = _bounded(data.decode("utf-8", errors="replace"))
    item["title"] = item.get("title") or "Text file"
    return True


def _bounded(text: str) -> str:
    return text[:_MAX_TEXT_CHARS] + "\n[… truncated]" if len(text) > _MAX_TEXT_CHARS else text


async def _read_document(
    item: dict[str, Any],
    fetch: AttachmentFetcher | None,
    kind: str,
    name: str,
    short: str,
    read: Callable[[bytes], str],
) -> bool:
    """A PDF or Word document: its text read in a thread; one that cannot be read described as such."""
    data = await _fetch(item, kind, fetch)
    if data is None:
        return False
    item["title"] = item.get("title") or name
    try:
        item["text"] = _bounded(await asyncio.to_thread(read, data))
    except (UnreadablePdf, UnreadableDocx) as exc:
        item["description"] = f"{short} not read: {exc}"
        return True
    item["description"] = item.get("description") or name
    return True


async def _read_pdf(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    return await _read_document(item, fetch, "pdf", "PDF document", "PDF", lambda data: pdf_text(data, _MAX_PDF_PAGES))


async def _read_word(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    return await _read_document(item, fetch, "word", "Word document", "Word document", docx_text)


def _megabytes(size: int) -> str:
    return f"{size / _MB:.1f} MB"


async def _half(runtime: AgentRuntime, item: Mapping[str, Any], work: Awaitable[str]) -> str:
    try:
        return await work
    except ModelError as exc:
        _log.warning("%s: video %s only partly read: %s", runtime.character.name, item.get("id") or "?", exc)
        return ""


async def _seen(runtime: AgentRuntime, image_url: str) -> str:
    return (await _look(runtime, image_url))[1]


async def _watch(runtime: AgentRuntime, item: dict[str, Any], fetch: AttachmentFetcher | None) -> bool:
    """Transcribe a short video's sound and describe its middle frame; describe a long one by size."""
    item["title"] = item.get("title") or "Video"
    try:
        data = await _fetch(item, "video", fetch)
    except _TooLarge as exc:
        item["description"] = (
            f"Video, {_megabytes(exc.size)}: too large to watch (the limit is {_megabytes(_MAX_BYTES['video'])})"
        )
        return True
    if data is None:
        return False
    from bot.sdk.media import probe_video, video_parts  # PyAV takes 16 MB: only once someone shares a video

    try:
        probe = await asyncio.to_thread(probe_video, data)
        if probe.duration_s is not None and probe.duration_s > MAX_VIDEO_S:
            item["description"] = (
                f"Video, {_megabytes(len(data))}, {probe.duration_s:.0f} s long: too long to watch "
                f"(the limit is {MAX_VIDEO_S} s)"
            )
            return True
        parts = await asyncio.to_thread(video_parts, data)
    except AudioError as exc:
        item["description"] = f"Video not read: {exc}"
        return True
    length = f"{parts.duration_s:.0f} s" if parts.duration_s is not None else "length unknown"
    # Each half on its own: one missing model (no TRANSCRIPTION, say) leaves the other.
    heard = await _half(runtime, item, transcribe(runtime, parts.sound, "video-sound.wav")) if parts.sound else ""
    seen = ""
    if parts.frame is not None:
        frame_url = f"data:image/png;base64,{base64.b64encode(parts.frame).decode()}"
        seen = await _half(runtime, item, _seen(runtime, frame_url))
    item["description"] = f"Video ({length}). A frame from its middle: {seen}" if seen else f"Video ({length})"
    item["text"] = f"{SOUND_PREFIX}{heard}" if heard else SOUNDLESS
    return True


_WORK = {"image": _describe, "audio": _transcribe, "text": _read, "pdf": _read_pdf, "word": _read_word, "video": _watch}


async def process_attachments(
    runtime: AgentRuntime, message: Memory, fetch: AttachmentFetcher | None = None
) -> Memory | None:
    """Fill in ``description``/``text`` of the message's attachments, concurrently, and add
    the links in its text.

    Returns the message with what was read in its attachments (a new memory: ``message`` is
    left as it is), or None when nothing was read.
    """
    # Each as its platform described it (what ``fetch`` reads), filled in by the work below.
    attachments = [a.to_json() for a in message.content.attachments or ()]
    known = [a.url or "" for a in message.content.attachments or ()]
    todo: list[tuple[dict[str, Any], str]] = []
    for item in attachments[:_MAX_ATTACHMENTS]:
        if (kind := attachment_kind(item)) is not None and _needs_work(item, kind):
            todo.append((item, kind))

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

    # Links are read while the attachments are: the answer waits for the slowest of them.
    links, *results = await asyncio.gather(
        read_links(runtime, message.content.text or "", known),
        *(work(item, kind) for item, kind in todo),
    )
    if not any(results) and not links:
        return None
    read = tuple(Attachment.from_json(a) for a in [*attachments, *links])
    return replace(message, content=replace(message.content, attachments=read))
