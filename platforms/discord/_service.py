"""The key the Discord adapter is offered under in its runtime, typed as the adapter itself for
this package's actions and providers (the daemon knows it as a
:class:`bot.runtime.adapters.ShardedPlatformService`, under :data:`bot.runtime.adapters.DISCORD_SERVICE`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import ServiceKey

from ._mapping import SOURCE

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["DISCORD_ADAPTER"]

DISCORD_ADAPTER: ServiceKey[DiscordAdapter] = ServiceKey(SOURCE)
