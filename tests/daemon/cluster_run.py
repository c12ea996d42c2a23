"""Several daemons, one troupe: the real ``troupe start`` run N times on one PostgreSQL database,
serving characters on the fake Telegram while people write to them.

- :func:`cluster_run`: one owner is killed with SIGKILL (or stopped with SIGSTOP past its leases,
  then continued) in the middle; afterwards every message must have been answered exactly once.
- :func:`handover_run`: daemons are stopped gracefully (SIGTERM) and started again, one after
  another, while messages keep coming: handover times, and every message answered exactly once.
- :func:`throughput_run`: a burst of messages answered as fast as the troupe can, with the
  connections each daemon holds (``pg_stat_activity`` by ``application_name``).

:func:`cluster` starts the daemons and the fakes for all three (and for other tests).
Used by ``test_cluster.py`` (small) and ``tests/bench/bench_cluster.py`` (figures).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import os
import signal
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bot.config.character import load_character

from ..fakes.openai_server import FakeOpenAIServer
from ..fakes.tcp_proxy import TcpProxy
from ..fakes.telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser
from .crash_run import spawn_start, write_telegram_character
from .test_service import NotifySocket, answer

__all__ = [
    "Cluster",
    "ClusterReport",
    "Fault",
    "HandoverReport",
    "Spawned",
    "ThroughputReport",
    "cluster",
    "cluster_run",
    "handover_run",
    "lease_owners",
    "start_daemon",
    "throughput_run",
]


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
    #: ``troupe status --json`` asked of the first daemon once the troupe was placed.
    status: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{self.messages} messages: {self.answered_once} answered once, {self.lost} lost, "
            f"{self.duplicated} answered twice or more; spread {self.spread}; takeover "
            f"{'-' if self.takeover_s is None else f'{self.takeover_s:.1f} s'} ({self.seconds:.1f} s)"
        )


def _tally(counts: Counter[tuple[int, int]], said: list[tuple[int, int]]) -> dict[str, Any]:
    """The answer counts of a run's report: answered once, lost, answered twice or more, which were lost."""
    return {
        "messages": len(said),
        "answered_once": sum(counts[key] == 1 for key in said),
        "lost": sum(counts[key] == 0 for key in said),
        "duplicated": sum(counts[key] > 1 for key in said),
        "unanswered": [key for key in said if counts[key] == 0],
    }


def _returning(notify: NotifySocket) -> Callable[[], NotifySocket]:
    return lambda: notify


def daemon_env(
    workdir: Path, short: Path, n: int, database_url: str, openai_url: str, *, lease_s: float
) -> dict[str, str]:
    """The environment of daemon ``n``: its sockets in ``short`` (AF_UNIX paths must be short)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "NOTIFY_SOCKET": str(short / f"notify-{n}"),
        "TROUPE_DATA_DIR": str(workdir / f"data-{n}"),
        "TROUPE_CONTROL_SOCKET": str(short / f"control-{n}.sock"),
        "TROUPE_DATABASE_URL": database_url,
        "TROUPE_CONSOLE_PORT": "0",  # the console has its own tests; several daemons, one port
        "TROUPE_LEASE_S": str(lease_s),
        "TROUPE_STOP_TIMEOUT_S": "5",
        "TROUPE_LOG_LEVEL": os.environ.get("CLUSTER_LOG_LEVEL", "INFO"),
        "OPENAI_API_KEY": "sk-cluster-test",
        "OPENAI_BASE_URL": openai_url,
    }


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
    ``workdir/daemon-<n>.log``."""
    notify = NotifySocket()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(short / f"notify-{n}"))
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(_returning(notify), sock=sock)
    env = daemon_env(workdir, short, n, database_url, openai_url, lease_s=lease_s)
    process = await spawn_start(workdir, env, workdir / f"daemon-{n}.log")
    return Spawned(process, notify, transport)


def lease_owners(url: str) -> dict[str, str]:
    """Character lease name -> owner, for leases held now."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, owner FROM leases WHERE name LIKE 'agent:%' AND expires_at > clock_timestamp()"
        ).fetchall()
    return {str(name): str(owner) for name, owner in rows}


def _connections(url: str) -> dict[int, int]:
    """Connections open now per daemon pid (their application_name is ``troupe:<host>:<pid>:<hex>``)."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name, count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name LIKE 'troupe:%%' GROUP BY 1"
        ).fetchall()
    counts: dict[int, int] = {}
    for name, count in rows:
        with contextlib.suppress(IndexError, ValueError):
            pid = int(str(name).split(":")[-2])
            counts[pid] = counts.get(pid, 0) + int(count)
    return counts


