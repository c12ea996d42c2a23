"""The daemon: many agents, platforms through connect(), one failure contained, clean stop."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import types
from pathlib import Path

import aiohttp
import pytest

from bot.config import plugins as plugin_registry
from bot.config.character import load_characters
from bot.config.plugins import PluginMeta
from bot.config.settings import DaemonSettings
from bot.daemon.control import ReloadSummary, format_status
from bot.daemon.daemon import Daemon
from bot.daemon.hosted import status_line
from bot.kernel.errors import ConfigError
from bot.kernel.lifecycle import DaemonState
from bot.runtime.events import AgentReloaded


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
    data: dict[str, object] = {"name": name, "bio": "x", "plugins": plugins}
    if token:
        data["settings"] = {"secrets": {"FAKE_TOKEN": token}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


async def test_agents_run_on_their_platforms_and_stop_cleanly(tmp_path: Path, fake_platform, caplog) -> None:
    connected, closed = fake_platform
    files = [
        write(tmp_path, "A", ["fakechat"]),
        write(tmp_path, "B", ["fakechat"]),
        write(tmp_path, "Broken", ["fakechat", "broken"]),
        write(tmp_path, "NoToken", ["fakechat"], token=None),
    ]
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
    assert await asyncio.wait_for(task, 60) == 0
    assert closed == ["B", "A"] or closed == ["A", "B"]
    assert daemon.runtimes == []


async def test_platform_without_connect_is_reported_and_the_daemon_exits_78(
    tmp_path: Path, caplog, monkeypatch
) -> None:
    import platforms.telegram

    monkeypatch.delattr(platforms.telegram, "connect")  # a platform package still being written
    path = tmp_path / "a.json"
    path.write_text(
        json.dumps(
            {
                "name": "A",
                "bio": "x",
                "plugins": ["@elizaos/plugin-telegram"],
                "settings": {"secrets": {"TELEGRAM_BOT_TOKEN": "123:tok-123456"}},
            }
        )
    )
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([path], environ=environ)
    code = await Daemon(DaemonSettings(db_path=tmp_path / "d.db"), results, environ).run()
    assert code == 78
    assert "the telegram platform is not available in this build yet" in caplog.text


async def test_a_platform_that_cannot_be_reached_is_retried_in_the_background(tmp_path: Path, caplog) -> None:
    path = tmp_path / "a.json"
    path.write_text(
        json.dumps(
            {
                "name": "A",
                "bio": "x",
                "plugins": ["@elizaos/plugin-discord"],
                "settings": {
                    "secrets": {"DISCORD_API_TOKEN": "tok-123456"},
                    "DISCORD_API_BASE": "http://127.0.0.1:1/api/v10",
                },
            }
        )
    )
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
    assert await asyncio.wait_for(task, 60) == 0
    assert "tok-123456" not in caplog.text


async def _running(daemon: Daemon, count: int) -> None:
    for _ in range(500):
        if daemon.state == "running" and len(daemon.runtimes) == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"daemon {daemon.state} with {len(daemon.runtimes)} agents")


async def _run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]
) -> tuple[Daemon, asyncio.Task[int], Path]:
    """A running daemon over a folder of fakechat characters, started as ``troupe start FOLDER`` would."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")  # a reload reads the environment again
    monkeypatch.chdir(tmp_path)  # and .env in the working directory
    chars = tmp_path / "chars"
    chars.mkdir()
    for name in names:
        write(chars, name, ["fakechat"])
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db"),
        load_characters(sorted(chars.glob("*.json")), environ=environ),
        environ,
        sources=[str(chars)],
    )
    task = asyncio.create_task(daemon.run())
    await _running(daemon, len(names))
    return daemon, task, chars


