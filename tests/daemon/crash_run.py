"""A conversation through kill -9: people keep writing to a character on the fake Telegram while
the real ``troupe start`` is killed (SIGKILL) and started again; afterwards every message must
have been answered exactly once.

Used by ``test_crash.py`` (small) and ``tests/bench/bench_crash.py`` (300+ messages, figures).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..fakes.openai_server import FakeOpenAIServer
from ..fakes.telegram_server import FakeTelegram
from ..platforms.telegram.scene import free_port
from .test_service import NotifySocket, answer

__all__ = ["CrashReport", "crash_run", "spawn_start", "write_telegram_character"]

TOKEN = "7201:token-dora-crash"


def write_telegram_character(path: Path, name: str, token: str, api_root: str, **settings: str) -> None:
    """A character on the fake Telegram (``api_root``) who answers everyone, with the openai plugin
    (and ``settings``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} answers everyone."],
                "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai"],
                "settings": {
                    "secrets": {"TELEGRAM_BOT_TOKEN": token},
                    "TELEGRAM_API_ROOT": api_root,
                    "TELEGRAM_POLL_TIMEOUT_S": "1",
                    **settings,
                },
            }
        )
    )


async def spawn_start(workdir: Path, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    """``troupe start workdir/characters`` in ``workdir`` with ``env``, its log appended to ``log``."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "start",
        str(workdir / "characters"),
        cwd=workdir,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=log.open("ab"),
    )


@dataclass(frozen=True)
class CrashReport:
    messages: int
    kills: int
    answered_once: int
    lost: int
    """Messages never answered."""
    duplicated: int
    """Messages answered more than once."""
    seconds: float
    log: str
    unanswered: tuple[tuple[int, int], ...] = ()
    """(chat id, message id) of the messages never answered."""

    def summary(self) -> str:
        return (
            f"{self.messages} messages, {self.kills} kill -9: {self.answered_once} answered once, "
            f"{self.lost} lost, {self.duplicated} answered twice or more ({self.seconds:.1f} s)"
        )


async def crash_run(
    workdir: Path,
    *,
    messages: int = 60,
    kills: int = 2,
    people: int = 10,
    latency: float = 0.3,
    interval: float = 0.02,
    settle: float = 60.0,
    min_uptime: float = 2.0,
    webhook: bool = False,
) -> CrashReport:
    """Send ``messages`` (each naming the character, spread over ``people`` private chats, one every
    ``interval`` s, whether the daemon is up or not) while killing the daemon ``kills`` times, spread
    over the conversation, and starting it again at once; then wait up to ``settle`` s for answers
    and count them.

    A kill comes at least ``min_uptime`` s after the daemon said it was ready: a message taken up
    again after a crash is taken up once only, so a daemon killed again before it could answer
    would lose it on purpose (that rule stops a message that crashes troupe from crashing it forever).

    With ``webhook``, the character takes its updates by webhook (TELEGRAM_WEBHOOK_URL on the
    daemon's webhook port): while the daemon is down the fake Bot API keeps posting, in vain, as
    Telegram does, until it is back.
    """
    short = Path(tempfile.mkdtemp(prefix="troupe-crash-", dir="/tmp"))  # AF_UNIX paths must be short
    notify = NotifySocket()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(short / "notify"))
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(lambda: notify, sock=sock)
    log = workdir / "daemon.log"
    process: asyncio.subprocess.Process | None = None
    started = time.monotonic()
    try:
        async with FakeTelegram() as telegram, FakeOpenAIServer() as openai:
            openai.script_chat(answer)
            openai.latency = latency
            bot = telegram.add_bot(TOKEN, username="dora_bot", first_name="Dora")
            port = free_port()
            hook = {"TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram/dora"} if webhook else {}
            write_telegram_character(workdir / "characters" / "dora.json", "Dora", TOKEN, telegram.url, **hook)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(workdir),
                "LANG": "C.UTF-8",
                "NOTIFY_SOCKET": str(short / "notify"),
                "TROUPE_DATA_DIR": str(workdir / "data"),
                "TROUPE_CONTROL_SOCKET": str(short / "control.sock"),
                "TROUPE_STOP_TIMEOUT_S": "10",
                "TROUPE_CONSOLE_PORT": "0",  # the console has its own tests
                "TROUPE_WEBHOOK_PORT": str(port),
                "OPENAI_API_KEY": "sk-crash-test",
                "OPENAI_BASE_URL": openai.url,
            }
            readies = 0
            ready_at = 0.0

            async def start() -> asyncio.subprocess.Process:
                nonlocal readies, ready_at
                proc = await spawn_start(workdir, env, log)
                readies += 1
                await notify.wait("READY", count=readies, timeout=60)
                ready_at = time.monotonic()
                return proc

            persons = [telegram.add_user(f"Person{i}", username=f"person{i}") for i in range(people)]
            chats = [(person, telegram.private(person, bot)) for person in persons]
            process = await start()
            said: list[tuple[int, int]] = []

            async def send() -> None:
                # People keep writing whether troupe is up or not: what comes while it is down waits
                # at Telegram, as it would.
                for n in range(messages):
                    person, chat = chats[n % people]
                    message = await telegram.user_says(person, chat, f"Dora, question number {n}?")
                    said.append((chat.id, message["message_id"]))
                    await asyncio.sleep(interval)

            def answers() -> Counter[tuple[int, int]]:
                return Counter(
                    (m["chat_id"], int(m["reply_to"]))
                    for m in bot.sent
                    if m["kind"] == "text" and m["reply_to"] is not None
                )

            sender = asyncio.create_task(send())
            before_restart: list[tuple[int, int]] = []
            for k in range(kills):
                threshold = messages * (k + 1) // (kills + 1)
                # What the last crash left half-answered is taken up once only: killing the daemon
                # again before it answered those would lose them by design, so wait for them (on a
                # busy machine that takes longer than min_uptime), bounded.
                recovered_by = time.monotonic() + settle
                while (
                    len(said) < threshold
                    or time.monotonic() < ready_at + min_uptime
                    or (time.monotonic() < recovered_by and any(answers()[key] == 0 for key in before_restart))
                ):
                    await asyncio.sleep(0.01)
                before_restart = list(said)
                process.kill()  # SIGKILL: no handler runs, nothing is flushed
                await process.wait()
                process = await start()
            await sender

            deadline = time.monotonic() + settle
            while time.monotonic() < deadline and any(answers()[key] == 0 for key in said):
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.0)  # a late second answer would show up now
            counts = answers()
            process.terminate()
            await asyncio.wait_for(process.wait(), 30)
            return CrashReport(
                messages=len(said),
                kills=kills,
                answered_once=sum(counts[key] == 1 for key in said),
                lost=sum(counts[key] == 0 for key in said),
                duplicated=sum(counts[key] > 1 for key in said),
                seconds=time.monotonic() - started,
                log=log.read_text(errors="replace") if log.exists() else "",
                unanswered=tuple(key for key in said if counts[key] == 0),
            )
    finally:
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
        transport.close()
        for path in short.iterdir():
            path.unlink()
        short.rmdir()
