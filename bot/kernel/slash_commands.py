"""A slash command someone used, as the INTERACTION_RECEIVED event carries it.

Platforms with commands of their own (Discord's ``/troupe``, ``/summarize``, ``/chat`` …) say
which was used, with what options, by whom and where; a plugin that follows them (analytics, an
audit log) reads this without knowing the platform's objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.kernel.frozen_map import NOTHING, FrozenMap

__all__ = ["SlashCommand"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashCommand:
    """``/name`` used by the person ``entity_id`` in the room ``room_id`` (of ``world_id``;
    None in a DM), with the ``options`` given, read-only: text, a number or a yes/no as the
    platform typed it, a channel or a person as its platform id in text; an option left empty
    is not there. ``interaction_id``: the platform's id of the use, the same when the platform
    delivers it again."""

    name: str
    options: Mapping[str, object] = field(default_factory=lambda: NOTHING)
    entity_id: str
    room_id: str
    world_id: str | None = None
    interaction_id: str

    def __post_init__(self) -> None:
        if not isinstance(self.options, FrozenMap):
            object.__setattr__(self, "options", FrozenMap(self.options))
