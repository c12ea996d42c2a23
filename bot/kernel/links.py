"""An agent's links to its platforms, and how each is doing.

The daemon sets a link's state while it connects (and retries); a platform adapter sets it when
its client loses the connection and gets it back. Readiness, ``troupe status``, the systemd
status line and the metrics all read these, and hear about every change through ``on_change``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Link", "LinkState", "Links"]


class LinkState(StrEnum):
    CONNECTING = "connecting"  # first attempt under way
    CONNECTED = "connected"
    RETRYING = "retrying"  # lost or unreachable; trying again with back-off
    FAILED = "failed"  # given up: the configuration must change first
    REFUSED = "refused"  # the platform refuses the bot token (401) while running; asked again slowly


@dataclass(slots=True)
class Link:
    state: LinkState
    detail: str = ""
    since: float = field(default_factory=time.monotonic)


class Links:
    """The links of one agent, by platform name."""

    def __init__(self) -> None:
        self._links: dict[str, Link] = {}
        self.on_change: Callable[[str, Link, Link | None], None] | None = None

    def set(self, platform: str, state: LinkState, detail: str = "") -> None:
        """Record ``platform``'s state; listeners hear only real changes."""
        old = self._links.get(platform)
        if old is not None and old.state is state and old.detail == detail:
            return
        link = Link(state, detail)
        self._links[platform] = link
        if self.on_change is not None:
            self.on_change(platform, link, old)

    def get(self, platform: str) -> Link | None:
        return self._links.get(platform)

    def items(self) -> Iterator[tuple[str, Link]]:
        return iter(sorted(self._links.items()))

    @property
    def all_connected(self) -> bool:
        return all(link.state is LinkState.CONNECTED for link in self._links.values())
