"""The first run with nothing configured: no model key anywhere, the console on. The daemon serves
only the console, which opens on its setup page; what is given there goes to .env (0600, merged,
audited by name only) and the characters start. Invalid configuration still exits 78."""

from __future__ import annotations

import asyncio
import json
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.config.character import load_characters
from bot.config.settings import DaemonSettings
from bot.daemon.console import AUDIT_FILE
from bot.daemon.daemon import Daemon
from bot.kernel.lifecycle import AgentState, DaemonState
from bot.kernel.links import LinkState

from ..fakes.openai_server import FakeOpenAIServer
from .test_console_chat import TOKEN, _answer

KEY = "sk-setup-test-0123456789"


def _characters(tmp_path: Path, **extra: object) -> Path:
    folder = tmp_path / "characters"
    folder.mkdir()
    (folder / "ada.json").write_text(json.dumps({"name": "Ada", "bio": ["Ada is a test character."], **extra}))
    return folder


def _settings(tmp_path: Path, port: int) -> DaemonSettings:
    return DaemonSettings(
        _env_file=None,
        data_dir=tmp_path / "data",
        console_port=port,
        console_token=TOKEN,
        control_socket=tmp_path / "control.sock",
    )


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        server.script_chat(_answer)
        yield server


async def test_with_nothing_configured_the_console_asks_writes_env_and_the_characters_start(
    tmp_path: Path, unused_tcp_port: int, openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _characters(tmp_path)
    env = Path(".env")  # the daemon's working directory (each test runs in one of its own)
    env.write_text("# kept\nTROUPE_LOG_LEVEL=INFO\n")
    environ: dict[str, str] = {}
    daemon = Daemon(
        _settings(tmp_path, unused_tcp_port),
        load_characters([folder / "ada.json"], environ=environ),
        environ,
        sources=[str(folder)],
    )
    running = asyncio.create_task(daemon.run())
    site = f"http://127.0.0.1:{unused_tcp_port}/"
    try:
        async with asyncio.timeout(30):
            while daemon.state is not DaemonState.RUNNING:
                await asyncio.sleep(0.02)
        assert daemon.setup_needs == (("OPENAI_API_KEY", "OPENAI_BASE_URL"),)
        assert not daemon.agents  # nothing runs: only the console
        assert f"open the console at {site}setup to set OPENAI_API_KEY or OPENAI_BASE_URL" in caplog.text

        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(f"{site}login", data={"token": TOKEN}) as response:
                assert response.url.path == "/setup"  # the console opens on its setup page
                page = await response.text()
            assert "Set up troupe" in page and 'type="password"' in page and 'name="OPENAI_BASE_URL"' in page
            csrf = re.search(r'name="csrf" value="([^"]+)"', page)
            assert csrf is not None
            async with http.post(f"{site}setup", data={"csrf": csrf.group(1), "OPENAI_API_KEY": " "}) as response:
                assert response.status == 400
                assert "Set OPENAI_API_KEY or OPENAI_BASE_URL: nothing can run without it." in await response.text()
            form = {"csrf": csrf.group(1), "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai.url}
            async with http.post(f"{site}setup", data=form) as response:
                assert response.status == 200 and response.url.path.startswith("/chat"), await response.text()
                assert KEY not in await response.text()
            async with http.get(f"{site}setup") as response:
                assert response.url.path == "/"  # configured: no setup page any more
                assert KEY not in await response.text()

        assert stat.S_IMODE(env.stat().st_mode) == 0o600
        text = env.read_text()
        assert text.startswith("# kept\nTROUPE_LOG_LEVEL=INFO\n") and f'OPENAI_API_KEY="{KEY}"' in text
        (agent,) = daemon.agents.values()
        assert agent.state is AgentState.RUNNING and agent.runtime is not None
        web = agent.runtime.links.get("web")
        assert web is not None and web.state is LinkState.CONNECTED
        assert not daemon.setup_needs
        audit = [json.loads(line) for line in (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()]
        saved = [entry for entry in audit if entry["what"] == "setup saved"]
        assert len(saved) == 1 and saved[0]["detail"] == "OPENAI_API_KEY, OPENAI_BASE_URL"
        assert KEY not in (tmp_path / "data" / AUDIT_FILE).read_text()
        assert KEY not in caplog.text
    finally:
        daemon.stop()
        assert await asyncio.wait_for(running, 60) == 0


async def test_invalid_configuration_still_exits_78_with_the_console_on(
    tmp_path: Path, unused_tcp_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    # No model key, and a setting that cannot work: not "nothing configured", but a mistake.
    folder = _characters(
        tmp_path, plugins=["@elizaos/plugin-telegram"], settings={"secrets": {"TELEGRAM_BOT_TOKEN": "no-colon"}}
    )
    environ: dict[str, str] = {}
    results = load_characters([folder / "ada.json"], environ=environ)
    daemon = Daemon(_settings(tmp_path, unused_tcp_port), results, environ, sources=[str(folder)])
    assert await asyncio.wait_for(daemon.run(), 60) == 78
    assert "no character can run, so troupe does not start" in caplog.text
    assert "TELEGRAM_BOT_TOKEN does not look like a bot token" in caplog.text  # every problem named at once
    assert "no OpenAI-compatible endpoint is configured" in caplog.text
