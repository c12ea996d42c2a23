"""Sending to Telegram: MarkdownV2 with a plain-text fallback, 4096-character pieces, replies
that quote, forum topics, voice notes, flood control and transient errors.

A reply is never lost to formatting: when Telegram refuses a converted piece ("can't parse
entities"), the same piece goes again as plain text. A 429 is waited out (as long as Telegram
says, within reason) and network errors are retried with back-off, a few times each.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from datetime import timedelta
from typing import Any

from telegram import Bot, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TimedOut

from bot.backoff import ExponentialBackoff

from ._markdown import split_for_telegram

__all__ = ["send_text", "send_voice"]

_log = logging.getLogger(__name__)

_ATTEMPTS = 4
_BACKOFF_S = 1.0
_BACKOFF_CAP_S = 8.0
_MAX_WAIT_S = 120.0  # a longer flood wait than this is not worth holding a reply for
_SEND_TIMEOUT_S = 60.0


def retry_seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns that retry_after will become a timedelta
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _with_retries(send: Any) -> Message:
    backoff = ExponentialBackoff(_BACKOFF_S, _BACKOFF_CAP_S)
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            async with asyncio.timeout(_SEND_TIMEOUT_S):
                return await send()
        except RetryAfter as exc:
            wait = retry_seconds(exc)
            if attempt == _ATTEMPTS or wait > _MAX_WAIT_S:
                raise
            _log.info("Telegram flood control: waiting %.1f s", wait)
            await asyncio.sleep(wait)
        except (TimedOut, NetworkError, TimeoutError) as exc:
            if isinstance(exc, BadRequest) or attempt == _ATTEMPTS:  # BadRequest is a NetworkError too
                raise
            delay = backoff.delay()
            _log.info("sending to Telegram failed (%s); retrying in %.1f s", exc.__class__.__name__, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


def _unparseable(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower() or "can't find end" in exc.message.lower()


async def send_text(
    bot: Bot, chat_id: int, text: str, *, reply_to: int | None = None, thread_id: int | None = None
) -> list[Message]:
    """Send ``text`` as one or more messages; the first quotes ``reply_to`` (if it still exists).

    Raises the error that finally stopped a piece (what was sent before stays sent).
    """
    sent: list[Message] = []
    for index, (converted, original) in enumerate(split_for_telegram(text)):
        common: dict[str, Any] = {"chat_id": chat_id, "message_thread_id": thread_id}
        if index == 0 and reply_to is not None:
            common["reply_parameters"] = ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)

        async def formatted(converted: str = converted, common: dict[str, Any] = common) -> Message:
            return await bot.send_message(text=converted, parse_mode=ParseMode.MARKDOWN_V2, **common)

        async def plain(original: str = original, common: dict[str, Any] = common) -> Message:
            return await bot.send_message(text=original, **common)

        try:
            sent.append(await _with_retries(formatted))
        except BadRequest as exc:
            if not _unparseable(exc):
                raise
            _log.warning("Telegram could not parse a converted reply (%s); sending it as plain text", exc.message)
            sent.append(await _with_retries(plain))
    return sent


async def send_voice(
    bot: Bot, chat_id: int, voice: bytes, *, duration: int | None = None, reply_to: int | None = None,
    thread_id: int | None = None,
) -> Message:
    """Send ``voice`` (Ogg/Opus) as a voice note, quoting ``reply_to`` if it still exists; flood
    control and network errors are retried as for text.

    Raises the error that finally stopped it (a ``BadRequest`` for audio Telegram refuses).
    """
    common: dict[str, Any] = {"chat_id": chat_id, "message_thread_id": thread_id}
    if reply_to is not None:
        common["reply_parameters"] = ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)

    async def upload() -> Message:
        return await bot.send_voice(voice=voice, duration=duration, filename="voice.ogg", **common)

    return await _with_retries(upload)
