"""Companions: the characters that share rooms, which placement keeps on one daemon.

The troupe's one decision per message (``plugins/core/_troupe.py``) is made among the characters
of one daemon; characters in the same rooms are best served by the same daemon. This module holds
the pure part: who is tied to whom (how many rooms two characters share) and the groups that
ties form (connected components). Placement asks it:

- :meth:`Companions.tie` — how strongly a character is tied to a set of characters (a daemon's);
- :meth:`Companions.key` — one name for a character's whole group, so that every member of a
  group prefers the same daemon (rendezvous hashing on the group's key, not the character's);
- :meth:`Companions.groups` — the groups within a set of characters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from bot.store import RoomSharing

__all__ = ["Companions"]


class Companions:
    """Ties between characters, from the rooms they share."""

    def __init__(self, sharing: Iterable[RoomSharing] = ()) -> None:
        self._ties: defaultdict[str, dict[str, int]] = defaultdict(dict)
        for pair in sharing:
            if pair.a != pair.b and pair.rooms > 0:
                self._ties[pair.a][pair.b] = pair.rooms
                self._ties[pair.b][pair.a] = pair.rooms
        self._key: dict[str, str] = {}
        for group in self.groups(self._ties):
            first = min(group)
            self._key.update(dict.fromkeys(group, first))

    def __bool__(self) -> bool:
        return bool(self._ties)

    def of(self, agent_id: str) -> dict[str, int]:
        """``agent_id``'s companions and how many rooms each shares with it."""
        return self._ties.get(agent_id, {})

    def tie(self, agent_id: str, others: Collection[str]) -> int:
        """How many rooms ``agent_id`` shares with ``others``, all together."""
        return sum(rooms for other, rooms in self.of(agent_id).items() if other in others)

    def key(self, agent_id: str) -> str:
        """The name of ``agent_id``'s group (the smallest id in it; its own id when alone)."""
        return self._key.get(agent_id, agent_id)

    def groups(self, agent_ids: Iterable[str]) -> list[list[str]]:
        """The groups among ``agent_ids`` (ties outside them do not join two groups), each sorted,
        the groups by their first id."""
        members = set(agent_ids)
        seen: set[str] = set()
        groups: list[list[str]] = []
        for start in sorted(members):
            if start in seen:
                continue
            group, frontier = [], [start]
            seen.add(start)
            while frontier:
                current = frontier.pop()
                group.append(current)
                for other in self.of(current):
                    if other in members and other not in seen:
                        seen.add(other)
                        frontier.append(other)
            groups.append(sorted(group))
        return groups
