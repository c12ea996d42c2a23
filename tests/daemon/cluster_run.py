"""Several daemons, one troupe: the real ``troupe start`` run N times on one PostgreSQL database,
serving characters on the fake Telegram while people write to them; one owner is killed with
SIGKILL (or stopped with SIGSTOP past its leases, then continued) in the middle; afterwards every
message must have been answered exactly once.

Used by ``test_cluster.py`` (small) and ``tests/bench/bench_cluster.py`` (figures).
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import signal
import socket
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from bot.character import load_character

from ..fakes.openai_server import FakeOpenAIServer
from ..fakes.telegram_server import FakeTelegram
from .crash_run import spawn_start, write_telegram_character
from .test_service import NotifySocket, answer

__all__ = ["ClusterReport", "Fault", "Spawned", "cluster_run", "lease_owners", "start_daemon"]


class Fault(enum.Enum):
    KILL = "kill -9"
    PAUSE = "SIGSTOP past the lease, then SIGCONT"


@dataclass
class ClusterReport:
    messages: int
    answered_once: int
    lost: int
    duplicated: int
    #: Seconds from the fault until every character of the faulty daemon was served again.
    takeover_s: float | None
    #: Characters served per daemon once all were up, before the fault.
    spread: list[int]
    seconds: float
    logs: str
    unanswered: list[tuple[int, int]] = field(default_factory=list)
    #: Messages the characters' bots sent after the paused daemon resumed (PAUSE).
    sent_after_resume: int = 0
    #: Replies the resumed daemon held back because it no longer held the lease (PAUSE).
    refused_after_resume: int = 0

    def summary(self) -> str:
        return (
            f"{self.messages} messages: {self.answered_once} answered once, {self.lost} lost, "
            f"{self.duplicated} answered twice or more; spread {self.spread}; takeover "
            f"{'-' if self.takeover_s is None else f'{self.takeover_s:.1f} s'} ({self.seconds:.1f} s)"
        )


def _returning(notify: NotifySocket) -> Callable[[], NotifySocket]:
    return lambda: notify


@dataclass
class Spawned:
    """One ``troupe start`` subprocess and the systemd notify socket it reports to."""

    process: asyncio.subprocess.Process
    notify: NotifySocket
    transport: asyncio.DatagramTransport


async def start_daemon(
    workdir: Path, short: Path, n: int, database_url: str, openai_url: str, *, lease_s: float
) -> Spawned:
    """Daemon ``n``: ``troupe start workdir/characters`` on ``database_url``, logging to
    ``workdir/daemon-<n>.log``, its sockets in ``short`` (AF_UNIX paths must be short)."""
    notify = NotifySocket()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(short / f"notify-{n}"))
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(_returning(notify), sock=sock)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "NOTIFY_SOCKET": str(short / f"notify-{n}"),
        "TROUPE_DATA_DIR": str(workdir / f"data-{n}"),
        "TROUPE_CONTROL_SOCKET": str(short / f"control-{n}.sock"),
        "TROUPE_DATABASE_URL": database_url,
        "TROUPE_LEASE_S": str(lease_s),
        "TROUPE_STOP_TIMEOUT_S": "5",
        "TROUPE_LOG_LEVEL": os.environ.get("CLUSTER_LOG_LEVEL", "INFO"),
        "OPENAI_API_KEY": "sk-cluster-test",
        "OPENAI_BASE_URL": openai_url,
    }
    process = await spawn_start(workdir, env, workdir / f"daemon-{n}.log")
    return Spawned(process, notify, transport)


def lease_owners(url: str) -> dict[str, str]:
    """Character lease name -> owner, for leases held now."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, owner FROM leases WHERE name LIKE 'agent:%' AND expires_at > clock_timestamp()"
        ).fetchall()
    return {str(name): str(owner) for name, owner in rows}


