"""What the daemon's status says of one character's agent: its tools, only when it has any."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.daemon.hosted import HostedAgent, fingerprint
from bot.kernel.lifecycle import AgentState
from bot.kernel.tools import ToolServer
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX
from bot.store import Database
from tests.fakes.toolbox import MemoryToolbox, spec


async def _answer(arguments: Mapping[str, Any]) -> str:
    return "ok"


@dataclass
class ServersToolbox(MemoryToolbox):
    """A toolbox that also tells its servers (as the MCP plugin's does)."""

    known: list[ToolServer] = field(default_factory=list)

    def servers(self) -> Sequence[ToolServer]:
        return self.known

    async def settled(self) -> None:
        return None


@pytest.fixture
async def hosted(tmp_path: Path) -> AsyncIterator[HostedAgent]:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x"}))
    result = load_character(path, environ={})
    async with Database(tmp_path / "t.db") as db:
        character = result.raise_for_problems()
        runtime = AgentRuntime(character, db.for_agent(character.agent_id), environ={})
        yield HostedAgent(result, fingerprint(result), runtime=runtime, state=AgentState.RUNNING)


def _runtime(hosted: HostedAgent) -> AgentRuntime:
    assert hosted.runtime is not None
    return hosted.runtime


async def test_an_agent_without_a_toolbox_or_tools_has_no_tools_entry(hosted: HostedAgent) -> None:
    assert "tools" not in hosted.status()
    _runtime(hosted).register_service(TOOLBOX, MemoryToolbox())
    assert "tools" not in hosted.status()  # a toolbox offering nothing, and no servers


async def test_the_status_lists_the_toolbox_tools(hosted: HostedAgent) -> None:
    box = MemoryToolbox()
    box.add(spec("weather__forecast"), _answer)
    box.add(spec("files__read"), _answer)
    _runtime(hosted).register_service(TOOLBOX, box)
    assert hosted.status()["tools"] == {"names": ["weather__forecast", "files__read"], "servers": {}}


async def test_the_status_tells_each_server_up_or_down_even_with_no_tool_offered(hosted: HostedAgent) -> None:
    box = ServersToolbox(known=[ToolServer("files", up=False, detail="connection refused")])
    _runtime(hosted).register_service(TOOLBOX, box)
    assert hosted.status()["tools"] == {
        "names": [],
        "servers": {"files": {"up": False, "detail": "connection refused"}},
    }
    box.add(spec("weather__forecast"), _answer)
    box.known.append(ToolServer("weather", up=True))
    assert hosted.status()["tools"] == {
        "names": ["weather__forecast"],
        "servers": {
            "files": {"up": False, "detail": "connection refused"},
            "weather": {"up": True, "detail": ""},
        },
    }
