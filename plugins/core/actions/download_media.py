"""DOWNLOAD_MEDIA: "save this picture", "download that video": keep a file shared in the room.

Which: the files of the message itself, else those the request names (by id, file name or
link), else the newest shared in the recent conversation (links are pages, not files: not
kept). Each is downloaded the platform's way (:attr:`ActionContext.fetch`: Telegram reaches any
file of the chat; Discord an earlier message's from its CDN address, while it lasts) and kept in the
character's folder under the daemon's data directory (:mod:`plugins.core._saved_media`: safe,
content-addressed names, bounds on size and count, atomic writes). The reply names each file
by its path relative to the data directory and its size; a file it could not keep is named with
why (none shared, too large, no room, the download failed) and what to do. Offered only where a
daemon runs the character (``troupe chat`` included), since only it has a data directory.
Unlike upstream, it keeps files shared in the chat, not videos found on the web.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from bot.sdk import (
    Action,
    ActionContext,
    ActionResult,
    Attachment,
    FetchCallback,
    Memory,
    State,
    TooLargeToFetch,
)

from .._attachments import attachment_kind
from .._saved_media import MB, MediaLimits, NoRoom, Saved, SavingTurns, media_folder, save_media
from ..providers._common import describe_media, recent_attachment_records
from ._common import notify, sender_text
from ._media import named_in, send_answer

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["action"]

_log = logging.getLogger(__name__)

_NAME = "DOWNLOAD_MEDIA"
_ASKS = re.compile(r"\b(?:save|saving|download|keep|store|stash|archive)\b")
_MAX_FILES = 4  # of one request
_FETCH_TIMEOUT_S = 60.0


def _keepable(attachment: Attachment) -> bool:
    return (attachment.content_type or "").lower() != "link" and bool(attachment.id or attachment.url)


async def _candidates(runtime: AgentRuntime, message: Memory) -> list[Attachment]:
    return [a for _, a in await recent_attachment_records(runtime, message) if _keepable(a)]


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    if runtime.shared.data_dir is None or not _ASKS.search(sender_text(message).casefold()):
        return False
    return bool(await _candidates(runtime, message))


def _chosen(message: Memory, candidates: list[Attachment]) -> list[Attachment]:
    own = [a for a in message.content.attachments or () if _keepable(a)]
    if own:
        return own[:_MAX_FILES]
    items = [describe_media(a) for a in candidates]
    named = {id(item) for item in named_in(sender_text(message), items)}
    picked = [a for a, item in zip(candidates, items, strict=True) if id(item) in named]
    return (picked or candidates[-1:])[-_MAX_FILES:]


def _name(attachment: Attachment) -> str:
    return attachment.title or attachment.id or "the file"


class _NotKept(Exception):
    """Why one file was not kept, for the person."""


async def _download(attachment: Attachment, fetch: FetchCallback | None, limits: MediaLimits) -> bytes:
    name = _name(attachment)
    if attachment.size is not None and attachment.size > limits.file_bytes:  # no need to download it to know
        raise _NotKept(
            f"I didn't keep {name}: it is {attachment.size / MB:.1f} MB, "
            f"more than the {limits.file_bytes // MB} MB I keep of one file."
        )
    if fetch is None:
        raise _NotKept(f"I can't download files here, so {name} is not kept.")
    try:
        async with asyncio.timeout(_FETCH_TIMEOUT_S):
            return await fetch(attachment.to_json())
    except LookupError:
        raise _NotKept(f"I can no longer download {name}: send it again with your request.") from None
    except TooLargeToFetch as exc:
        raise _NotKept(f"I can't download {name}: it is {exc}.") from None
    except TimeoutError:
        raise _NotKept(f"Downloading {name} took too long; try again in a moment.") from None
    except Exception as exc:
        # Only the class: a platform's error may quote a URL with its token in it (Telegram's).
        _log.warning("DOWNLOAD_MEDIA: could not download %s: %s", attachment.id or "?", exc.__class__.__name__)
        raise _NotKept(f"The platform would not give me {name} just now; try again in a moment.") from None


async def _keep(runtime: AgentRuntime, data_dir: Path, attachment: Attachment, fetch: FetchCallback | None) -> Saved:
    limits = MediaLimits.of(runtime)
    data = await _download(attachment, fetch, limits)
    kind = attachment_kind(attachment.to_json()) or "file"
    try:
        async with runtime.shared.instance_of(SavingTurns).of(runtime.agent_id):
            return await asyncio.to_thread(
                save_media,
                data_dir,
                media_folder(runtime),
                data,
                title=attachment.title or "",
                content_type=attachment.content_type or "",
                kind=kind,
                limits=limits,
            )
    except NoRoom as exc:
        raise _NotKept(f"I didn't keep {_name(attachment)}: {exc}.") from None
    except OSError as exc:
        _log.error("%s: could not keep %s in %s: %s", runtime.character.name, _name(attachment), data_dir, exc)
        raise _NotKept(f"I couldn't write {_name(attachment)} to my storage; my operator has the reason.") from None


def _said(attachment: Attachment, saved: Saved) -> str:
    size = f"{saved.size / MB:.1f} MB" if saved.size >= MB // 10 else f"{max(1, round(saved.size / 1024))} KB"
    if saved.already:
        return f"{_name(attachment)} was already saved as {saved.path} ({size})."
    return f"Saved {_name(attachment)} as {saved.path} ({size})."


async def _handler(context: ActionContext) -> ActionResult:
    runtime, message = context.runtime, context.message
    data_dir = runtime.shared.data_dir
    chosen = _chosen(message, await _candidates(runtime, message))
    if data_dir is None:
        await notify(context.reply, "I have nowhere to keep files here.", _NAME, message)
        return ActionResult(success=False, error="no data directory: no daemon runs this character")
    if not chosen:
        said = "I don't see a file to save here. Share the picture or video and ask me to save it."
        await notify(context.reply, said, _NAME, message)
        return ActionResult(success=False, error="no file shared in the recent conversation")
    lines: list[str] = []
    paths: list[str] = []
    for attachment in chosen:
        try:
            saved = await _keep(runtime, data_dir, attachment, context.fetch)
        except _NotKept as exc:
            lines.append(str(exc))
            continue
        lines.append(_said(attachment, saved))
        paths.append(saved.path)
    text = "\n".join(lines)
    if not paths:
        await notify(context.reply, text, _NAME, message)
        return ActionResult(success=False, error=text)
    return await send_answer(context.reply, message, text, _NAME, {"paths": paths})


action = Action(
    name=_NAME,
    handler=_handler,
    validate=_validate,
    description="Save a picture, video, recording or file shared in the conversation to your storage when "
    "someone asks you to keep or download it; the reply says where it is kept.",
    similes=("DOWNLOAD_VIDEO", "DOWNLOAD_AUDIO", "GET_MEDIA", "DOWNLOAD_PODCAST", "DOWNLOAD_YOUTUBE", "SAVE_MEDIA"),
)
