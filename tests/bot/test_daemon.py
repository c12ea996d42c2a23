"""The daemon: many agents, platforms through connect(), one failure contained, clean stop."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from pathlib import Path

import pytest

from bot import plugins as plugin_registry
from bot.character import load_characters
from bot.daemon import Daemon
from bot.plugins import PluginMeta
from bot.settings import DaemonSettings


@pytest.fixture
def fake_platform(monkeypatch: pytest.MonkeyPatch):
    """A platform 'fakechat' needing FAKE_TOKEN, and a plugin 'broken' whose setup fails."""
    connected: list[str] = []
    closed: list[str] = []
    metas = dict(plugin_registry.available())
    metas["fakechat"] = PluginMeta(name="fakechat", kind="platform", description="fake", requires=("FAKE_TOKEN",))
    metas["broken"] = PluginMeta(name="broken", description="fails")

    platform = types.ModuleType("platforms.fakechat")

    async def connect(runtime) -> None:
        connected.append(runtime.character.name)

        async def close() -> None:
            closed.append(runtime.character.name)

        runtime.on_close(close)

    platform.connect = connect  # type: ignore[attr-defined]
    broken = types.ModuleType("plugins.broken")

    async def setup(runtime) -> None:
        raise RuntimeError("broken on purpose")

    broken.setup = setup  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "platforms.fakechat", platform)
    monkeypatch.setitem(sys.modules, "plugins.broken", broken)
    monkeypatch.setattr(plugin_registry, "available", lambda: metas)
    monkeypatch.setattr(plugin_registry, "_by_alias", lambda: {n: (m, None) for n, m in metas.items()})
    return connected, closed


def write(tmp_path: Path, name: str, plugins: list[str], token: str | None = "t-123456") -> Path:
    data = {"name": name, "bio": "x", "plugins": plugins}
    if token:
        data["settings"] = {"secrets": {"FAKE_TOKEN": token}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


async def test_agents_run_on_their_platforms_and_stop_cleanly(tmp_path: Path, fake_platform, caplog) -> None:
    connected, closed = fake_platform
    files = [write(tmp_path, "A", ["fakechat"]), write(tmp_path, "B", ["fakechat"]),
             write(tmp_path, "Broken", ["fakechat", "broken"]), write(tmp_path, "NoToken", ["fakechat"], token=None)]
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters(files, environ=environ)
    assert all(r.ok for r in results), [r.problems for r in results]
    daemon = Daemon(DaemonSettings(db_path=tmp_path / "d.db"), results, environ)
    task = asyncio.create_task(daemon.run())
    for _ in range(200):
        if len(connected) == 2:
            break
        await asyncio.sleep(0.01)
    assert sorted(connected) == ["A", "B"]
    assert "Broken did not start: plugin broken for Broken failed to load: broken on purpose" in caplog.text
    assert "NoToken: fakechat skipped, FAKE_TOKEN not set" in caplog.text
    daemon.stop()
    assert await asyncio.wait_for(task, 10) == 0
    assert closed == ["B", "A"] or closed == ["A", "B"]
    assert daemon.runtimes == []


async def test_platform_without_connect_is_reported_and_the_daemon_exits_78(tmp_path: Path, caplog, monkeypatch) -> None:
    import platforms.telegram

    monkeypatch.delattr(platforms.telegram, "connect")  # a platform package still being written
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"name": "A", "bio": "x", "plugins": ["@elizaos/plugin-telegram"],
                                "settings": {"secrets": {"TELEGRAM_BOT_TOKEN": "123:tok-123456"}}}))
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([path], environ=environ)
    code = await Daemon(DaemonSettings(db_path=tmp_path / "d.db"), results, environ).run()
    assert code == 78
    assert "the telegram platform is not available in this build yet" in caplog.text


async def test_a_platform_that_cannot_be_reached_is_retried_in_the_background(tmp_path: Path, caplog) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"name": "A", "bio": "x", "plugins": ["@elizaos/plugin-discord"],
                                "settings": {"secrets": {"DISCORD_API_TOKEN": "tok-123456"},
                                             "DISCORD_API_BASE": "http://127.0.0.1:1/api/v10"}}))
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([path], environ=environ)
    settings = DaemonSettings(db_path=tmp_path / "d.db", reconnect_base_s=0.05, reconnect_cap_s=0.1)
    daemon = Daemon(settings, results, environ)
    task = asyncio.create_task(daemon.run())
    for _ in range(500):
        if "A: still cannot reach discord" in caplog.text:
            break
        await asyncio.sleep(0.01)
    assert "A: could not reach discord (" in caplog.text and "A: still cannot reach discord (" in caplog.text
    assert not task.done()  # an outage is not a configuration error: no exit 78, the daemon waits it out
    daemon.stop()
    assert await asyncio.wait_for(task, 10) == 0
    assert "tok-123456" not in caplog.text