@dataclass
class Cluster:
    """Daemon subprocesses on one database, the fake Telegram and model, and the characters' bots."""

    workdir: Path
    database_url: str
    telegram: FakeTelegram
    openai: FakeOpenAIServer
    short: Path  # AF_UNIX paths must be short
    lease_s: float
    bots: list[FakeBot]
    #: The character's first name -> its lease's name (``agent:<id>``).
    lease_names: dict[str, str]
    notifies: list[NotifySocket]
    logs: list[Path]
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    #: Per daemon, the proxy its database link goes through (``proxied``), to cut or blackhole it.
    proxies: list[TcpProxy] = field(default_factory=list)

    def env(self, n: int) -> dict[str, str]:
        url = self.proxies[n].url() if self.proxies else self.database_url
        return daemon_env(self.workdir, self.short, n, url, self.openai.url, lease_s=self.lease_s)

    async def start(self, n: int) -> None:
        """Start daemon ``n`` (again, if it ran before: the same place in the list, a new process)."""
        process = await spawn_start(self.workdir, self.env(n), self.logs[n])
        if n < len(self.processes):
            self.processes[n] = process
        else:
            self.processes.append(process)

    async def cli(self, n: int, *args: str) -> tuple[int, str, str]:
        """``troupe ARGS`` as run beside daemon ``n`` (its control socket, its environment)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            *args,
            cwd=self.workdir,
            env=self.env(n),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        return process.returncode or 0, out.decode(), err.decode()

    def owners(self) -> dict[str, int]:
        """Lease name -> the daemon (its place in the list) holding it now."""
        pids = {p.pid: n for n, p in enumerate(self.processes) if p.returncode is None}
        return {
            name: pids[int(owner.split(":")[-2])]
            for name, owner in lease_owners(self.database_url).items()
            if int(owner.split(":")[-2]) in pids
        }

    def connections(self) -> dict[int, int]:
        """Connections held now per daemon (its place in the list)."""
        counts = _connections(self.database_url)
        return {n: counts.get(p.pid, 0) for n, p in enumerate(self.processes) if p.returncode is None}

    async def placed(self, timeout: float = 60.0) -> dict[str, int]:
        """Wait until every character is served, the spread is within one, and the owners have
        stayed the same for a lease time (a spread within one can still be a step of a
        rebalancing: a daemon that took two before the third came up hands one over); the owners."""
        deadline = time.monotonic() + timeout
        last: dict[str, int] = {}
        since = time.monotonic()
        while True:
            placed = await asyncio.to_thread(self.owners)
            if placed != last:
                last, since = placed, time.monotonic()
            alive = [n for n, p in enumerate(self.processes) if p.returncode is None]
            spread = [Counter(placed.values()).get(n, 0) for n in alive]
            settled = time.monotonic() - since >= self.lease_s
            if len(placed) == len(self.bots) and max(spread) - min(spread) <= 1 and settled:
                return placed
            if time.monotonic() > deadline:
                raise AssertionError(f"the troupe was not placed in {timeout:g} s: {placed}")
            await asyncio.sleep(0.2)

    async def moved_off(self, victim: int, names: set[str], timeout: float) -> float | None:
        """Seconds until every one of ``names`` is held by a daemon other than ``victim``."""
        started = time.monotonic()
        while time.monotonic() < started + timeout:
            placed = await asyncio.to_thread(self.owners)
            if all(name in placed and placed[name] != victim for name in names):
                return time.monotonic() - started
            await asyncio.sleep(0.1)
        return None

    def people(self, per_character: int) -> list[tuple[FakeUser, FakeBot, FakeChat]]:
        """``per_character`` people writing to each character, each in a private chat of their own."""
        chats = []
        for c, bot in enumerate(self.bots):
            for i in range(per_character):
                person = self.telegram.add_user(f"Person{c}x{i}", username=f"person{c}x{i}")
                chats.append((person, bot, self.telegram.private(person, bot)))
        return chats

    async def say(self, chats: list[tuple[FakeUser, FakeBot, FakeChat]], m: int) -> tuple[int, int]:
        """Message ``m`` of a run where each message has a person of its own (``chats`` from
        :meth:`people`): to character ``m`` modulo their number; its (chat, message id)."""
        per_character = len(chats) // len(self.bots)
        person, bot, chat = chats[(m % len(self.bots)) * per_character + m // len(self.bots)]
        message = await self.telegram.user_says(person, chat, f"{bot.first_name}, question number {m}?")
        return chat.id, message["message_id"]

    def answers(self) -> Counter[tuple[int, int]]:
        """How many replies each (chat, message) got."""
        return Counter(
            (m["chat_id"], int(m["reply_to"]))
            for bot in self.bots
            for m in bot.sent
            if m["kind"] == "text" and m["reply_to"] is not None
        )

    async def answered(self, said: list[tuple[int, int]], timeout: float) -> Counter[tuple[int, int]]:
        """Wait until each message said has an answer (or ``timeout``), and a little more for late
        second answers; the counts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.answers()[key] == 0 for key in said):
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.5)  # a late second answer would show up now
        return self.answers()

    def dump(self, said: list[tuple[int, int]]) -> None:
        """What each bot sent and was sent, for a failure's post-mortem."""
        (self.workdir / "telegram.json").write_text(
            json.dumps({bot.first_name: {"sent": bot.sent, "said": said} for bot in self.bots}, default=str)
        )

    def tail_logs(self) -> str:
        return "\n".join(log.read_text(errors="replace")[-3000:] for log in self.logs if log.exists())

    async def stop_all(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.terminate()
        await asyncio.gather(*(asyncio.wait_for(p.wait(), 30) for p in self.processes))


@contextlib.asynccontextmanager
async def cluster(
    workdir: Path,
    database_url: str,
    *,
    daemons: int = 3,
    characters: int = 4,
    latency: float = 0.3,
    lease_s: float = 2.0,
    proxied: bool = False,
) -> AsyncIterator[Cluster]:
    """``daemons`` daemons serving ``characters`` Telegram characters, started, ready, placed
    evenly and polling; stopped (and killed if they linger) on the way out. ``proxied``: each
    daemon's database link goes through a proxy of its own (``Cluster.proxies``)."""
    short = Path(tempfile.mkdtemp(prefix="troupe-cluster-", dir="/tmp"))
    transports: list[asyncio.BaseTransport] = []
    loop = asyncio.get_running_loop()
    the: Cluster | None = None
    proxies = [TcpProxy(database_url) for _ in range(daemons if proxied else 0)]
    try:
        async with contextlib.AsyncExitStack() as stack:
            for proxy in proxies:
                await stack.enter_async_context(proxy)
            telegram = await stack.enter_async_context(FakeTelegram())
            openai = await stack.enter_async_context(FakeOpenAIServer())
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
                notify = NotifySocket()
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sock.bind(str(short / f"notify-{n}"))
                transports.append((await loop.create_datagram_endpoint(_returning(notify), sock=sock))[0])
                notifies.append(notify)
            logs = [workdir / f"daemon-{n}.log" for n in range(daemons)]
            the = Cluster(workdir, database_url, telegram, openai, short, lease_s, bots, lease_names, notifies, logs)
            the.proxies = proxies
            for n in range(daemons):
                await the.start(n)
            await asyncio.gather(*(notify.wait("READY", timeout=60) for notify in notifies))
            await the.placed()
            for bot in bots:  # started in the background after taking the lease: now polling
                await telegram.wait_polling(bot, timeout=30)
            yield the
    finally:
        for process in the.processes if the is not None else []:
            if process.returncode is None:
                process.kill()
                await process.wait()
        for transport in transports:
            transport.close()
        for path in short.iterdir():
            path.unlink()
        short.rmdir()


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
    ask_status: bool = False,
) -> ClusterReport:
    """Send ``messages``, one every ``interval`` s, each in a private chat of its own (``people``
    per character: a person who writes twice before an answer gets one answer, to the newer
    message, which this count would take for a loss), and inject ``fault`` into the daemon
    serving the most characters halfway through. ``ask_status``: run ``troupe status --json``
    beside the first daemon once the troupe is placed (in the report)."""
    async with cluster(
        workdir, database_url, daemons=daemons, characters=characters, latency=latency, lease_s=lease_s
    ) as c:
        placed = await c.placed()  # again: a lease renewed late may have moved one since
        spread = sorted(Counter(placed.values()).get(n, 0) for n in range(daemons))
        status: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        while ask_status:  # placed: leases taken; the characters' starts may still be under way
            code, out, err = await c.cli(0, "status", "--json")
            status = json.loads(out) if code == 0 else {"error": err}
            states = [ch.get("state") for ch in status.get("troupe", {}).get("characters", [])]
            if code != 0 or all(state == "running" for state in states) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        chats = c.people(people)
        said: list[tuple[int, int]] = []
        victim = max(set(placed.values()), key=lambda n: list(placed.values()).count(n))
        victims_chars = {name for name, n in placed.items() if n == victim}
        sent_at_resume: dict[int, int] = {}

        async def send() -> None:
            for m in range(messages):
                person, bot, chat = chats[m % len(chats)]
                message = await c.telegram.user_says(person, chat, f"{bot.first_name}, question number {m}?")
                said.append((chat.id, message["message_id"]))
                await asyncio.sleep(interval)

        sender = asyncio.create_task(send())
        while len(said) < messages // 2:
            await asyncio.sleep(0.01)
        victim_process = c.processes[victim]
        if fault is Fault.KILL:
            victim_process.kill()
            await victim_process.wait()
        else:
            # Stopped with a reply under way: a message to one of its characters, paused while
            # the model is still answering it (the fake takes ``latency`` s).
            now = await asyncio.to_thread(c.owners)  # the victim's own now, not as first placed
            person, bot, chat = next(x for x in chats if now.get(c.lease_names[x[1].first_name]) == victim)
            text = f"{bot.first_name}, are you there?"
            # The model's answer to it is held until the victim has resumed: paused with the
            # reply under way, and the reply reaching it only after its leases went elsewhere,
            # however slow the machine (a fixed latency let a busy one finish it before the pause).
            held = c.openai.hold(lambda r: r.endpoint == "chat" and text in json.dumps(r.json))
            message = await c.telegram.user_says(person, chat, text)
            said.append((chat.id, message["message_id"]))
            await asyncio.wait_for(held.reached.wait(), 60)
            victim_process.send_signal(signal.SIGSTOP)
        takeover_s = await c.moved_off(victim, victims_chars, lease_s * 4 + 10)
        if fault is Fault.PAUSE:
            sent_at_resume = {id(bot): len(bot.sent) for bot in c.bots}
            victim_process.send_signal(signal.SIGCONT)
            held.release()
        await sender
        counts = await c.answered(said, settle)
        c.dump(said)
        await c.stop_all()
        report = ClusterReport(
            **_tally(counts, said),
            takeover_s=takeover_s,
            spread=spread,
            seconds=time.monotonic() - c.started,
            logs=c.tail_logs(),
            status=status,
        )
        if fault is Fault.PAUSE:
            report.sent_after_resume = sum(len(bot.sent) - sent_at_resume[id(bot)] for bot in c.bots)
            victim_log = c.logs[victim].read_text(errors="replace")
            report.refused_after_resume = victim_log.count("not sending a reply")
        return report


