"""Sending to Telegram: MarkdownV2 with a plain-text fallback, 4096-character pieces, replies
that quote, forum topics, voice notes, flood control and transient errors.

Telegram counts its 4096 characters in UTF-16 code units (an emoji past U+FFFF is two), and so
does the split (:mod:`._markdown`); should Telegram still answer "message is too long", the part
goes again as smaller parts: a reply is never dropped for its length.

A reply is never lost to formatting: when Telegram refuses a converted piece ("can't parse
entities"), the same piece goes again as plain text. Nor to text no encoder takes (a lone
surrogate from a model): it is repaired before it goes. Flood control (429) is waited out as
long as Telegram says, however often it says it, as long as the wait ends within the send
deadline (``TELEGRAM_SEND_DEADLINE_S``, 60 s by default, counted from the first try of a
message); network errors are retried with back-off a few times within the same deadline.
Past it, :class:`SendGaveUp` says why, and the caller logs what was lost.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, NamedTuple, TypeAlias, TypeVar

from telegram import Bot, InlineKeyboardMarkup, Message, ReplyKeyboardMarkup, ReplyKeyboardRemove, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError, TimedOut

from bot.sdk import Deadline, ExponentialBackoff, PartlySent, repair_text, utf16_len

from ._markdown import split_for_telegram

__all__ = [
    "DEFAULT_DEADLINE_S",
    "ChatTarget",
    "ReplyMarkup",
    "SendGaveUp",
    "send_text",
    "send_voice",
    "too_long",
    "unparseable",
    "with_retries",
]

_log = logging.getLogger(__name__)
_Sent = TypeVar("_Sent")  # a Message, or the Messages of an album

DEFAULT_DEADLINE_S = 60.0
_NETWORK_ATTEMPTS = 4
_BACKOFF_S = 1.0
_BACKOFF_CAP_S = 8.0
_SEND_TIMEOUT_S = 60.0

#: What a message carries under it: buttons (inline), a reply keyboard, or the keyboard taken away.
ReplyMarkup: TypeAlias = InlineKeyboardMarkup | ReplyKeyboardMarkup | ReplyKeyboardRemove


class ChatTarget(NamedTuple):
    """Where a message goes: a chat, and a forum topic in it."""

    chat_id: int
    thread_id: int | None = None
    title: str | None = None  # the chat's title, for the log, when known


class SendGaveUp(TelegramError):
    """A message could not be sent within the send deadline (flood control or the network)."""


def retry_seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns that retry_after will become a timedelta
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _not_sent(exc: NetworkError) -> bool:
    """PTB reports a request it could not even encode (a ``UnicodeEncodeError``, a bad value) as
    a NetworkError "in the HTTP implementation": retrying the same request cannot help."""
    return isinstance(exc.__cause__, (ValueError, TypeError))


async def with_retries(send: Callable[[], Awaitable[_Sent]], deadline: Deadline) -> _Sent:
    """``send()`` until it works, waiting out flood control and retrying network errors while
    each wait ends before the ``deadline``.

    Raises:
        SendGaveUp: the next wait would end past the deadline, or the network failed too often.
        TelegramError: what Telegram refused (a ``BadRequest``, ``Forbidden``…), not retried.
    """
    backoff = ExponentialBackoff(_BACKOFF_S, _BACKOFF_CAP_S)
    failures = 0
    while True:
        try:
            async with asyncio.timeout(_SEND_TIMEOUT_S):
                return await send()
        except RetryAfter as exc:
            wait = retry_seconds(exc)
            if not deadline.allows(wait):
                raise SendGaveUp(
                    f"Telegram's flood control asked to wait {wait:.0f} s, past the "
                    f"{deadline.seconds:g} s send deadline (TELEGRAM_SEND_DEADLINE_S)"
                ) from exc
            _log.info("Telegram flood control: waiting %.1f s", wait)
            await asyncio.sleep(wait)
        except (TimedOut, NetworkError, TimeoutError) as exc:
            # A BadRequest is a NetworkError too: Telegram's answer, not the network's.
            if isinstance(exc, BadRequest) or (isinstance(exc, NetworkError) and _not_sent(exc)):
                raise
            failures += 1
            delay = backoff.delay()
            if failures == _NETWORK_ATTEMPTS or not deadline.allows(delay):
                raise SendGaveUp(
                    f"the network failed {failures} time(s) within the {deadline.seconds:g} s send "
                    f"deadline (last: {exc.__class__.__name__})"
                ) from exc
            _log.info("sending to Telegram failed (%s); retrying in %.1f s", exc.__class__.__name__, delay)
            await asyncio.sleep(delay)


def unparseable(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower() or "can't find end" in exc.message.lower()


def too_long(exc: BadRequest) -> bool:
    """Telegram refused a text or a caption as too long ("message is too long",
    "MESSAGE_TOO_LONG", "message caption is too long")."""
    message = exc.message.lower()
    return "too long" in message or "too_long" in message


async def send_text(
    bot: Bot,
    chat_id: int,
    text: str,
    *,
    reply_to: int | None = None,
    thread_id: int | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    markup: ReplyMarkup | None = None,
) -> list[Message]:
    """Send ``text`` (repaired, see :func:`bot.kernel.text.repair_text`) as one or more messages; the
    first quotes ``reply_to`` (if it still exists), the last carries ``markup`` (the reply's
    buttons). All of them are sent within ``deadline_s``.

    Raises:
        SendGaveUp: nothing went out within the deadline.
        PartlySent: some parts went out (its ``sent``; they stay sent), then one could not.
        TelegramError: what Telegram refused of the first part.
    """
    deadline = Deadline.after(deadline_s)
    parts = split_for_telegram(repair_text(text))
    sent: list[Message] = []
    for index, (converted, original) in enumerate(parts):
        where = _Where(
            chat_id, thread_id, reply_to if index == 0 else None, markup if index == len(parts) - 1 else None
        )
        try:
            await _send_fitting(bot, converted, original, where, deadline, sent)
        except TelegramError as exc:
            if not sent:
                raise
            raise PartlySent(f"only {len(sent)} of {len(parts)} parts went out: {exc.message}", sent) from exc
    return sent


class _Where(NamedTuple):
    """Where a part goes, what it quotes (the first part) and the buttons it carries (the last)."""

    chat_id: int
    thread_id: int | None
    reply_to: int | None
    markup: ReplyMarkup | None

    def common(self) -> dict[str, Any]:
        common: dict[str, Any] = {"chat_id": self.chat_id, "message_thread_id": self.thread_id}
        if self.reply_to is not None:
            common["reply_parameters"] = ReplyParameters(message_id=self.reply_to, allow_sending_without_reply=True)
        if self.markup is not None:
            common["reply_markup"] = self.markup
        return common


async def _send_fitting(
    bot: Bot, converted: str, original: str, where: _Where, deadline: Deadline, sent: list[Message]
) -> None:
    """One part, added to ``sent``. Should Telegram still find it too long (it counts after its
    own parsing, and may count differently from us), the part goes as smaller parts instead,
    halved until they fit: a reply is never dropped for its length."""
    try:
        sent.append(await _send_part(bot, converted, original, where.common(), deadline))
        return
    except BadRequest as exc:
        if not too_long(exc) or utf16_len(original) < 2:
            raise
        refusal = exc.message
    smaller = split_for_telegram(original, utf16_len(original) // 2)
    _log.warning(
        "Telegram found a part of a reply too long (%s); sending it as %d smaller parts", refusal, len(smaller)
    )
    for index, (piece, piece_original) in enumerate(smaller):
        first, last = index == 0, index == len(smaller) - 1
        narrowed = where._replace(reply_to=where.reply_to if first else None, markup=where.markup if last else None)
        await _send_fitting(bot, piece, piece_original, narrowed, deadline, sent)


async def _send_part(bot: Bot, converted: str, original: str, common: dict[str, Any], deadline: Deadline) -> Message:
    """One part as MarkdownV2, or as plain text if Telegram cannot parse the conversion."""

    async def formatted() -> Message:
        return await bot.send_message(text=converted, parse_mode=ParseMode.MARKDOWN_V2, **common)

    async def plain() -> Message:
        return await bot.send_message(text=original, **common)

    try:
        return await with_retries(formatted, deadline)
    except BadRequest as exc:
        if not unparseable(exc):
            raise
        _log.warning("Telegram could not parse a converted reply (%s); sending it as plain text", exc.message)
        return await with_retries(plain, deadline)


async def send_voice(
    bot: Bot,
    chat_id: int,
    voice: bytes,
    *,
    duration: int | None = None,
    reply_to: int | None = None,
    thread_id: int | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
) -> Message:
    """Send ``voice`` (Ogg/Opus) as a voice note, quoting ``reply_to`` if it still exists; flood
    control and network errors are retried as for text, within ``deadline_s``.

    Raises the error that finally stopped it (a ``BadRequest`` for audio Telegram refuses).
    """
    common: dict[str, Any] = {"chat_id": chat_id, "message_thread_id": thread_id}
    if reply_to is not None:
        common["reply_parameters"] = ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)

    async def upload() -> Message:
        return await bot.send_voice(voice=voice, duration=duration, filename="voice.ogg", **common)

    return await with_retries(upload, Deadline.after(deadline_s))
