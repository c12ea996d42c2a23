"""Which characters share rooms: what placement keeps together on one daemon.

Two characters share a room when each has a room for the same platform channel (same source and
channel id) that is not a private one. Private chats are left out because a platform may give
one person's private chat with each bot the same id (Telegram's private chat id is the user's id),
which says nothing about the characters meeting.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.kernel.types import ChannelType

__all__ = ["ROOM_SHARING_SQL", "RoomSharing"]

_PRIVATE = ", ".join(f"'{t.value}'" for t in (ChannelType.SELF, ChannelType.DM, ChannelType.VOICE_DM, ChannelType.API))

#: SQL for both backends: one row (a, b, rooms) per pair of agents a < b sharing rooms.
ROOM_SHARING_SQL = f"""
SELECT x.agent_id AS a, y.agent_id AS b, count(*) AS rooms
FROM rooms x JOIN rooms y
  ON y.source = x.source AND y.channel_id = x.channel_id AND y.agent_id > x.agent_id
WHERE x.channel_id IS NOT NULL AND x.type NOT IN ({_PRIVATE}) AND y.type NOT IN ({_PRIVATE})
GROUP BY x.agent_id, y.agent_id
ORDER BY x.agent_id, y.agent_id
"""


@dataclass(frozen=True, slots=True)
class RoomSharing:
    """Two characters (``a < b``) and how many platform rooms both are in."""

    a: str
    b: str
    rooms: int

    @classmethod
    def between(cls, x: str, y: str, rooms: int) -> RoomSharing:
        """The pair of ``x`` and ``y`` in either order."""
        return cls(min(x, y), max(x, y), rooms)
