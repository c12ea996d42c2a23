"""The daemon's record of each character's agent: what it was loaded from, how it stands."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config.character import Character, LoadResult
from bot.kernel.lifecycle import AgentState
from bot.kernel.links import Link, LinkState
from bot.kernel.tools import ToolServers
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX

if TYPE_CHECKING:
    from bot.daemon.control import AgentStatus, PlatformStatus, ToolsStatus

__all__ = ["HostedAgent", "fingerprint", "platform_links", "status_line"]


def fingerprint(result: LoadResult) -> str:
    """What makes two loads of a character the same agent: its whole definition with secrets
    resolved (a rotated token in a credential file is a change). Kept in memory only."""
    character = result.raise_for_problems()
    secrets = {k: s.get_secret_value() for k in character.secret_keys() if (s := character.secret(k)) is not None}
    body = json.dumps(
        [character.model_dump(mode="json"), secrets, result.plugins, result.model_preset], sort_keys=True, default=str
    )
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(eq=False)
class HostedAgent:
    """One character file's agent, as the daemon runs it."""

    result: LoadResult
    fingerprint: str
    runtime: AgentRuntime | None = None
    state: AgentState = AgentState.STARTING
    error: str = ""
    skipped: str = ""
    """The platforms its file asks for that it does not run on, and why (settings not set)."""

    @property
    def character(self) -> Character:
        return self.result.raise_for_problems()

    @property
    def name(self) -> str:
        return self.character.name

    def status(self) -> AgentStatus:
        """What ``troupe status`` shows of this agent."""
        runtime = self.runtime
        platforms: dict[str, PlatformStatus] = {
            name: {"state": link.state.value, "detail": link.detail}
            for name, link in (runtime.links.items() if runtime is not None else ())
        }
        status: AgentStatus = {
            "name": self.name,
            "id": self.character.agent_id,
            "state": self.state,
            "error": self.error,
            "skipped": self.skipped,
            "in_flight": runtime.in_flight if runtime is not None else 0,
            "platforms": platforms,
        }
        tools = _tools(runtime)
        if tools is not None:
            status["tools"] = tools
        return status

    @property
    def on_a_platform(self) -> bool:
        """Running, with at least one platform connection up: it can hear and answer someone."""
        return (
            self.state is AgentState.RUNNING
            and self.runtime is not None
            and any(link.state is LinkState.CONNECTED for _, link in self.runtime.links.items())
        )

    def not_ready(self) -> list[str]:
        """Why this agent keeps the daemon from being ready: not running, or a platform not connected."""
        if self.state is not AgentState.RUNNING or self.runtime is None:
            return [f"{self.name} is {self.state}" + (f": {self.error}" if self.error else "")]
        return [
            f"{self.name} on {name}: {link.state.value}" + (f" ({link.detail})" if link.detail else "")
            for name, link in self.runtime.links.items()
            if link.state is not LinkState.CONNECTED
        ]


def _tools(runtime: AgentRuntime | None) -> ToolsStatus | None:
    """The character's tools and their servers; None when it has neither (no ``tools`` key, so
    the status of a character without tools reads as it always did)."""
    box = runtime.get_service(TOOLBOX) if runtime is not None else None
    if box is None:
        return None
    names = [spec.name for spec in box.tools()]
    servers = box.servers() if isinstance(box, ToolServers) else ()
    if not names and not servers:
        return None
    return {
        "names": names,
        "servers": {server.name: {"up": server.up, "detail": server.detail} for server in servers},
    }


def platform_links(agents: Iterable[HostedAgent]) -> Iterator[Link]:
    """Every running agent's platform links."""
    for agent in agents:
        if agent.runtime is not None:
            yield from (link for _, link in agent.runtime.links.items())


def status_line(agents: Collection[HostedAgent]) -> str:
    """How many agents run on a platform and how many of their platform connections are up
    (systemd's status). An agent that runs with no connection up is not counted as running: it
    answers nobody."""
    running = sum(a.on_a_platform for a in agents)
    idle = sum(a.state is AgentState.RUNNING for a in agents) - running
    links = list(platform_links(agents))
    up = sum(link.state is LinkState.CONNECTED for link in links)
    failed = len(agents) - running - idle
    extra = (f", {idle} on no working platform" if idle else "") + (f", {failed} not running" if failed else "")
    refused = [
        f"{a.name} on {platform}"
        for a in agents
        if a.runtime is not None
        for platform, link in a.runtime.links.items()
        if link.state is LinkState.REFUSED
    ]
    tokens = f"; bot token refused: {', '.join(refused)}" if refused else ""
    return (
        f"{running} agent{'s' if running != 1 else ''} running{extra}; "
        f"{up} of {len(links)} platform connections up{tokens}"
    )
