"""The order messages arrive in, kept in their times.

A room's history is read newest first by time, and messages with the same time by the order they
were stored in. Neither is the order people spoke in when several messages share a time: Telegram
dates messages to the second, Discord to the millisecond, and messages heard together are stored
concurrently, a new speaker's after the extra writes that meeting them takes. So an adapter stamps
each message as it hears it, in the order the platform delivers them: one that does not come after
the room's last one by its time, but is less than a second older (a tie at the platform's
resolution), is dated a millisecond after it. An older message (read back after a lost
connection) keeps its own time.
"""

from __future__ import annotations

from collections import OrderedDict

from .types import Memory

__all__ = ["Arrivals"]

_TIE_MS = 1000  # the coarsest platform clock (Telegram's): closer than this may be a tie
_ROOMS = 4096  # rooms remembered, least recently heard forgotten first


class Arrivals:
    """Per room, the time of the last message heard; one per adapter."""

    def __init__(self, rooms: int = _ROOMS) -> None:
        self._last: OrderedDict[str, int] = OrderedDict()
        self._rooms = rooms

    def stamp(self, memory: Memory) -> None:
        """Date ``memory`` (just translated, the adapter's own) after the room's last message if
        it ties with it; call in the order the platform delivered the messages, before any wait."""
        if memory.created_at is None:
            return
        last = self._last.pop(memory.room_id, None)
        if last is not None and last - _TIE_MS < memory.created_at <= last:
            memory.created_at = last + 1
        self._last[memory.room_id] = max(memory.created_at, last or 0)
        if len(self._last) > self._rooms:
            self._last.popitem(last=False)
