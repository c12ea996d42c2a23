"""The daemon as systemd runs it: a real ``troupe start`` subprocess with a notify socket the
test reads, talking to the fake Telegram Bot API and the fake OpenAI-compatible API in this
process. Readiness, watchdog pings, a reload that adds, removes and changes characters while an
unchanged one keeps its connection, health and metrics, ``troupe status``, a stop with a reply in
flight, exit codes, and no secret in the logs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
import pytest

from ..fakes.openai_server import FakeOpenAIServer
from ..fakes.telegram_server import FakeBot, FakeTelegram
from ..platforms.discord.scene import plan

OPENAI_KEY = "sk-service-test-0001"
HEALTH_TOKEN = "health-token-0123456789"
TOKENS = {
    "Ada": "7101:token-ada-secret",
    "Brann": "7102:token-brann-secret",
    "Cleo": "7103:token-cleo-secret",
    "Dora": "7104:token-dora-secret",
}


class NotifySocket(asyncio.DatagramProtocol):
    """What the daemon tells systemd: every datagram, split into its assignments."""

    def __init__(self) -> None:
        self.messages: list[dict[str, str]] = []
        self.changed = asyncio.Event()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.messages.append(dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line))
        self.changed.set()

    def count(self, key: str, value: str = "1") -> int:
        return sum(m.get(key) == value for m in self.messages)

    async def wait(self, key: str, value: str = "1", *, count: int = 1, timeout: float = 20.0) -> dict[str, str]:
        async with asyncio.timeout(timeout):
            while self.count(key, value) < count:
                self.changed.clear()
                await self.changed.wait()
        return [m for m in self.messages if m.get(key) == value][count - 1]


@dataclass
class Service:
    """One daemon subprocess and everything around it."""

    dir: Path
    telegram: FakeTelegram
    openai: FakeOpenAIServer
    bots: dict[str, FakeBot]
    notify: NotifySocket
    env: dict[str, str]
    health_port: int
    process: asyncio.subprocess.Process | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.dir / "daemon.log"
        (self.dir / "characters").mkdir()

    def write(self, name: str, bio: str = "a test character", **settings: Any) -> Path:
        path = self.dir / "characters" / f"{name.lower()}.json"
        path.write_text(
            json.dumps(
                {
                    "name": name,
                    "bio": [f"{name} is {bio}."],
                    "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai"],
                    "settings": {
                        "secrets": {"TELEGRAM_BOT_TOKEN": TOKENS[name]},
                        "TELEGRAM_API_ROOT": self.telegram.url,
                        "TELEGRAM_POLL_TIMEOUT_S": "1",
                        **settings,
                    },
                }
            )
        )
        return path

    async def start(self, *args: str) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "start",
            str(self.dir / "characters"),
            *args,
            cwd=self.dir,
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=self.log.open("ab"),
        )

    async def exit_code(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        return await asyncio.wait_for(self.process.wait(), timeout)

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def cli(self, *args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            *args,
            cwd=self.dir,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def get(self, route: str, *, token: str | None = HEALTH_TOKEN) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{self.health_port}{route}", headers=headers) as response,
        ):
            return response.status, await response.text()

    async def metrics_with(self, line: str, timeout: float = 5.0) -> str:
        async with asyncio.timeout(timeout):
            while True:
                code, text = await self.get("/metrics")
                if code == 200 and line in text.splitlines():
                    return text
                await asyncio.sleep(0.05)

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def getme_calls(self, name: str) -> int:
        return sum(method == "getMe" for method, _ in self.bots[name].requests)


def answer(body: dict[str, Any]) -> str:
    """Every character answers a turn with its own name; reflection finds nothing."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if turn := re.search(r"Write the next turn of (\w+)", prompt):
        return plan(f"{turn.group(1)} here.")
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    short = Path(tempfile.mkdtemp(prefix="troupe-", dir="/tmp"))  # AF_UNIX paths must be short
    loop = asyncio.get_running_loop()
    notify = NotifySocket()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(short / "notify"))
    transport, _ = await loop.create_datagram_endpoint(lambda: notify, sock=sock)
    async with FakeTelegram() as telegram, FakeOpenAIServer() as openai:
        openai.script_chat(answer)
        bots = {
            name: telegram.add_bot(token, username=f"{name.lower()}_bot", first_name=name)
            for name, token in TOKENS.items()
        }
        port = _free_port()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "LANG": "C.UTF-8",
            "NOTIFY_SOCKET": str(short / "notify"),
            "WATCHDOG_USEC": "400000",
            "TROUPE_DATA_DIR": str(tmp_path / "data"),
            "TROUPE_CONTROL_SOCKET": str(short / "control.sock"),
            "TROUPE_HEALTH_PORT": str(port),
            "TROUPE_HEALTH_TOKEN": HEALTH_TOKEN,
            "TROUPE_STOP_TIMEOUT_S": "10",
            "TROUPE_CONSOLE_PORT": "0",  # on where a test asks for it (tests/daemon/test_console_browser.py)
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": openai.url,
        }
        svc = Service(tmp_path, telegram, openai, bots, notify, env, port)
        yield svc
        if svc.process is not None and svc.process.returncode is None:
            svc.process.kill()
            await svc.process.wait()
    transport.close()
    for path in short.iterdir():
        path.unlink()
    short.rmdir()