@dataclass
class HandoverReport:
    messages: int
    answered_once: int
    lost: int
    duplicated: int
    #: Per forced handover: seconds from SIGTERM until every character of that daemon was held by another.
    handovers: list[float]
    #: Handovers whose characters had not moved within the wait.
    stuck: int
    seconds: float
    logs: str
    unanswered: list[tuple[int, int]] = field(default_factory=list)

    def summary(self) -> str:
        times = sorted(self.handovers)
        median = f"{times[len(times) // 2]:.1f}" if times else "-"
        longest = f"{times[-1]:.1f}" if times else "-"
        return (
            f"{self.messages} messages, {len(self.handovers) + self.stuck} forced handovers: {self.answered_once} "
            f"answered once, {self.lost} lost, {self.duplicated} answered twice or more; handover p50 {median} s, "
            f"max {longest} s, {self.stuck} stuck ({self.seconds:.1f} s)"
        )


async def handover_run(
    workdir: Path,
    database_url: str,
    *,
    daemons: int = 3,
    characters: int = 4,
    messages: int = 1000,
    handovers: int = 20,
    interval: float = 0.1,
    latency: float = 0.0,
    lease_s: float = 10.0,
    settle: float = 120.0,
) -> HandoverReport:
    """Send ``messages``, one every ``interval`` s, each from a person of its own (so no answer is
    superseded by the same person's next message), while ``handovers`` times the daemon serving the
    most characters is stopped with SIGTERM (it finishes its replies, stops, and releases its
    leases) and, once its characters are held by others, started again; the next waits until the
    restarted one is ready, so two daemons are always up."""
    async with cluster(
        workdir, database_url, daemons=daemons, characters=characters, latency=latency, lease_s=lease_s
    ) as c:
        chats = c.people(-(-messages // characters))
        said: list[tuple[int, int]] = []

        async def send() -> None:
            for m in range(messages):
                said.append(await c.say(chats, m))
                await asyncio.sleep(interval)

        sender = asyncio.create_task(send())
        period = messages * interval / (handovers + 1)
        times: list[float] = []
        stuck = 0
        readies = [1] * daemons
        for h in range(handovers):
            await asyncio.sleep(max(0.0, c.started + (h + 1) * period - time.monotonic()))
            placed = await asyncio.to_thread(c.owners)
            victim = max(range(daemons), key=lambda n: (list(placed.values()).count(n), -((n - h) % daemons)))
            names = {name for name, n in placed.items() if n == victim}
            c.processes[victim].send_signal(signal.SIGTERM)
            moved = await c.moved_off(victim, names, lease_s * 3 + 15)
            if moved is None:
                stuck += 1
            else:
                times.append(moved)
            await asyncio.wait_for(c.processes[victim].wait(), 30)
            await c.start(victim)
            readies[victim] += 1
            await c.notifies[victim].wait("READY", count=readies[victim], timeout=60)
        await sender
        counts = await c.answered(said, settle)
        c.dump(said)
        await c.stop_all()
        return HandoverReport(
            **_tally(counts, said),
            handovers=times,
            stuck=stuck,
            seconds=time.monotonic() - c.started,
            logs=c.tail_logs(),
        )


@dataclass
class ThroughputReport:
    daemons: int
    characters: int
    messages: int
    answered: int
    duplicated: int
    #: From the first message sent to the last answer.
    seconds: float
    #: Connections per daemon once placed, before the burst: what starting left in its pool
    #: (which closes one unused connection a minute).
    idle_connections: list[int]
    #: The most each daemon held at once during the burst (sampled every 0.1 s).
    busiest_connections: list[int]

    @property
    def per_second(self) -> float:
        return self.answered / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        return (
            f"{self.daemons} daemon(s), {self.characters} characters: {self.answered} of {self.messages} answered "
            f"in {self.seconds:.1f} s = {self.per_second:.1f} messages/s, {self.duplicated} twice; connections "
            f"per daemon after start {self.idle_connections}, at most {self.busiest_connections} during the burst"
        )


async def throughput_run(
    workdir: Path,
    database_url: str,
    *,
    daemons: int = 3,
    characters: int = 6,
    messages: int = 600,
    writers: int = 4,
    lease_s: float = 10.0,
    wait: float = 60.0,
) -> ThroughputReport:
    """``writers`` people per character each write, wait for the answer, and write again, until
    ``messages`` have been sent (a closed loop: the troupe is kept busy without queueing more than
    it can answer in time); the fake model answers at once. Measures messages answered per second
    from the first sent to the last answer; a message without an answer after ``wait`` s is left."""
    async with cluster(
        workdir, database_url, daemons=daemons, characters=characters, latency=0.0, lease_s=lease_s
    ) as c:
        chats = c.people(writers)
        await asyncio.sleep(2)  # the start-up's reads are done
        idle = await asyncio.to_thread(c.connections)
        busiest: Counter[int] = Counter()
        said: list[tuple[int, int]] = []
        waiting: dict[tuple[int, int], asyncio.Event] = {}
        seen = [0] * len(c.bots)
        finished = asyncio.Event()
        last_answer = time.monotonic()

        async def watch() -> None:  # one scan of what the bots sent, for every writer
            nonlocal last_answer
            while not finished.is_set():
                for b, bot in enumerate(c.bots):
                    for sent in bot.sent[seen[b] :]:
                        event = waiting.get((sent["chat_id"], int(sent["reply_to"] or 0)))
                        if sent["kind"] == "text" and event is not None and not event.is_set():
                            event.set()
                            last_answer = time.monotonic()
                    seen[b] = len(bot.sent)
                await asyncio.sleep(0.01)

        async def sample() -> None:
            while not finished.is_set():
                for n, count in (await asyncio.to_thread(c.connections)).items():
                    busiest[n] = max(busiest[n], count)
                await asyncio.sleep(0.1)

        numbers = iter(range(messages))  # taken before sending: the writers never send more than asked

        async def write(person: FakeUser, bot: FakeBot, chat: FakeChat) -> None:
            for m in numbers:
                message = await c.telegram.user_says(person, chat, f"{bot.first_name}, question number {m}?")
                key = (chat.id, message["message_id"])
                said.append(key)
                waiting[key] = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiting[key].wait(), wait)

        helpers = [asyncio.create_task(watch()), asyncio.create_task(sample())]
        started = time.monotonic()
        await asyncio.gather(*(write(*chat) for chat in chats))
        seconds = last_answer - started
        finished.set()
        await asyncio.gather(*helpers)
        counts = await c.answered(said, 0)
        await c.stop_all()
        return ThroughputReport(
            daemons=daemons,
            characters=characters,
            messages=len(said),
            answered=sum(counts[key] >= 1 for key in said),
            duplicated=sum(counts[key] > 1 for key in said),
            seconds=seconds,
            idle_connections=[idle.get(n, 0) for n in range(daemons)],
            busiest_connections=[busiest.get(n, 0) for n in range(daemons)],
        )
