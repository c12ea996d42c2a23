"""settings.mcp as a character file writes it: checked at the edge, secrets resolved, and what
``troupe check`` and the plugin's setup make of it."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import plugins.mcp
from bot.config.character import load_character
from bot.runtime.shared import Shared
from bot.sdk import Character, ConfigError, SettingsView, ToolAccess, ToolCall
from plugins.mcp._config import Transport, resolve_config, shown_url
from plugins.mcp._connection import ServerState
from plugins.mcp._pool import ServerPool
from plugins.mcp._toolbox import McpToolbox

from .conftest import ROOT, until

pytestmark = pytest.mark.xdist_group("mcp")

WEATHER = {
    "type": "stdio",
    "command": sys.executable,
    "args": ["-m", "tests.fakes.mcp_server"],
    "env": {"PYTHONPATH": str(ROOT), "WEATHER_KEY": "env:TEST_WEATHER_KEY"},
    "cwd": str(ROOT),
}


def resolve(mcp: object, environ: dict[str, str] | None = None, base_dir: Path | None = None) -> Any:
    return resolve_config(mcp, agent="Ada", environ=environ or {}, base_dir=base_dir)


def problem(mcp: object, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        resolve(mcp, environ)
    return str(caught.value)


def test_the_three_transports_and_their_options(tmp_path: Path) -> None:
    (tmp_path / "search.token").write_text("Bearer file-secret\n")
    config = resolve(
        {
            "servers": {
                "weather": {**WEATHER, "timeout": 5, "tools": ["weather"], "confirm": ["weather"]},
                "search": {
                    "type": "http",
                    "url": "https://mcp.example/mcp",
                    "headers": {"Authorization": "file:search.token"},
                    "admins": ["reindex"],
                    "owner": ["drop"],
                },
                "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"},
            },
            "allowedTools": ["weather__weather"],
        },
        {"TEST_WEATHER_KEY": "env-secret"},
        tmp_path,
    )
    weather, search, legacy = config.servers
    assert weather.transport is Transport.STDIO and weather.timeout == 5
    assert weather.env["WEATHER_KEY"] == "env-secret"
    assert search.transport is Transport.HTTP and search.headers == {"Authorization": "Bearer file-secret"}
    assert legacy.transport is Transport.SSE and legacy.url == "http://127.0.0.1:9000/sse"
    assert config.policies["weather"].only == {"weather"} and config.policies["weather"].confirm == {"weather"}
    assert config.policies["search"].access == {"reindex": ToolAccess.ADMINS, "drop": ToolAccess.OWNER}
    assert config.allowed_tools == {"weather__weather"}
    assert "env-secret" not in repr(weather) and "file-secret" not in repr(search)


def test_equal_configurations_share_a_fingerprint() -> None:
    one = resolve({"servers": {"weather": WEATHER}}, {"TEST_WEATHER_KEY": "a"}).servers[0]
    same = resolve({"servers": {"weather": {**WEATHER, "tools": ["weather"]}}}, {"TEST_WEATHER_KEY": "a"}).servers[0]
    other_key = resolve({"servers": {"weather": WEATHER}}, {"TEST_WEATHER_KEY": "b"}).servers[0]
    assert one.fingerprint == same.fingerprint  # the allow-list is the character's, not the session's
    assert one.fingerprint != other_key.fingerprint
    assert "a" * 3 not in one.fingerprint and len(one.fingerprint) == 64


@pytest.mark.parametrize(
    ("mcp", "expected"),
    [
        ({"servers": {"weather": {"type": "http"}}}, "Ada: settings.mcp.servers.weather.url is missing: add it"),
        (
            {"servers": {"weather": {"type": "http", "url": "ftp://x"}}},
            "Ada: settings.mcp.servers.weather.url: Value error, give an http:// or https:// address",
        ),
        (
            {"servers": {"weather": {"type": "websocket", "url": "ws://x"}}},
            'Ada: settings.mcp.servers.weather.type: give "stdio" (a command), "http" (streamable HTTP) or "sse" (a URL)',
        ),
        ({"servers": {"weather": {"type": "stdio"}}}, "Ada: settings.mcp.servers.weather.command is missing: add it"),
        (
            {"servers": {"weather": {**WEATHER, "timeout": -1}}},
            "Ada: settings.mcp.servers.weather.timeout: Input should be greater than 0",
        ),
        ({"servers": {"weather": {**WEATHER, "envv": {}}}}, "Ada: settings.mcp.servers.weather.envv: unknown key"),
        ({"servers": {"bad name!": WEATHER}}, "Ada: settings.mcp.servers.bad name!: a server's name is 1-32"),
        ({"servers": []}, "Ada: settings.mcp.servers must be an object of servers by name"),
        ("on", "Ada: settings.mcp must be an object"),
        ({"servers": {}, "allowedTools": "all"}, "Ada: settings.mcp.allowedTools must be a list of tool names"),
    ],
)
def test_a_bad_entry_names_its_path_and_the_fix(mcp: object, expected: str) -> None:
    assert problem(mcp, {"TEST_WEATHER_KEY": "k"}).startswith(expected)


def test_an_unresolved_secret_names_the_reference_never_a_secret() -> None:
    message = problem({"servers": {"weather": WEATHER}})
    assert message.startswith("Ada: settings.mcp.servers.weather.env.WEATHER_KEY: cannot resolve secret reference")
    assert "TEST_WEATHER_KEY is not set" in message
    optional = {**WEATHER, "env": {"WEATHER_KEY": "env:TEST_WEATHER_KEY?"}}
    assert resolve({"servers": {"weather": optional}}).servers[0].env == {}


def test_an_entry_without_a_type_is_told_by_its_keys() -> None:
    config = resolve({"servers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:1/mcp"}}})
    assert [server.transport for server in config.servers] == [Transport.STDIO, Transport.HTTP]


def character(tmp_path: Path, name: str, mcp: object) -> Character:
    path = tmp_path / f"{name.lower()}.json"
    body = {"name": name, "bio": "A test character.", "plugins": ["@elizaos/plugin-mcp"], "settings": {"mcp": mcp}}
    path.write_text(json.dumps(body))
    return load_character(path, environ={}).raise_for_problems()


def test_troupe_check_names_the_servers_or_the_problem(tmp_path: Path) -> None:
    ada = character(tmp_path, "Ada", {"servers": {"weather": WEATHER}})
    notes = plugins.mcp.check(SettingsView(ada, {"TEST_WEATHER_KEY": "k"}))
    assert notes == [f"MCP servers: weather (stdio: {sys.executable})"]
    with pytest.raises(ConfigError, match="TEST_WEATHER_KEY is not set"):
        plugins.mcp.check(SettingsView(ada, {}))
    bad = character(tmp_path, "Bob", {"servers": {"search": {"type": "sse"}}})
    with pytest.raises(ConfigError, match=r"Bob: settings\.mcp\.servers\.search\.url is missing"):
        plugins.mcp.check(SettingsView(bad, {}))
    empty = character(tmp_path, "Cy", {})
    assert "lists no server" in plugins.mcp.check(SettingsView(empty, {}))[0]


@dataclass
class SetupRuntime:
    """What the plugin's setup touches of a runtime."""

    character: Character
    environ: dict[str, str]
    shared: Shared
    toolboxes: list[object] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def add_toolbox(self, toolbox: object) -> None:
        self.toolboxes.append(toolbox)

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        self.closers.append(callback)

    async def close(self) -> None:
        for callback in reversed(self.closers):
            await callback()