async def cluster_run(
    workdir: Path,
    database_url: str,
    *,
    daemons: int = 3,
    characters: int = 4,
    people: int = 12,
    messages: int = 48,
    latency: float = 0.3,
    interval: float = 0.1,
    lease_s: float = 2.0,
    fault: Fault = Fault.KILL,
    settle: float = 60.0,
) -> ClusterReport:
    """Send ``messages``, one every ``interval`` s, each in a private chat of its own (``people``
    per character: a person who writes twice before an answer gets one answer, to the newer
    message, which this count would take for a loss), and inject ``fault`` into the daemon
    serving the most characters halfway through."""
    short = Path(tempfile.mkdtemp(prefix="troupe-cluster-", dir="/tmp"))  # AF_UNIX paths must be short
    transports: list[asyncio.BaseTransport] = []
    processes: list[asyncio.subprocess.Process] = []
    started = time.monotonic()
    logs = [workdir / f"daemon-{n}.log" for n in range(daemons)]
    try:
        async with FakeTelegram() as telegram, FakeOpenAIServer() as openai:
            openai.script_chat(answer)
            openai.latency = latency
            bots = []
            for c in range(characters):
                token = f"73{c:02d}:token-cluster-{c}"
                bots.append(telegram.add_bot(token, username=f"char{c}_bot", first_name=f"Char{c}"))
                write_telegram_character(workdir / "characters" / f"char{c}.json", f"Char{c}", token, telegram.url)
            lease_names = {
                f"Char{c}": "agent:"
                + load_character(workdir / "characters" / f"char{c}.json").raise_for_problems().agent_id
                for c in range(characters)
            }
            notifies = []
            for n in range(daemons):
                spawned = await start_daemon(workdir, short, n, database_url, openai.url, lease_s=lease_s)
                processes.append(spawned.process)
                transports.append(spawned.transport)
                notifies.append(spawned.notify)
            await asyncio.gather(*(notify.wait("READY", timeout=60) for notify in notifies))
            pids = {p.pid: n for n, p in enumerate(processes)}

            def owners() -> dict[str, int]:
                return {
                    name: pids[int(owner.split(":")[-2])]
                    for name, owner in lease_owners(database_url).items()
                    if int(owner.split(":")[-2]) in pids
                }

            deadline = time.monotonic() + 30
            while True:  # every character served, and the spread settled
                placed = await asyncio.to_thread(owners)
                spread = sorted(Counter(placed.values()).get(n, 0) for n in range(daemons))
                if len(placed) == characters and spread[-1] - spread[0] <= 1:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"the troupe was not placed in 30 s: {placed}")
                await asyncio.sleep(0.2)

            for bot in bots:  # started in the background after taking the lease: now polling
                await telegram.wait_polling(bot, timeout=30)
            # Each person writes to one character: a private chat's id is the person's (as on Telegram).
            chats = []
            for c, bot in enumerate(bots):
                for i in range(people):
                    person = telegram.add_user(f"Person{c}x{i}", username=f"person{c}x{i}")
                    chats.append((person, bot, telegram.private(person, bot)))
            said: list[tuple[int, int]] = []
            victim = max(set(placed.values()), key=lambda n: list(placed.values()).count(n))
            victims_chars = {name for name, n in placed.items() if n == victim}
            sent_at_resume: dict[int, int] = {}

            async def send() -> None:
                for m in range(messages):
                    person, bot, chat = chats[m % len(chats)]
                    message = await telegram.user_says(person, chat, f"{bot.first_name}, question number {m}?")
                    said.append((chat.id, message["message_id"]))
                    await asyncio.sleep(interval)

            sender = asyncio.create_task(send())
            while len(said) < messages // 2:
                await asyncio.sleep(0.01)
            fault_at = time.monotonic()
            victim_process = processes[victim]
            if fault is Fault.KILL:
                victim_process.kill()
                await victim_process.wait()
            else:
                # Stopped with a reply under way: a message to one of its characters, paused while
                # the model is still answering it (the fake takes ``latency`` s).
                person, bot, chat = next(c for c in chats if lease_names[c[1].first_name] in victims_chars)
                message = await telegram.user_says(person, chat, f"{bot.first_name}, are you there?")
                said.append((chat.id, message["message_id"]))
                await asyncio.sleep(min(0.15, latency / 2))
                victim_process.send_signal(signal.SIGSTOP)
            takeover_s = None
            while time.monotonic() < fault_at + lease_s * 4 + 10:
                placed = await asyncio.to_thread(owners)
                if all(name in placed and placed[name] != victim for name in victims_chars):
                    takeover_s = time.monotonic() - fault_at
                    break
                await asyncio.sleep(0.1)
            if fault is Fault.PAUSE:
                sent_at_resume = {id(bot): len(bot.sent) for bot in bots}
                victim_process.send_signal(signal.SIGCONT)
            await sender

            def answers() -> Counter[tuple[int, int]]:
                return Counter(
                    (m["chat_id"], int(m["reply_to"]))
                    for bot in bots
                    for m in bot.sent
                    if m["kind"] == "text" and m["reply_to"] is not None
                )

            deadline = time.monotonic() + settle
            while time.monotonic() < deadline and any(answers()[key] == 0 for key in said):
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.5)  # a late second answer would show up now
            counts = answers()
            # What each bot sent and was sent, for a failure's post-mortem.
            (workdir / "telegram.json").write_text(
                json.dumps({bot.first_name: {"sent": bot.sent, "said": said} for bot in bots}, default=str)
            )
            for process in processes:
                if process.returncode is None:
                    process.terminate()
            await asyncio.gather(*(asyncio.wait_for(p.wait(), 30) for p in processes))
            report = ClusterReport(
                messages=len(said),
                answered_once=sum(counts[key] == 1 for key in said),
                lost=sum(counts[key] == 0 for key in said),
                duplicated=sum(counts[key] > 1 for key in said),
                takeover_s=takeover_s,
                spread=spread,
                seconds=time.monotonic() - started,
                logs="\n".join(log.read_text(errors="replace")[-3000:] for log in logs if log.exists()),
                unanswered=[key for key in said if counts[key] == 0],
            )
            if fault is Fault.PAUSE:
                report.sent_after_resume = sum(len(bot.sent) - sent_at_resume[id(bot)] for bot in bots)
                victim_log = logs[victim].read_text(errors="replace")
                report.refused_after_resume = victim_log.count("not sending a reply")
            return report
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()
        for transport in transports:
            transport.close()
        for path in short.iterdir():
            path.unlink()
        short.rmdir()
