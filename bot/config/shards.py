"""Discord shards: how many a character's bot has, and which of them one connection serves.

A Discord bot in more than 2,500 servers must split its gateway connection into shards; Discord
sends each server's events to shard ``(server id >> 22) % count``, and direct messages to shard
0. The character says how many (``DISCORD_SHARD_COUNT``, default 1: unsharded). With several
daemons each shard is leased on its own, so one daemon connects the bot with the shard ids it
holds (:class:`Shards`) and another with the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.config.character import Character
from bot.config.settings import SettingReader, character_setting

__all__ = ["MAX_SHARDS", "Reshardable", "SHARD_COUNT_KEY", "Shards", "shard_count"]

SHARD_COUNT_KEY = "DISCORD_SHARD_COUNT"
#: Far beyond any bot troupe is meant for (Discord asks for one shard per 1,000–2,500 servers).
MAX_SHARDS = 1000


@dataclass(frozen=True, slots=True)
class Shards:
    """Shard ``ids`` (sorted, unique, each below ``count``) of a bot split into ``count`` shards.

    Raises:
        ValueError: ``count`` is below 1, ``ids`` is empty, unsorted, repeats an id, or has one
            outside ``0 … count - 1``.
    """

    count: int
    ids: tuple[int, ...]

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"a shard count is a whole number, 1 or more, not {self.count!r}")
        if not self.ids:
            raise ValueError("no shard ids: a connection serves at least one shard")
        if any(isinstance(i, bool) or not isinstance(i, int) for i in self.ids):
            raise ValueError(f"shard ids are whole numbers, not {self.ids!r}")
        if list(self.ids) != sorted(set(self.ids)):
            raise ValueError(f"shard ids must be sorted and unique, not {self.ids!r}")
        if self.ids[0] < 0 or self.ids[-1] >= self.count:
            raise ValueError(
                f"shard ids must be from 0 to {self.count - 1} (the count is {self.count}), not {self.ids!r}"
            )

    @classmethod
    def all(cls, count: int) -> Shards:
        """Every shard of a bot split into ``count``: one daemon serving the whole bot."""
        return cls(count, tuple(range(count)))

    def shard_of(self, guild_id: int | None) -> int:
        """The shard Discord sends a server's events to; ``None`` (direct messages) is shard 0."""
        return 0 if guild_id is None else (guild_id >> 22) % self.count

    def covers(self, guild_id: int | None) -> bool:
        """Whether this connection hears the server ``guild_id`` (``None``: direct messages)."""
        return self.shard_of(guild_id) in self.ids

    def __str__(self) -> str:
        return f"shard{'s' if len(self.ids) > 1 else ''} {', '.join(map(str, self.ids))} of {self.count}"


def shard_count(character: Character, environ: Mapping[str, str]) -> int:
    """How many shards the character's Discord bot is split into (``DISCORD_SHARD_COUNT``, read
    like any character setting); 1 when unset.

    Raises:
        ConfigError: the value is not a whole number from 1 to :data:`MAX_SHARDS`; the message
            names the character and the setting.
    """
    read = SettingReader(lambda key: character_setting(character, key, environ), character.name)
    return read.whole(SHARD_COUNT_KEY, 1, 1, MAX_SHARDS)


@runtime_checkable
class Reshardable(Protocol):
    """A platform connection that can be moved to another set of shards (the Discord adapter,
    registered as the runtime's ``discord`` service)."""

    async def reshard(self, shards: Shards) -> None:
        """Connect again with ``shards`` instead of the ones held now; returns once connected.

        Raises:
            ConfigError: the platform refused the configuration.
        """
        ...
