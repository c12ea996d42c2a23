"""What a browser watching a conversation is told, as it happens, and who is listening.

The console's Chat page keeps one server-sent-events stream per open page; each reads a bounded
queue of its own from :class:`Listeners`, kept by the adapter (never a module-level registry).
A page that cannot keep up loses the partial texts it missed (the next one has all the text so
far); a whole message always gets through, pushing out what the page has not read yet.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from ._lines import Line

__all__ = ["ChatEvent", "Closing", "Listeners", "Partial", "QUEUE_SIZE", "Said", "TooManyListeners", "Typing"]

#: Events a page may have unread before partial texts are dropped.
QUEUE_SIZE = 64
#: Pages that may watch one conversation at once (tabs of several browsers under one name).
MAX_PER_CONVERSATION = 16


@dataclass(frozen=True, slots=True)
class Typing:
    """The character is writing an answer."""


@dataclass(frozen=True, slots=True)
class Partial:
    """The reply as written so far (the whole of it, not the newest piece)."""

    text: str


@dataclass(frozen=True, slots=True)
class Said:
    """A whole message in the conversation: the person's own, or the character's."""

    line: Line


@dataclass(frozen=True, slots=True)
class Closing:
    """The character stops running here (the daemon stops, the character reloads): the page's
    stream ends, and the browser connects again to whatever runs next."""


ChatEvent = Typing | Partial | Said | Closing


class TooManyListeners(Exception):
    """Too many pages watch this conversation already."""


class Listeners:
    """The queues of the pages watching each conversation (by room id)."""

    def __init__(self, *, queue_size: int = QUEUE_SIZE, per_room: int = MAX_PER_CONVERSATION) -> None:
        self.queue_size, self.per_room = queue_size, per_room
        self._rooms: dict[str, set[asyncio.Queue[ChatEvent]]] = {}

    def count(self, room_id: str) -> int:
        return len(self._rooms.get(room_id, ()))

    @contextlib.contextmanager
    def listen(self, room_id: str) -> Iterator[asyncio.Queue[ChatEvent]]:
        """A queue of the room's events for as long as the block runs.

        Raises:
            TooManyListeners: :attr:`per_room` pages listen already.
        """
        queues = self._rooms.setdefault(room_id, set())
        if len(queues) >= self.per_room:
            raise TooManyListeners(f"{len(queues)} pages follow this conversation already; close one")
        queue: asyncio.Queue[ChatEvent] = asyncio.Queue(self.queue_size)
        queues.add(queue)
        try:
            yield queue
        finally:
            queues.discard(queue)
            if not queues:
                self._rooms.pop(room_id, None)

    def close(self) -> None:
        """Tell every page that the conversation ends here (:class:`Closing`)."""
        for room_id in list(self._rooms):
            self.publish(room_id, Closing())

    def publish(self, room_id: str, event: ChatEvent) -> None:
        """Tell every page watching the room (never waits)."""
        for queue in self._rooms.get(room_id, ()):
            if queue.full():
                if not isinstance(event, (Said, Closing)):
                    continue  # a page behind gets the next partial text, which holds this one
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(event)
