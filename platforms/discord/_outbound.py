"""Sending to Discord: replies, messages the agent starts, uploads, retries.

Rate limits (429) are discord.py's job: it waits as Discord says, up to five tries. A rate limit
that outlasts those is waited out here, as Discord says, for as long as the wait ends within the
send deadline (``DISCORD_SEND_DEADLINE_S``, 60 s by default, counted from the first try of a
message); a send that fails for a transient reason (a 5xx that outlasted discord.py's own
retries, a dropped connection, a timeout) is tried again with back-off, a few times, within the
same deadline. Past it, :class:`SendGaveUp` says why and the caller logs what was lost. Every
piece carries a nonce that Discord enforces, so a retry of a message Discord did create (the
answer was lost) never posts it twice. Text no encoder takes (a lone surrogate) is repaired
before it goes. No reply may ping @everyone, @here or a role, whatever the model wrote.
"""

from __future__ import annotations

import asyncio
import io
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import aiohttp
import discord

from bot.sdk import (
    Deadline,
    ExponentialBackoff,
    OutgoingFile,
    PartlySent,
    SizeLimits,
    load,
    place,
    repair_text,
    split_message,
)

__all__ = [
    "DEFAULT_DEADLINE_S",
    "SAFE_MENTIONS",
    "SendGaveUp",
    "add_reaction",
    "describe",
    "embeds_of",
    "send_chunks",
    "uploads_of",
    "what_is_sent",
]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: People may be pinged by a reply (it answers them); the whole server or a role never.
SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)

DEFAULT_DEADLINE_S = 60.0
_NETWORK_ATTEMPTS = 3
_BACKOFF_S = 1.0
_BACKOFF_CAP_S = 8.0
_SEND_TIMEOUT_S = 60.0
_MAX_FILES = 10  # Discord's limit per message
_MAX_EMBEDS = 10
DISCORD_LIMIT = 2000  # characters per message


class SendGaveUp(Exception):
    """A message could not be sent within the send deadline (rate limits or the network)."""


def describe(exc: BaseException) -> str:
    """What went wrong, for a log line: Discord's status and message, our own reason, or the
    kind of error (never its text, which may quote a request)."""
    if isinstance(exc, discord.HTTPException):
        return f"{exc.status} {exc.text}"
    return str(exc) if isinstance(exc, (SendGaveUp, PartlySent)) else exc.__class__.__name__


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, discord.HTTPException):
        return exc.status >= 500
    return isinstance(exc, (aiohttp.ClientError, OSError, TimeoutError))


def _rate_limited(exc: BaseException) -> float | None:
    """The wait Discord asked for, when discord.py gave up on a 429 after its own tries."""
    if not isinstance(exc, discord.HTTPException) or exc.status != 429:
        return None
    try:
        return float(getattr(exc.response, "headers", {}).get("Retry-After") or 1.0)
    except ValueError:
        return 1.0


async def _send(channel: Any, deadline: Deadline, **kwargs: Any) -> discord.Message:
    """``channel.send(**kwargs)`` until it works, within ``deadline``; see the module docstring."""
    kwargs["nonce"] = secrets.token_hex(12)  # Discord takes up to 25 characters

    async def send() -> discord.Message:
        for file in kwargs.get("files") or ():  # a retried upload must start from the beginning of each file
            file.reset()
        sent: discord.Message = await channel.send(**kwargs)
        return sent

    return await _with_retries(send, deadline, getattr(channel, "id", "?"), "sending")


async def add_reaction(
    message: discord.Message | discord.PartialMessage,
    emoji: str | discord.PartialEmoji,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
) -> None:
    """Put ``emoji`` (unicode, or a server's own) on ``message`` as the bot, retried as
    a send is (the same reaction twice is still one: Discord's PUT is idempotent).

    Raises:
        SendGaveUp: Discord did not take it within the deadline.
        discord.HTTPException: what Discord refused (no permission, unknown message or emoji).
    """

    async def react() -> None:
        await message.add_reaction(emoji)

    await _with_retries(react, Deadline.after(deadline_s), message.channel.id, "reacting")