async def test_reload_starts_stops_restarts_and_leaves_the_rest_alone(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    connected, closed = fake_platform
    daemon, task, chars = await _run_folder(tmp_path, monkeypatch, ("A", "B", "C"))
    untouched = next(rt for rt in daemon.runtimes if rt.character.name == "C")
    reloaded: list[str] = []

    async def on_reload(event: AgentReloaded) -> None:
        reloaded.append(event.runtime.character.name)

    untouched.on(AgentReloaded, on_reload)
    (chars / "B.json").unlink()
    write(chars, "D", ["fakechat"])
    write(chars, "A", ["fakechat"], token="t-rotated-654321")  # a new secret is a change
    summary = await daemon.reload()
    assert dict(summary) == {
        "started": ["D"],
        "stopped": ["B"],
        "restarted": ["A"],
        "unchanged": ["C"],
        "kept": [],
        "failed": [],
    }
    assert sorted(rt.character.name for rt in daemon.runtimes) == ["A", "C", "D"]
    assert next(rt for rt in daemon.runtimes if rt.character.name == "C") is untouched
    assert sorted(closed) == ["A", "B"] and connected.count("A") == 2 and connected.count("C") == 1
    assert reloaded == ["C"]  # told, so what it reads from disk (knowledge files) is read again

    # A file that stops validating keeps its agent; a new broken file is reported, not started.
    (chars / "C.json").write_text('{"name": "C", "bio": 7}')
    (chars / "E.json").write_text("{not json")
    summary = await daemon.reload()
    assert [k["name"] for k in summary["kept"]] == ["C"] and "$.bio" in summary["kept"][0]["reason"]
    assert [f["name"] for f in summary["failed"]] == ["E"]
    assert summary["unchanged"] == ["A", "D"] and untouched in daemon.runtimes
    assert daemon.readiness() == (True, [])
    status = daemon.status()
    assert status["state"] == "running" and [a["name"] for a in status["agents"]] == ["A", "C", "D"]
    assert status["agents"][0]["platforms"] == {"fakechat": {"state": "connected", "detail": ""}}
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_a_reload_while_one_runs_is_refused_and_sighup_ones_coalesce(tmp_path: Path, fake_platform) -> None:
    chars = tmp_path / "chars"
    chars.mkdir()
    write(chars, "A", ["fakechat"])
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db"),
        load_characters([chars / "A.json"], environ=environ),
        environ,
        sources=[str(chars)],
    )
    task = asyncio.create_task(daemon.run())
    await _running(daemon, 1)
    runs = 0
    apply = daemon._apply_reload

    async def slow_apply() -> ReloadSummary:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.1)
        return await apply()

    daemon._apply_reload = slow_apply  # type: ignore[method-assign]
    first = asyncio.create_task(daemon.reload())
    await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match="already running"):
        await daemon.reload()
    for _ in range(3):
        daemon.request_reload()  # SIGHUPs during a reload: one more reload after it, not three
    await first
    for _ in range(100):
        if runs == 2 and daemon.state == "running":
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    assert runs == 2
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_stop_waits_for_a_reply_in_flight_and_refuses_new_messages(tmp_path: Path, fake_platform) -> None:
    path = write(tmp_path, "A", ["fakechat"])
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db", stop_timeout_s=5), load_characters([path], environ=environ), environ
    )
    task = asyncio.create_task(daemon.run())
    await _running(daemon, 1)
    runtime = daemon.runtimes[0]
    entered, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def reply_in_flight() -> None:
        with runtime.handling():
            entered.set()
            await release.wait()
            finished.set()

    in_flight = asyncio.create_task(reply_in_flight())
    await entered.wait()
    daemon.stop()
    async with asyncio.timeout(60):
        while runtime.accepting:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # the daemon would have ended by now, were it not waiting for the reply
    assert not task.done()
    release.set()
    assert await asyncio.wait_for(task, 60) == 0
    assert finished.is_set() and in_flight.done()


