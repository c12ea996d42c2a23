"""Webhooks: what a platform is pushed over HTTP, on the daemon's webhook port.

A platform that can take its events by webhook (Telegram, with ``TELEGRAM_WEBHOOK_URL``) gives the
daemon a :class:`WebhookRoute` for each character that asks for one, made from the character's
settings alone (the platform module's ``webhooks(settings, host)``). Every daemon of a troupe
serves the routes of every character, whichever daemon serves the character: the reverse proxy
in front may hand a request to any of them, and the route keeps what it is given where the
serving daemon finds it (the store), then tells that daemon (directly, or over the bus).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.runtime.shared import Shared
    from bot.store import Store

__all__ = ["WebhookAnswer", "WebhookHost", "WebhookRequest", "WebhookRoute"]


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One POST to a route."""

    headers: Mapping[str, str]
    """Looked up without regard to case."""
    body: bytes


@dataclass(frozen=True, slots=True)
class WebhookAnswer:
    """What the route answers: 200 once what it was given is kept; anything else makes the
    platform send it again later."""

    status: int
    text: str = ""


class WebhookHost(Protocol):
    """What the daemon gives the routes of its platforms."""

    @property
    def shared(self) -> Shared:
        """The daemon's shared objects: its bus, its secrets, a platform's own registries."""
        ...

    def store_for(self, agent_id: str) -> Store:
        """The store of one character (served by this daemon or not)."""
        ...


class WebhookRoute(Protocol):
    """One character's webhook on one platform."""

    @property
    def path(self) -> str:
        """The URL path it answers (``/telegram/ada``), unique on the daemon."""
        ...

    @property
    def agent(self) -> str:
        """The character's name, for what the daemon logs."""
        ...

    async def handle(self, request: WebhookRequest) -> WebhookAnswer: ...