def _secrets_absent(text: str) -> None:
    for secret in [*TOKENS.values(), OPENAI_KEY, HEALTH_TOKEN]:
        assert secret not in text, f"a secret reached the log: {secret[:6]}…"


async def test_ready_watchdog_reload_health_status_and_a_graceful_stop(service: Service) -> None:
    s = service
    for name in ("Ada", "Brann", "Dora"):
        s.write(name)
    await s.start("--log-level", "DEBUG")
    ready = await s.notify.wait("READY")
    assert ready["STATUS"] == "3 agents running; 3 of 3 platform connections up"
    await s.notify.wait("WATCHDOG", count=3, timeout=60)  # every 0.2 s, from the event loop

    # Health, readiness, metrics (the token is required on TCP).
    assert (await s.get("/healthz", token=None))[0] == 401
    code, body = await s.get("/healthz")
    assert code == 200 and json.loads(body)["status"] == "ok"
    code, body = await s.get("/readyz")
    assert code == 200 and json.loads(body) == {"ready": True}

    sam = s.telegram.add_user("Sam", username="sam")
    chat = s.telegram.private(sam, s.bots["Dora"])
    await s.telegram.user_says(sam, chat, "hello Dora")
    await s.telegram.wait_for_sent(s.bots["Dora"], 1, timeout=60)
    # The reply is timed once the daemon has stored it, just after the fake received it.
    metrics = await s.metrics_with('troupe_reply_latency_seconds_count{agent="Dora",platform="telegram"} 1')
    assert re.search(r'^troupe_messages_received_total\{agent="Dora",platform="telegram"\} 1$', metrics, re.M)
    assert re.search(r'^troupe_messages_sent_total\{agent="Dora",platform="telegram"\} 1$', metrics, re.M)
    assert re.search(r"^troupe_agents 3$", metrics, re.M)
    assert re.search(r'^troupe_platform_connected\{agent="Ada",platform="telegram"\} 1$', metrics, re.M)
    assert re.search(
        r'^troupe_model_calls_total\{agent="Dora",model_type="TEXT_LARGE",provider="openai",outcome="ok"\} 1$',
        metrics,
        re.M,
    )

    code, out, err = await s.cli("status")
    assert code == 0, err
    assert out.splitlines()[0].startswith("troupe running (pid ")
    assert "3 agents, 3 of 3 platform connections up" in out.splitlines()[0]
    for name in ("Ada", "Brann", "Dora"):
        assert re.search(rf"^\s*{name}\s+telegram\s+connected", out, re.M), out

    # Reload: Brann removed, Cleo added, Ada changed, Dora untouched (and keeps its connection).
    dora_getme = s.getme_calls("Dora")
    ada_getme = s.getme_calls("Ada")
    (s.dir / "characters" / "brann.json").unlink()
    s.write("Cleo")
    s.write("Ada", bio="a changed character")
    s.signal(signal.SIGHUP)
    await s.notify.wait("RELOADING")
    reloaded = await s.notify.wait("READY", count=2)
    assert reloaded["STATUS"] == "3 agents running; 3 of 3 platform connections up"
    assert s.getme_calls("Dora") == dora_getme  # not reconnected
    assert s.getme_calls("Ada") > ada_getme  # restarted with its new definition
    assert s.getme_calls("Cleo") >= 1
    code, out, _ = await s.cli("status")
    assert "Brann" not in out and re.search(r"^\s*Cleo\s+telegram\s+connected", out, re.M)

    # A file that no longer validates: its agent keeps running as it was.
    (s.dir / "characters" / "ada.json").write_text('{"name": "Ada", "bio": 42}')
    code, out, err = await s.cli("reload")
    assert code == 0, err
    assert "ada.json" in out and "Ada keeps running" in out
    assert (await s.get("/readyz"))[0] == 200

    # Stop with a reply in flight: it still arrives, then exit 0.
    s.openai.latency = 1.0
    sent_before = len(s.bots["Dora"].sent)
    requests_before = len(s.openai.requests_for("chat"))
    await s.telegram.user_says(sam, chat, "one more thing, Dora")
    async with asyncio.timeout(60):
        while len(s.openai.requests_for("chat")) == requests_before:
            await asyncio.sleep(0.02)
    s.signal(signal.SIGTERM)
    await s.notify.wait("STOPPING")
    assert await s.exit_code() == 0
    assert len(s.bots["Dora"].sent) == sent_before + 1
    logs = s.logs()
    assert "[Dora]" in logs and "[Ada]" in logs  # every line names its agent
    _secrets_absent(logs)