async def test_characters_of_one_daemon_share_the_session_until_the_last_stops(tmp_path: Path) -> None:
    shared = Shared()
    environ = {"TEST_WEATHER_KEY": "weather-secret"}
    ada = SetupRuntime(character(tmp_path, "Ada", {"servers": {"weather": WEATHER}}), environ, shared)
    bob = SetupRuntime(character(tmp_path, "Bob", {"servers": {"weather": WEATHER}}), environ, shared)
    await plugins.mcp.setup(ada)  # type: ignore[arg-type]  # the part of a runtime setup uses
    await plugins.mcp.setup(bob)  # type: ignore[arg-type]
    [box], [bobs] = ada.toolboxes, bob.toolboxes
    assert isinstance(box, McpToolbox) and isinstance(bobs, McpToolbox)
    assert len(shared.instance_of(ServerPool)) == 1
    assert "weather-secret" in shared.secrets and str(ROOT) not in shared.secrets  # a path is no secret
    await until(lambda: bool(box.tools()))
    result = await box.call(ToolCall(id="1", name="weather__env", arguments={"name": "WEATHER_KEY"}), timeout=10)
    assert result.ok and result.text == "weather-secret"
    connection = box.connections[0]
    await ada.close()
    states = [connection.state]
    await bob.close()
    states.append(connection.state)
    assert states == [ServerState.UP, ServerState.STOPPED] and len(shared.instance_of(ServerPool)) == 0


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://x.example/mcp", "https://x.example/mcp"),
        ("https://x.example/mcp?key=SECRET", "https://x.example/mcp?key=…"),
        ("https://x.example/mcp?key=SECRET&region=eu&flag", "https://x.example/mcp?key=…&region=…&…"),
        ("https://ada:hunter22@x.example:8443/mcp", "https://ada:…@x.example:8443/mcp"),
        ("https://tok3n-value@x.example/mcp", "https://…@x.example/mcp"),
        ("http://127.0.0.1:9000/sse#SECRET", "http://127.0.0.1:9000/sse#…"),
    ],
)
def test_a_url_is_shown_without_its_keys(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_the_keys_in_a_url_are_secrets_and_never_shown(tmp_path: Path) -> None:
    url = "https://ada:pass-word1@search.example/mcp?key=url-secret%2F1&region=eu"
    config = resolve({"servers": {"search": {"type": "http", "url": url}}})
    server = config.servers[0]
    assert server.where == "https://ada:…@search.example/mcp?key=…&region=…"
    assert {"pass-word1", "url-secret%2F1", "url-secret/1"} <= set(server.secrets)
    assert server.url == url  # dialled as written
    ada = character(tmp_path, "Ada", {"servers": {"search": {"type": "http", "url": url}}})
    notes = plugins.mcp.check(SettingsView(ada, {}))
    assert notes == ["MCP servers: search (http: https://ada:…@search.example/mcp?key=…&region=…)"]