async def _with_retries(call: Callable[[], Awaitable[_T]], deadline: Deadline, channel_id: object, doing: str) -> _T:
    """``call()`` until it works, waiting out rate limits and retrying transient failures within
    ``deadline`` (see the module docstring)."""
    backoff = ExponentialBackoff(_BACKOFF_S, _BACKOFF_CAP_S)
    failures = 0
    while True:
        try:
            # discord.py sleeps out rate limits inside the call: the deadline bounds that too.
            async with asyncio.timeout(min(_SEND_TIMEOUT_S, max(deadline.remaining(), 0.0))):
                return await call()
        except Exception as exc:
            if isinstance(exc, TimeoutError) and deadline.remaining() <= 0:
                raise SendGaveUp(
                    f"no answer from Discord within the {deadline.seconds:g} s send deadline "
                    "(DISCORD_SEND_DEADLINE_S): rate-limited or unreachable"
                ) from exc
            wait = _rate_limited(exc)
            if wait is not None:
                if not deadline.allows(wait):
                    raise SendGaveUp(
                        f"Discord's rate limit asked to wait {wait:g} s, past the {deadline.seconds:g} s "
                        "send deadline (DISCORD_SEND_DEADLINE_S)"
                    ) from exc
                _log.info("Discord rate limit in channel %s: waiting %.1f s", channel_id, wait)
                await asyncio.sleep(wait)
                continue
            if not _transient(exc):
                raise
            failures += 1
            delay = backoff.delay()
            if failures == _NETWORK_ATTEMPTS or not deadline.allows(delay):
                last = f"HTTP {exc.status}" if isinstance(exc, discord.HTTPException) else exc.__class__.__name__
                raise SendGaveUp(
                    f"{doing} failed {failures} time(s) within the {deadline.seconds:g} s send deadline (last: {last})"
                ) from exc
            _log.info(
                "%s in channel %s failed (%s); retrying in %.1f s", doing, channel_id, exc.__class__.__name__, delay
            )
            await asyncio.sleep(delay)


async def uploads_of(files: Iterable[OutgoingFile], limit: int) -> tuple[list[discord.File], str]:
    """``files`` as uploads: those of at most ``limit`` bytes, ten at most (Discord's limits);
    and the note on those that do not go."""
    limits = SizeLimits("Discord", file=limit, per_message=_MAX_FILES)
    loaded, note = await load(place(files, limits))
    uploads = [
        discord.File(io.BytesIO(data), filename=placed.file.filename, description=placed.file.description or None)
        for placed, data in loaded
    ]
    return uploads, note


def embeds_of(embeds: object) -> list[discord.Embed]:
    """A reply's ``embeds``: dicts in Discord's embed shape (title, description, image …), ten
    at most; anything else is skipped with a warning."""
    found: list[discord.Embed] = []
    items = list(embeds) if isinstance(embeds, (list, tuple)) else []
    for item in items[:_MAX_EMBEDS]:
        if isinstance(item, Mapping):
            found.append(discord.Embed.from_dict(dict(item)))
        else:
            _log.warning("not an embed, skipped: %s", type(item).__name__)
    return found


async def send_chunks(
    channel: Any,
    text: str,
    *,
    files: Sequence[discord.File] = (),
    embeds: Sequence[discord.Embed] = (),
    view: discord.ui.View | None = None,
    reference: discord.Message | discord.PartialMessage | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
) -> list[discord.Message]:
    """Send ``text`` (repaired, split under 2000 characters), ``files``, ``embeds`` and the
    components of ``view`` (buttons; on the last message), all within ``deadline_s``.

    The first message replies to ``reference`` when given (without pinging its author).

    Raises:
        SendGaveUp: nothing went out within the deadline.
        PartlySent: some parts went out (its ``sent``; they stay sent), then one could not.
        discord.HTTPException: what Discord refused of the first part.
    """
    deadline = Deadline.after(deadline_s)
    chunks = split_message(repair_text(text), DISCORD_LIMIT) or ([""] if files or embeds or view else [])
    sent: list[discord.Message] = []
    for index, chunk in enumerate(chunks):
        kwargs: dict[str, Any] = {"content": chunk or None, "allowed_mentions": SAFE_MENTIONS}
        if index == 0 and reference is not None:
            kwargs["reference"] = reference.to_reference(fail_if_not_exists=False)
            kwargs["mention_author"] = False
        if index == len(chunks) - 1 and files:
            kwargs["files"] = list(files)
        if index == len(chunks) - 1 and embeds:
            kwargs["embeds"] = list(embeds)
        if index == len(chunks) - 1 and view is not None:
            kwargs["view"] = view
        try:
            sent.append(await _send(channel, deadline, **kwargs))
        except Exception as exc:
            if not sent:
                raise
            raise PartlySent(f"only {len(sent)} of {len(chunks)} parts went out: {describe(exc)}", sent) from exc
    return sent


def what_is_sent(target: Any, answering: Any) -> str:
    """A message to ``target`` (a channel), answering ``answering`` if not None, as a log line names it."""
    where = f"#{target.name}" if getattr(target, "name", None) else "a DM"
    if answering is not None:
        return f"a reply in {where} (channel {target.id}) to message {answering.id}"
    return f"a message in {where} (channel {target.id})"
