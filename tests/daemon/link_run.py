"""Faults of several daemons' links and leases, with real ``troupe start`` processes.

:func:`link_fault_run`: two daemons on one PostgreSQL, each with its database link through a
proxy of its own: the link of the daemon serving most characters is cut (and reconnections
refused) or blackholed while people keep writing, for longer than the lease, then healed.
Every message must be answered exactly once: the deposed daemon's held writes land after the
heal and change nothing.

:func:`pause_regain_run`: a daemon paused with an answer under way gets the character back at a
later epoch before the answer arrives; it must not send it.

Used by ``test_cluster_links.py``; the figures are in docs/several-daemons.md.
"""

from __future__ import annotations

import asyncio
import enum
import json
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..fakes.tcp_proxy import Mode
from .cluster_run import _tally, cluster

__all__ = ["LinkFault", "LinkReport", "RegainReport", "link_fault_run", "pause_regain_run"]


class LinkFault(enum.Enum):
    CUT = "links cut, new ones refused"
    BLACKHOLE = "links blackholed"


@dataclass
class LinkReport:
    messages: int
    answered_once: int
    lost: int
    duplicated: int
    #: Seconds from the fault until the other daemon served every character of the cut-off one.
    takeover_s: float | None
    #: Messages closed as abandoned ("troupe died while answering it") or as send_failed.
    abandoned: int
    seconds: float
    logs: str
    unanswered: list[tuple[int, int]] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.messages} messages: {self.answered_once} answered once, {self.lost} lost, "
            f"{self.duplicated} answered twice or more, {self.abandoned} abandoned; takeover "
            f"{'-' if self.takeover_s is None else f'{self.takeover_s:.1f} s'} ({self.seconds:.1f} s)"
        )


async def link_fault_run(
    workdir: Path,
    database_url: str,
    *,
    fault: LinkFault,
    characters: int = 2,
    people: int = 10,
    messages: int = 20,
    interval: float = 0.2,
    latency: float = 0.3,
    lease_s: float = 2.0,
    settle: float = 60.0,
) -> LinkReport:
    """Send ``messages``, one every ``interval`` s, each in a private chat of its own; halfway,
    inject ``fault`` into the link of the daemon serving the most characters until the other
    daemon has taken them all over (longer than the lease), then heal it."""
    async with cluster(
        workdir, database_url, daemons=2, characters=characters, latency=latency, lease_s=lease_s, proxied=True
    ) as c:
        placed = await c.placed()
        victim = max(set(placed.values()), key=lambda n: list(placed.values()).count(n))
        victims_chars = {name for name, n in placed.items() if n == victim}
        chats = c.people(people)
        said: list[tuple[int, int]] = []

        async def send() -> None:
            for m in range(messages):
                person, bot, chat = chats[m % len(chats)]
                message = await c.telegram.user_says(person, chat, f"{bot.first_name}, question number {m}?")
                said.append((chat.id, message["message_id"]))
                await asyncio.sleep(interval)

        sender = asyncio.create_task(send())
        while len(said) < messages // 2:
            await asyncio.sleep(0.01)
        proxy = c.proxies[victim]
        if fault is LinkFault.CUT:
            proxy.mode = Mode.REFUSE
            proxy.cut()
        else:
            proxy.mode = Mode.BLACKHOLE
        # Until the other daemon serves them all: the outage outlasts the cut-off one's leases.
        takeover_s = await c.moved_off(victim, victims_chars, lease_s * 4 + 20)
        proxy.mode = Mode.FORWARD
        await sender
        counts: Counter[tuple[int, int]] = await c.answered(said, settle)
        c.dump(said)
        await c.stop_all()
        logs = "\n".join(log.read_text(errors="replace") for log in c.logs if log.exists())
        return LinkReport(
            **_tally(counts, said),
            takeover_s=takeover_s,
            abandoned=logs.count("troupe died while answering it") + logs.count("-> send_failed"),
            seconds=time.monotonic() - c.started,
            logs=c.tail_logs(),
        )


@dataclass
class RegainReport:
    #: Replies the message paused with its answer under way got (1: answered once).
    replies: int
    #: Whether the paused daemon held the character again when its old answer was released.
    regained: bool
    logs: str


async def pause_regain_run(workdir: Path, database_url: str, *, lease_s: float = 2.0) -> RegainReport:
    """A daemon is paused (SIGSTOP) with a model answer under way; the other daemon takes the
    character and answers the message; the paused one is continued and, the other stopping,
    gets the character back (a later epoch), and only then does its old answer arrive. One reply
    is right, two a duplicate."""
    async with cluster(workdir, database_url, daemons=2, characters=2, lease_s=lease_s) as c:
        placed = await c.placed()
        bot = c.bots[0]
        lease = c.lease_names[bot.first_name]
        victim = placed[lease]
        ((person, _, chat),) = [x for x in c.people(1) if x[1] is bot]
        text = f"{bot.first_name}, are you there?"
        held = c.openai.hold(lambda r: r.endpoint == "chat" and text in json.dumps(r.json))
        message = await c.telegram.user_says(person, chat, text)
        key = (chat.id, message["message_id"])
        await asyncio.wait_for(held.reached.wait(), 60)
        process = c.processes[victim]
        process.send_signal(signal.SIGSTOP)
        try:
            # The other daemon takes the character and answers the message left idle.
            deadline = time.monotonic() + 60
            while c.answers()[key] == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
        finally:
            process.send_signal(signal.SIGCONT)
        c.processes[1 - victim].terminate()  # it hands everything over: the paused one gets it back
        regained = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not regained:
            regained = (await asyncio.to_thread(c.owners)).get(lease) == victim
            await asyncio.sleep(0.1)
        held.release()  # the old epoch's answer arrives now
        counts = await c.answered([key], 30)
        await c.stop_all()
        return RegainReport(counts[key], regained, c.tail_logs())
