"""Sending files to Telegram: pictures as photos, anything else as documents, with the caption
rules and the Bot API's size limits checked before anything is uploaded.

A reply's text goes as the first file's caption when it fits one caption (1024 characters, in
UTF-16 code units as Telegram counts them); longer text goes first as messages of its own, then
the files, and so does a caption Telegram still finds too long. Pictures that follow each other
go together as an album (``sendMediaGroup``, 2 to 10 a message: one message to scroll past, not
one per picture), the caption under the album; should Telegram refuse the album, they go one by
one. The reply's buttons go on its last message; an album cannot carry them, so a reply with
buttons sends its last picture on its own, with them. A picture over 10 MB (or one Telegram will not take as a photo) goes as a document; a file
over 50 MB is not sent, and the text says so (:func:`bot.kernel.outgoing.refusal_note`). Flood control
and network errors are retried as for text (:mod:`._outbound`), within the same send deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from telegram import Bot, InputMediaPhoto, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, TelegramError

from bot.sdk import (
    Deadline,
    FileKind,
    OutgoingFile,
    PartlySent,
    Placed,
    SizeLimits,
    load,
    place,
    repair_text,
    utf16_len,
    with_note,
)

from ._markdown import split_for_telegram
from ._outbound import ReplyMarkup, send_text, too_long, unparseable, with_retries

__all__ = ["MAX_ALBUM", "MAX_CAPTION", "TELEGRAM_LIMITS", "caption_for", "send_with_files"]

_log = logging.getLogger(__name__)

#: The Bot API's limits for uploads (api.telegram.org; a local Bot API server takes more).
TELEGRAM_LIMITS = SizeLimits("Telegram", file=50 * 1000 * 1000, picture=10 * 1000 * 1000)
MAX_CAPTION = 1024
MAX_ALBUM = 10  # items in one sendMediaGroup (and at least 2)

Caption = tuple[str, str]  # MarkdownV2, and the plain text should Telegram refuse that


def caption_for(text: str) -> Caption | None:
    """``text`` as a caption (MarkdownV2, and the plain text should Telegram refuse that), or
    None when it does not fit in one."""
    parts = split_for_telegram(repair_text(text.strip()))
    if len(parts) != 1 or utf16_len(parts[0][1]) > MAX_CAPTION:
        return None
    return parts[0]


async def send_with_files(
    bot: Bot,
    chat_id: int,
    text: str,
    files: Sequence[OutgoingFile],
    *,
    reply_to: int | None = None,
    thread_id: int | None = None,
    deadline_s: float,
    markup: ReplyMarkup | None = None,
) -> list[Message]:
    """Send ``text`` and ``files`` (see the module docstring); the first message quotes ``reply_to``,
    the last carries ``markup`` (the reply's buttons).

    Raises:
        PartlySent: some messages went out (its ``sent``), then one could not.
        TelegramError: what Telegram refused of the first message.
    """
    deadline = Deadline.after(deadline_s)
    loaded, note = await load(place(files, TELEGRAM_LIMITS))
    text = with_note(text, note)
    caption = caption_for(text) if loaded and text else None
    sent: list[Message] = []
    if text and caption is None:
        sent += await send_text(
            bot,
            chat_id,
            text,
            reply_to=reply_to,
            thread_id=thread_id,
            deadline_s=max(deadline.remaining(), 0.1),
            markup=None if loaded else markup,  # no file could go: the text is the last message
        )
    runs = _runs(loaded, last_alone=markup is not None)
    for number, run in enumerate(runs):
        # The text's caption on the first file, unless the text went on its own; else the file's own.
        captions = [caption if not sent and i == 0 else _own_caption(placed) for i, (placed, _) in enumerate(run)]
        last = markup if number == len(runs) - 1 else None
        try:
            try:
                sent += await _send_run(
                    bot, chat_id, run, captions, reply_to if not sent else None, thread_id, deadline, last
                )
            except BadRequest as exc:
                if caption is None or captions[0] is not caption or not too_long(exc):
                    raise
                # Telegram counted the caption longer than we did: the text goes on its own first.
                _log.warning("Telegram found a reply's caption too long (%s); sending the text on its own", exc.message)
                sent += await send_text(
                    bot,
                    chat_id,
                    text,
                    reply_to=reply_to,
                    thread_id=thread_id,
                    deadline_s=max(deadline.remaining(), 0.1),
                )
                captions[0] = _own_caption(run[0][0])
                sent += await _send_run(bot, chat_id, run, captions, None, thread_id, deadline, last)
        except TelegramError as exc:
            if not sent:
                raise
            raise PartlySent(f"only {len(sent)} messages went out, then a file could not: {exc.message}", sent) from exc
    return sent


async def _send_run(
    bot: Bot,
    chat_id: int,
    run: Sequence[tuple[Placed, bytes]],
    captions: Sequence[Caption | None],
    reply_to: int | None,
    thread_id: int | None,
    deadline: Deadline,
    markup: ReplyMarkup | None,
) -> list[Message]:
    """One run of :func:`_runs`: pictures as an album (one by one should Telegram refuse it), or
    one file; the first quotes ``reply_to``, the last carries ``markup``."""
    if len(run) > 1:
        try:
            return await _send_album(bot, chat_id, run, captions, reply_to, thread_id, deadline)
        except BadRequest as exc:
            if too_long(exc):
                raise
            _log.info("Telegram refused an album of %d pictures (%s); sending them one by one", len(run), exc.message)
    sent: list[Message] = []
    for (placed, data), own in zip(run, captions, strict=True):
        quoted = reply_to if not sent else None
        last = markup if placed is run[-1][0] else None
        sent.append(await _send_file(bot, chat_id, placed, data, own, quoted, thread_id, deadline, last))
    return sent


def _own_caption(placed: Placed) -> Caption | None:
    return caption_for(placed.file.description) if placed.file.description else None


def _runs(loaded: Sequence[tuple[Placed, bytes]], *, last_alone: bool = False) -> list[list[tuple[Placed, bytes]]]:
    """The files in order, pictures that follow each other together (up to :data:`MAX_ALBUM`),
    anything else alone; ``last_alone``: the last file too (it carries the buttons)."""
    runs: list[list[tuple[Placed, bytes]]] = []
    for index, item in enumerate(loaded):
        last = runs[-1] if runs else None
        joins = item[0].kind is FileKind.PICTURE and last and last[0][0].kind is FileKind.PICTURE
        if joins and last is not None and len(last) < MAX_ALBUM and not (last_alone and index == len(loaded) - 1):
            last.append(item)
        else:
            runs.append([item])
    return runs


def _reply_parameters(reply_to: int | None) -> dict[str, Any]:
    if reply_to is None:
        return {}
    return {"reply_parameters": ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)}


async def _send_album(
    bot: Bot,
    chat_id: int,
    run: Sequence[tuple[Placed, bytes]],
    captions: Sequence[Caption | None],
    reply_to: int | None,
    thread_id: int | None,
    deadline: Deadline,
) -> list[Message]:
    """Pictures as one album (``sendMediaGroup``), each with its caption (the first's shows under
    the album); captions Telegram cannot parse go again as plain text."""

    async def upload(formatted: bool) -> list[Message]:
        media = [
            InputMediaPhoto(
                data,
                filename=placed.file.filename,
                caption=(own[0] if formatted else own[1]) if own else None,
                parse_mode=ParseMode.MARKDOWN_V2 if own and formatted else None,
            )
            for (placed, data), own in zip(run, captions, strict=True)
        ]
        extra = _reply_parameters(reply_to)
        sent = await with_retries(
            lambda: bot.send_media_group(chat_id, media, message_thread_id=thread_id, **extra), deadline
        )
        return list(sent)

    try:
        return await upload(formatted=True)
    except BadRequest as exc:
        if not any(captions) or not unparseable(exc):
            raise
        _log.warning("Telegram could not parse a converted caption (%s); sending it as plain text", exc.message)
        return await upload(formatted=False)


async def _send_file(
    bot: Bot,
    chat_id: int,
    placed: Placed,
    data: bytes,
    caption: Caption | None,
    reply_to: int | None,
    thread_id: int | None,
    deadline: Deadline,
    markup: ReplyMarkup | None = None,
) -> Message:
    """One file, as a photo or a document; a photo Telegram refuses goes again as a document."""
    common: dict[str, Any] = {
        "chat_id": chat_id,
        "message_thread_id": thread_id,
        "filename": placed.file.filename,
        **_reply_parameters(reply_to),
    }
    if markup is not None:
        common["reply_markup"] = markup

    async def upload(kind: FileKind, formatted: bool) -> Message:
        extra = dict(common)
        if caption is not None:
            extra["caption"] = caption[0] if formatted else caption[1]
            if formatted:
                extra["parse_mode"] = ParseMode.MARKDOWN_V2
        if kind is FileKind.PICTURE:
            return await with_retries(lambda: bot.send_photo(photo=data, **extra), deadline)
        return await with_retries(lambda: bot.send_document(document=data, **extra), deadline)

    async def as_kind(kind: FileKind) -> Message:
        try:
            return await upload(kind, formatted=True)
        except BadRequest as exc:
            if caption is None or not unparseable(exc):
                raise
            _log.warning("Telegram could not parse a converted caption (%s); sending it as plain text", exc.message)
            return await upload(kind, formatted=False)

    if placed.kind is not FileKind.PICTURE:
        return await as_kind(FileKind.DOCUMENT)
    try:
        return await as_kind(FileKind.PICTURE)
    except BadRequest as exc:
        if too_long(exc):  # the caption, not the picture: a document would be refused the same
            raise
        # Dimensions Telegram will not show, a picture it cannot decode: as a file it still goes.
        _log.info("Telegram refused %s as a photo (%s); sending it as a document", placed.file.filename, exc.message)
        return await as_kind(FileKind.DOCUMENT)