async def test_reload_skips_the_one_file_that_once_crashed_it_and_applies_the_rest(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    caplog.set_level(logging.INFO)
    daemon, task, chars = await _run_folder(tmp_path, monkeypatch, ("A", "B"))
    kept = next(rt for rt in daemon.runtimes if rt.character.name == "A")
    (chars / "A.json").write_text('{"name": "A", "bio": "x", "settings": "oops"}')
    (chars / "Deep.json").write_text('{"name": "Deep", "bio": "x", "settings": {"a": ' + "[" * 1000 + "]" * 1000 + "}}")
    os.mkfifo(chars / "pipe.json")
    write(chars, "C", ["fakechat"])
    summary = await daemon.reload()
    assert summary["started"] == ["C"] and summary["unchanged"] == ["B"]
    assert [(k["name"], k["reason"]) for k in summary["kept"]] == [
        ("A", "$.settings: must be an object {...}, not text")
    ]
    assert [f["name"] for f in summary["failed"]] == ["Deep"]
    assert kept in daemon.runtimes
    assert f"{chars / 'pipe.json'}: skipped, a named pipe (FIFO), not a regular file" in caplog.text
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_reload_with_a_broken_dotenv_changes_nothing_and_says_why(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    daemon, task, _ = await _run_folder(tmp_path, monkeypatch, ("A",))
    (tmp_path / ".env").write_bytes(b"X=\xff\n")
    with pytest.raises(RuntimeError, match=r"reload failed: \.env is not UTF-8 text"):
        await daemon.reload()
    assert "Traceback" not in caplog.text and len(daemon.runtimes) == 1 and daemon.state == "running"
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_a_character_whose_only_platform_troupe_lacks_still_starts_and_says_so(
    tmp_path: Path, fake_platform, caplog
) -> None:
    files = [write(tmp_path, "A", ["fakechat"]), write(tmp_path, "Tweeter", ["@elizaos/plugin-twitter"], token=None)]
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters(files, environ=environ)
    assert all(r.ok for r in results)
    daemon = Daemon(DaemonSettings(db_path=tmp_path / "d.db"), results, environ)
    task = asyncio.create_task(daemon.run())
    await _running(daemon, 2)
    assert (
        "Tweeter starts without @elizaos/plugin-twitter, which troupe does not have; it runs on no platform"
        in caplog.text
    )
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_reload_with_a_file_that_is_a_symlink_loop_fails_that_file_only(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon, task, chars = await _run_folder(tmp_path, monkeypatch, ("A",))
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    daemon.sources = [str(chars), str(tmp_path / "loop.json")]
    write(chars, "B", ["fakechat"])
    summary = await daemon.reload()
    assert summary["started"] == ["B"] and summary["unchanged"] == ["A"]
    assert [(f["name"], f["reason"]) for f in summary["failed"]] == [
        ("loop", "$: cannot read it: Too many levels of symbolic links; a character file is a JSON file")
    ]
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0


async def test_an_agent_on_no_working_platform_is_not_counted_as_running(tmp_path: Path, fake_platform) -> None:
    files = [write(tmp_path, "A", ["fakechat"]), write(tmp_path, "NoToken", ["fakechat"], token=None)]
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(DaemonSettings(db_path=tmp_path / "d.db"), load_characters(files, environ=environ), environ)
    task = asyncio.create_task(daemon.run())
    await _running(daemon, 2)
    assert status_line(daemon.agents.values()) == (
        "1 agent running, 1 on no working platform; 1 of 1 platform connections up"
    )
    status = json.loads(json.dumps(daemon.status()))  # what GET /status sends
    header, *rows = format_status(status).splitlines()
    assert header.endswith(": 2 agents (1 on no working platform), 1 of 1 platform connection up")
    assert rows == [
        "  A        fakechat  connected",
        "  NoToken  -         no platform  fakechat skipped, FAKE_TOKEN not set",
    ]
    daemon.stop()
    assert await asyncio.wait_for(task, 10) == 0


async def test_status_shows_each_lifecycle_state_as_its_plain_word(
    tmp_path: Path, fake_platform, caplog: pytest.LogCaptureFixture
) -> None:
    chars = tmp_path / "chars"
    chars.mkdir()
    write(chars, "A", ["fakechat"])
    write(chars, "B", ["fakechat", "broken"])
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db"),
        load_characters(sorted(chars.glob("*.json")), environ=environ),
        environ,
    )
    assert daemon.status()["state"] == "starting"
    task = asyncio.create_task(daemon.run())
    await _running(daemon, 1)
    status = json.loads(json.dumps(daemon.status()))  # what GET /status sends
    assert status["state"] == "running"
    assert [(a["name"], a["state"], a["error"]) for a in status["agents"]] == [
        ("A", "running", ""),
        ("B", "failed", "plugin broken for B failed to load: broken on purpose"),
    ]
    assert status["agents"][0]["platforms"] == {"fakechat": {"state": "connected", "detail": ""}}
    assert format_status(status).splitlines()[1:] == [
        "  A  fakechat  connected",
        "  B  -         failed     plugin broken for B failed to load: broken on purpose",
    ]
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0
    assert daemon.state == DaemonState.STOPPING and str(daemon.state) == "stopping"
    with caplog.at_level(logging.WARNING):
        daemon.request_reload()  # a SIGHUP as it shuts down
    assert "reload skipped: the daemon is stopping" in caplog.text


async def test_a_config_error_from_connect_is_shown_beside_the_agent_without_repeating_it(
    tmp_path: Path, fake_platform, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuse(runtime) -> None:
        raise ConfigError("FAKE_TOKEN was refused; copy a fresh one", agent=runtime.character.name)

    monkeypatch.setattr(sys.modules["platforms.fakechat"], "connect", refuse)
    write(tmp_path, "A", ["fakechat"])
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    daemon = Daemon(
        DaemonSettings(db_path=tmp_path / "d.db"), load_characters([tmp_path / "A.json"], environ=environ), environ
    )
    with caplog.at_level(logging.ERROR):
        assert await daemon.run() == 78  # nothing could connect
    assert "A: could not connect to fakechat: FAKE_TOKEN was refused; copy a fresh one" in caplog.messages


async def test_a_database_failing_the_first_placement_round_is_waited_for_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL answered the open, then refused the pool's connections (a failover, "too many
    clients"): the first round of placement fails. The daemon waits with back-off and says so —
    one warning, systemd's status — instead of exiting 78, which would leave the unit down."""
    from bot.cluster import host as cluster_host
    from bot.daemon.systemd import Notifier
    from bot.kernel.backoff import ExponentialBackoff
    from bot.kernel.errors import StoreError

    sent: list[tuple[str, ...]] = []

    class Recording(Notifier):
        def send(self, *assignments: str) -> bool:
            sent.append(assignments)
            return True

    class Troupe:
        joins = 0

        async def join(self, background: object) -> None:
            self.joins += 1
            if self.joins < 4:
                raise StoreError("database read failed: sorry, too many clients already")

    monkeypatch.setattr(cluster_host, "ExponentialBackoff", lambda first, cap: ExponentialBackoff(0.01, 0.02))
    daemon = Daemon(DaemonSettings(db_path=tmp_path / "t.db"), [], {}, notifier=Recording({"NOTIFY_SOCKET": "@x"}))
    cluster = Troupe()
    with caplog.at_level(logging.INFO, logger="bot.daemon.daemon"):
        assert await daemon._join(cluster) is True  # type: ignore[arg-type]
    assert cluster.joins == 4
    said = [r.getMessage() for r in caplog.records]
    assert sum("cannot take this daemon's share of the troupe" in m for m in said) == 1
    assert any("the database answers again" in m for m in said)
    statuses = [a for a in sent if any(line.startswith("STATUS=waiting for the database: ") for line in a)]
    assert len(statuses) == 3 and all(any(line.startswith("EXTEND_TIMEOUT_USEC=") for line in a) for a in statuses)

    class Down:
        async def join(self, background: object) -> None:
            raise StoreError("database read failed: sorry, too many clients already")

    stopping = Daemon(DaemonSettings(db_path=tmp_path / "u.db"), [], {})
    stopping.stop()  # stopped while waiting: it ends, with no exit status of its own
    assert await stopping._join(Down()) is False  # type: ignore[arg-type]


async def test_a_console_port_in_use_exits_78_with_one_line_naming_it(tmp_path: Path, fake_platform, caplog) -> None:
    connected, _ = fake_platform
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([write(tmp_path, "A", ["fakechat"])], environ=environ)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = DaemonSettings(db_path=tmp_path / "d.db", console_port=port, console_token="t" * 32)
        code = await Daemon(settings, results, environ).run()
    assert code == 78
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        f"cannot serve the console on 127.0.0.1:{port}: the port is in use; stop what uses it, choose another "
        "TROUPE_CONSOLE_PORT, or set TROUPE_CONSOLE_PORT=0 to turn the console off"
    ]
    assert connected == [] and not (tmp_path / "d.db").exists()  # nothing started, nothing created


async def test_the_console_serves_while_the_daemon_runs_and_its_token_never_reaches_the_log(
    tmp_path: Path, fake_platform, caplog
) -> None:
    connected, _ = fake_platform
    caplog.set_level(logging.INFO)
    environ = {"OPENAI_API_KEY": "sk-test-key"}
    results = load_characters([write(tmp_path, "A", ["fakechat"])], environ=environ)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = Daemon(DaemonSettings(db_path=tmp_path / "d.db", data_dir=tmp_path, console_port=port), results, environ)
    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(60):
        while daemon.state is not DaemonState.RUNNING:
            await asyncio.sleep(0.01)
    token = (tmp_path / "console-token").read_text().strip()
    logging.getLogger("bot.daemon").warning("a line that quotes the token: %s", token)
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        http.get(f"http://127.0.0.1:{port}/login?token={token}") as response,
    ):
        assert response.status == 200 and response.url.path == "/"
        page = await response.text()
    assert 'data-agent="A"' in page and "fakechat" in page and token not in page
    daemon.stop()
    assert await asyncio.wait_for(task, 60) == 0
    assert connected == ["A"]
    assert f"console at http://127.0.0.1:{port}/ (login token in {tmp_path / 'console-token'})" in caplog.text
    assert token not in caplog.text
