"""Albums: several photos, videos or documents sent together reach the character as one message.

Telegram delivers an album (a "media group") as one message per item, each in its own update,
sharing a ``media_group_id``; the caption is on one of them (usually the first). Answered one by
one, a person who shares four photos and asks "which is best?" would get four answers.
:class:`Albums` gathers the parts per chat and media group until none has arrived for
``quiet_s`` (at most ``longest_s`` after the first), and hears them once (:func:`translate_album`).

Exactly once: each part's update stays in the inbox (:mod:`._inbox`) until the album has been
handled — every part's handler waits for it, and fails when it fails — so a restart during the
wait replays all the parts, which are gathered again. The album's memory id comes from the chat
and the media group, not from any part, so parts delivered again (all, or some after a crash
between two parts' confirmations) make the same message, which the pipeline's claim answers
only once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from telegram import Message

from ._mapping import Translated, album_memory_id, attachments, translate
from ._message_ref import TelegramMessageRef

__all__ = ["Albums", "translate_album"]

_log = logging.getLogger(__name__)

QUIET_S = 1.0
"""How long after an album's last part more may still come (Telegram sends them in one batch)."""
LONGEST_S = 5.0
"""How long after the first part the album is heard however many parts are still coming."""


def translate_album(agent_id: str, parts: Sequence[Message], *, bot_id: int, bot_username: str) -> Translated:
    """The parts of one album as one message: the words (and mention, reply, sender) of the
    part with a caption (else the first), the files of all of them in the order sent. Replies
    quote that part. Pure, like :func:`._mapping.translate`."""
    ordered = sorted(parts, key=lambda m: m.message_id)
    speaking = next((m for m in ordered if m.caption), ordered[0])
    seen = translate(agent_id, speaking, bot_id=bot_id, bot_username=bot_username)
    assert speaking.media_group_id is not None  # an album's part
    content = seen.memory.content
    files = tuple(item for part in ordered for item in attachments(part))
    if files:
        content = replace(content, attachments=files)
    where = TelegramMessageRef.of(seen.memory)
    assert where is not None  # every translated message has one
    album = replace(
        where, media_group_id=speaking.media_group_id, album_message_ids=tuple(m.message_id for m in ordered)
    )
    album_id = album_memory_id(agent_id, seen.chat_id, speaking.media_group_id)
    metadata = album.kept_in(seen.memory.metadata)
    return replace(seen, memory=replace(seen.memory, id=album_id, content=content, metadata=metadata))


@dataclass(eq=False)
class _Album:
    parts: list[Message]
    heard: asyncio.Future[None]
    """Done when the album has been handled; failed (or cancelled) when that failed."""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


class Albums:
    """The albums of one bot being gathered (see the module docstring)."""

    def __init__(self, *, quiet_s: float = QUIET_S, longest_s: float = LONGEST_S) -> None:
        self.quiet_s = quiet_s
        self.longest_s = longest_s
        self._open: dict[tuple[int, str], _Album] = {}

    async def gather(self, part: Message, receive: Callable[[list[Message]], Awaitable[None]]) -> None:
        """Add ``part`` (a message with a ``media_group_id``) to its album; return once the album
        has been received (``receive`` with all its parts, called by the first part's task).

        Raises:
            Exception: what ``receive`` raised, in every part's task, so that none of the parts
                leaves the inbox (a restart hears the album again).
        """
        assert part.media_group_id is not None
        key = (part.chat.id, part.media_group_id)
        album = self._open.get(key)
        if album is not None:
            album.parts.append(part)
            album.arrived.set()
            await asyncio.shield(album.heard)
            return
        album = self._open[key] = _Album([part], asyncio.get_running_loop().create_future())
        try:
            await self._wait_for_parts(album)
            # A part that comes later starts an album of its own, with the same id: the claim
            # on that id keeps it from being answered again.
            del self._open[key]
            _log.debug("album %s in chat %s: %d parts", part.media_group_id, part.chat.id, len(album.parts))
            await receive(list(album.parts))
        except Exception as exc:
            album.heard.set_exception(exc)
            album.heard.exception()  # retrieved: an album of one part has no one else waiting
            raise
        except BaseException:  # cancelled (shutting down): the other parts' tasks end too
            album.heard.cancel()
            raise
        finally:
            if self._open.get(key) is album:
                del self._open[key]
        album.heard.set_result(None)

    async def _wait_for_parts(self, album: _Album) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + self.longest_s
        while True:
            album.arrived.clear()
            wait = min(self.quiet_s, end - loop.time())
            if wait <= 0:
                return
            try:
                await asyncio.wait_for(album.arrived.wait(), wait)
            except TimeoutError:
                return
