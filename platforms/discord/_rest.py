"""Which Discord-compatible server discord.py talks to.

discord.py reads its REST base from one class attribute, so a process talks to one server: the
first character that sets DISCORD_API_BASE (or none, for discord.com) decides, and a character
asking for a different one is refused with a clear message rather than silently redirected.
The gateway address comes from that server's ``/gateway/bot`` answer: a plain discord.py
client never asks for it and dials ``wss://gateway.discord.gg`` unless told otherwise.
"""

from __future__ import annotations

from typing import Any

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bot.sdk import ConfigError

__all__ = ["point_gateway", "reset_api_base", "use_api_base"]

_DEFAULT = Route.BASE
_DEFAULT_GATEWAY = DiscordWebSocket.DEFAULT_GATEWAY
# Process-wide on purpose, unlike the rest of troupe's state: it mirrors discord.py's own
# class attribute (Route.BASE), which every client in the process shares, daemons included.
_chosen: str | None = None


def use_api_base(api_base: str | None, agent: str) -> None:
    global _chosen
    wanted = api_base or _DEFAULT
    if _chosen is not None and wanted != _chosen:
        raise ConfigError(
            f"DISCORD_API_BASE is {wanted}, but another character already uses {_chosen}; "
            "one troupe process talks to one Discord-compatible server",
            agent=agent,
        )
    _chosen = wanted
    Route.BASE = wanted


async def point_gateway(http: Any) -> None:
    """With a Discord-compatible server, connect to the gateway it names (called after login)."""
    if Route.BASE == _DEFAULT:
        return
    _, url, _ = await http.get_bot_gateway()
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)


def reset_api_base() -> None:
    """Forget the choice (tests, and a daemon reload that drops every Discord character)."""
    global _chosen
    _chosen = None
    Route.BASE = _DEFAULT
    DiscordWebSocket.DEFAULT_GATEWAY = _DEFAULT_GATEWAY