async def test_a_bad_character_exits_78_without_ready(service: Service) -> None:
    (service.dir / "characters" / "bad.json").write_text('{"name": "Bad", "bio": ')
    await service.start()
    assert await service.exit_code() == 78
    assert service.notify.count("READY") == 0
    assert "bad.json" in service.logs()


async def test_status_without_a_daemon_says_so(service: Service) -> None:
    code, _, err = await service.cli("status")
    assert code == 69
    assert "no troupe daemon is running" in err


async def test_a_second_stop_signal_exits_at_once(service: Service) -> None:
    s = service
    s.write("Dora")
    await s.start()
    await s.notify.wait("READY")
    s.openai.latency = 30.0  # a reply that would hold the stop for the whole TROUPE_STOP_TIMEOUT_S
    sam = s.telegram.add_user("Sam", username="sam")
    await s.telegram.user_says(sam, s.telegram.private(sam, s.bots["Dora"]), "take your time")
    async with asyncio.timeout(60):
        while not s.openai.requests_for("chat"):
            await asyncio.sleep(0.02)
    s.signal(signal.SIGTERM)
    await s.notify.wait("STOPPING")
    s.signal(signal.SIGTERM)
    assert await s.exit_code(timeout=60) == 1
    assert "second stop signal: exiting now" in s.logs()


def _with_socket_dir(url: str, folder: Path) -> str:
    """``url`` (the test server's, by its socket folder) pointing at ``folder`` instead."""
    parts = urlsplit(url)
    query = urlencode({**dict(parse_qsl(parts.query)), "host": str(folder)})
    return parts._replace(query=query).geturl()


async def test_a_database_down_at_start_is_waited_for_and_the_daemon_starts_once_it_answers(
    service: Service, postgres_url: str
) -> None:
    s = service
    s.write("Dora")
    real = Path(dict(parse_qsl(urlsplit(postgres_url).query))["host"]) / ".s.PGSQL.5432"
    down = Path(tempfile.mkdtemp(prefix="troupe-pg-", dir="/tmp"))  # no server there yet
    try:
        s.env["TROUPE_DATABASE_URL"] = _with_socket_dir(postgres_url, down)
        await s.start()
        async with asyncio.timeout(20):
            while not any(m.get("STATUS", "").startswith("waiting for the database: ") for m in s.notify.messages):
                s.notify.changed.clear()
                await s.notify.changed.wait()
        assert any("EXTEND_TIMEOUT_USEC" in m for m in s.notify.messages)  # systemd waits rather than kills
        assert s.process is not None and s.process.returncode is None and s.notify.count("READY") == 0
        (down / ".s.PGSQL.5432").symlink_to(real)  # the server is up now
        await s.notify.wait("READY", timeout=60)
        s.signal(signal.SIGTERM)
        assert await s.exit_code() == 0
        logs = s.logs()
        assert "cannot open PostgreSQL database" in logs and "; trying again in " in logs
        assert "Traceback" not in logs
    finally:
        shutil.rmtree(down, ignore_errors=True)


async def test_a_database_that_refuses_the_daemon_exits_78_at_once(service: Service, postgres_url: str) -> None:
    s = service
    s.write("Dora")
    s.env["TROUPE_DATABASE_URL"] = urlsplit(postgres_url)._replace(path="/no_such_troupe").geturl()
    await s.start()
    assert await s.exit_code() == 78
    assert s.notify.count("READY") == 0
    logs = s.logs()
    assert 'database "no_such_troupe" does not exist' in logs and "trying again" not in logs
