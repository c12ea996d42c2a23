"""Sending to Discord: replies, messages the agent starts, uploads, retries.

Rate limits (429) are discord.py's job: it waits as Discord says. On top of that a send that
fails for a transient reason (a 5xx that outlasted discord.py's own retries, a dropped
connection, a timeout) is tried again with back-off, a few times, and then given up and logged.
No reply may ping @everyone, @here or a role, whatever the model wrote.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import discord

from bot.chunking import split_message

__all__ = ["SAFE_MENTIONS", "files_of", "send_chunks"]

_log = logging.getLogger(__name__)

#: People may be pinged by a reply (it answers them); the whole server or a role never.
SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)

_ATTEMPTS = 3
_BACKOFF_S = 1.0
_SEND_TIMEOUT_S = 60.0
_MAX_FILES = 10  # Discord's limit per message
DISCORD_LIMIT = 2000  # characters per message


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, discord.HTTPException):
        return exc.status >= 500
    return isinstance(exc, (aiohttp.ClientError, OSError, TimeoutError))


async def _send(channel: Any, **kwargs: Any) -> discord.Message:
    delay = _BACKOFF_S
    for attempt in range(1, _ATTEMPTS + 1):
        files = kwargs.get("files") or ()
        for file in files:  # a retried upload must start from the beginning of each file
            file.reset()
        try:
            async with asyncio.timeout(_SEND_TIMEOUT_S):
                return await channel.send(**kwargs)
        except Exception as exc:
            if attempt == _ATTEMPTS or not _transient(exc):
                raise
            _log.info("sending to channel %s failed (%s); retrying in %.0f s", getattr(channel, "id", "?"),
                      exc.__class__.__name__, delay)
            await asyncio.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def files_of(content: Mapping[str, Any]) -> list[discord.File]:
    """Uploads an action attached: ``content["files"]`` of paths, or ``{"data": bytes, "name": str}``,
    or ``{"path": str}``. Unreadable entries are skipped with a warning."""
    found: list[discord.File] = []
    for item in list(content.get("files") or ())[:_MAX_FILES]:
        try:
            if isinstance(item, (str, Path)):
                found.append(discord.File(str(item)))
            elif isinstance(item, Mapping) and isinstance(item.get("data"), (bytes, bytearray)):
                found.append(discord.File(io.BytesIO(bytes(item["data"])), filename=str(item.get("name") or "file")))
            elif isinstance(item, Mapping) and item.get("path"):
                found.append(discord.File(str(item["path"]), filename=item.get("name")))
        except OSError as exc:
            _log.warning("cannot attach %r: %s", item, exc.__class__.__name__)
    return found


async def send_chunks(
    channel: Any, text: str, *, files: Sequence[discord.File] = (), reference: discord.Message | None = None
) -> list[discord.Message]:
    """Send ``text`` (split under 2000 characters) and ``files`` (on the last message).

    The first message replies to ``reference`` when given (without pinging its author). Raises
    the last error when a message finally cannot be sent; what was sent before stays sent.
    """
    chunks = split_message(text, DISCORD_LIMIT) or ([""] if files else [])
    sent: list[discord.Message] = []
    for index, chunk in enumerate(chunks):
        kwargs: dict[str, Any] = {"content": chunk or None, "allowed_mentions": SAFE_MENTIONS}
        if index == 0 and reference is not None:
            kwargs["reference"] = reference.to_reference(fail_if_not_exists=False)
            kwargs["mention_author"] = False
        if index == len(chunks) - 1 and files:
            kwargs["files"] = list(files)
        sent.append(await _send(channel, **kwargs))
    return sent
