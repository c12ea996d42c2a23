"""Two real daemons on one PostgreSQL, Ada served by one and Brann by the other, in one Telegram
group: a person asks Ada, Brann hears Ada's reply through the relay (the troupe's bus) and
answers, and so on until the loop guard ends the bot-to-bot exchange; when Brann's daemon is
killed (kill -9) before it answers, Brann answers once from the daemon it moved to. Nothing is
answered twice."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.store.postgres import PostgresDatabase
from platforms.telegram._message_ref import TelegramMessageRef

from ..fakes.openai_server import FakeOpenAIServer
from ..fakes.telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser
from ..platforms.discord.scene import plan, until
from .cluster_run import Spawned, lease_owners, start_daemon
from .crash_run import write_telegram_character

LEASE_S = 4.0  # a start on a loaded machine can hold the loop for seconds: 2 s leases flap
MAX_BOT_TURNS = 3


def exchange(body: dict[str, Any]) -> str:
    """Each character addresses the other in every turn: only the loop guard ends it."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if turn := re.search(r"Write the next turn of (\w+)", prompt):
        name = turn.group(1)
        other = "brann_bot" if name == "Ada" else "ada_bot"
        return plan(f"@{other} {name} has more to say.")
    return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


@dataclass
class Cluster:
    workdir: Path
    short: Path
    url: str
    telegram: FakeTelegram
    openai: FakeOpenAIServer
    db: PostgresDatabase
    ada: FakeBot
    brann: FakeBot
    sam: FakeUser
    group: FakeChat
    daemons: list[Spawned] = field(default_factory=list)

    def lease(self, name: str) -> str:
        path = self.workdir / "characters" / f"{name.lower()}.json"
        return "agent:" + load_character(path).raise_for_problems().agent_id

    async def start(self) -> Spawned:
        spawned = await start_daemon(
            self.workdir, self.short, len(self.daemons), self.url, self.openai.url, lease_s=LEASE_S
        )
        self.daemons.append(spawned)
        await spawned.notify.wait("READY", timeout=60)
        return spawned

    async def served_by(self, name: str, daemon: Spawned, timeout: float = 60) -> None:
        lease, pid = self.lease(name), daemon.process.pid
        deadline = time.monotonic() + timeout
        # A daemon's id is host:pid:random.
        while f":{pid}:" not in (await asyncio.to_thread(lease_owners, self.url)).get(lease, ""):
            assert time.monotonic() < deadline, f"{name} is not served by daemon {pid}: {self.logs()}"
            await asyncio.sleep(0.1)

    async def placed_apart(self) -> tuple[Spawned, Spawned]:
        """Ada on a first daemon, Brann on a second: the first starts while Brann's lease is held
        elsewhere, and has its share (one of two) once the second is up."""
        held = await self.db.leases.acquire(self.lease("Brann"), "elsewhere", 60)
        assert held is not None
        first = await self.start()
        await self.served_by("Ada", first)
        second = await self.start()
        assert await self.db.leases.release(held)
        await self.served_by("Brann", second)
        # A start can hold a loaded machine's loop past a renewal: wait for placement to settle.
        deadline, stable_since = time.monotonic() + 60, time.monotonic()
        owners: dict[str, str] = {}
        while time.monotonic() - stable_since < LEASE_S:
            now = await asyncio.to_thread(lease_owners, self.url)
            if now != owners:
                owners, stable_since = now, time.monotonic()
            assert time.monotonic() < deadline, f"placement never settled: {self.logs()}"
            await asyncio.sleep(0.2)
        await self.served_by("Ada", first)
        await self.served_by("Brann", second)
        await self.telegram.wait_polling(self.ada, timeout=60)
        await self.telegram.wait_polling(self.brann, timeout=60)
        return first, second

    async def ends_at_the_loop_guard(self, asked: int) -> None:
        """The characters answered each other in turn, each message once, until one heard more bot
        turns in a row than MAX_BOT_TURNS and stayed quiet.

        Where the chain stops depends on timing: a character that decided to stay out of the
        person's message remembers that decision, which counts as a bot turn when it lands after
        the first bot reply. So: Ada, Brann, Ada at least; at most MAX_BOT_TURNS + 1 bot messages.
        """
        said = sorted_sent(self)
        speakers = [m["message"]["from"]["first_name"] for m in said]
        assert 3 <= len(said) <= MAX_BOT_TURNS + 1, self.story()
        assert speakers == ["Ada", "Brann", "Ada", "Brann"][: len(said)], self.story()
        chain = [asked] + [m["message"]["message_id"] for m in said]
        assert [m["reply_to"] for m in said] == chain[:-1], self.story()  # each answered the turn before, once
        # The last one was heard — through the relay, from the other daemon — and not answered.
        last = said[-1]["message"]
        listener = "Brann" if last["from"]["first_name"] == "Ada" else "Ada"
        store = self.db.for_agent(self.lease(listener).removeprefix("agent:"))
        heard = await store.get_memories(table="messages", count=50)
        assert any((ref := TelegramMessageRef.of(m)) and ref.message_id == last["message_id"] for m in heard), (
            self.story()
        )

    def story(self) -> str:
        """Who said what in answer to what, and the logs: a failure's post-mortem."""
        said = [
            (m["message"]["from"]["first_name"], m["message"]["message_id"], m["reply_to"]) for m in sorted_sent(self)
        ]
        return f"{said}\n{self.logs()}"

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(self.workdir.glob("daemon-*.log")))

    async def quiet(self, seconds: float = 2.0) -> None:
        """Wait until nobody has sent anything for ``seconds``."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            before = len(self.ada.sent) + len(self.brann.sent)
            await asyncio.sleep(seconds)
            if len(self.ada.sent) + len(self.brann.sent) == before:
                return
        raise AssertionError("the characters never went quiet")


@pytest.fixture
async def cluster(tmp_path: Path, postgres_url: str) -> AsyncIterator[Cluster]:
    short = Path(tempfile.mkdtemp(prefix="troupe-relay-", dir="/tmp"))  # AF_UNIX paths must be short
    async with FakeTelegram() as telegram, FakeOpenAIServer() as openai, PostgresDatabase(postgres_url) as db:
        openai.script_chat(exchange)
        openai.latency = 0.3
        ada = telegram.add_bot("7401:token-relay-ada", username="ada_bot", first_name="Ada")
        brann = telegram.add_bot("7402:token-relay-brann", username="brann_bot", first_name="Brann")
        for bot in (ada, brann):
            path = tmp_path / "characters" / f"{bot.first_name.lower()}.json"
            write_telegram_character(path, bot.first_name, bot.token, telegram.url, MAX_BOT_TURNS=str(MAX_BOT_TURNS))
        sam = telegram.add_user("Sam", username="samr")
        group = telegram.add_group("Writers' Room", members=[sam, ada, brann], supergroup=True)
        made = Cluster(tmp_path, short, postgres_url, telegram, openai, db, ada, brann, sam, group)
        try:
            yield made
        finally:
            for spawned in made.daemons:
                if spawned.process.returncode is None:
                    spawned.process.terminate()
            for spawned in made.daemons:
                try:
                    await asyncio.wait_for(spawned.process.wait(), 30)
                except TimeoutError:
                    spawned.process.kill()
                    await spawned.process.wait()
                spawned.transport.close()
            shutil.rmtree(short, ignore_errors=True)


async def test_characters_on_two_daemons_talk_through_the_relay_until_the_loop_guard(cluster: Cluster) -> None:
    c = cluster
    await c.placed_apart()
    asked = await c.telegram.user_says(c.sam, c.group, "@ada_bot what does your colleague think of the ending?")
    await c.telegram.wait_for_sent(c.ada, 2, timeout=60)
    await c.quiet()
    await c.ends_at_the_loop_guard(asked["message_id"])


async def test_a_character_whose_daemon_is_killed_before_it_answers_answers_once_from_its_new_daemon(
    cluster: Cluster,
) -> None:
    c = cluster
    c.openai.latency = 1.0  # Brann is still thinking about Ada's words when its daemon dies
    first, second = await c.placed_apart()
    asked = await c.telegram.user_says(c.sam, c.group, "@ada_bot what does your colleague think of the ending?")
    (said,) = await c.telegram.wait_for_sent(c.ada, 1, timeout=60)
    # The relay's post has reached the second daemon: Brann is asking the model (which takes 1 s).
    await until(lambda: any("Write the next turn of Brann" in json.dumps(r.json) for r in c.openai.requests), 60)
    second.process.send_signal(signal.SIGKILL)
    await second.process.wait()
    assert c.brann.sent == []
    # Brann's lease runs out and the first daemon takes it; Brann catches up on what Ada said.
    await c.served_by("Brann", first, timeout=LEASE_S * 4 + 10)
    await c.telegram.wait_for_sent(c.brann, 1, timeout=60)
    await c.quiet()
    assert c.brann.sent[0]["reply_to"] == said["message"]["message_id"], c.story()
    await c.ends_at_the_loop_guard(asked["message_id"])  # on one daemon now


def sorted_sent(c: Cluster) -> list[dict[str, Any]]:
    return sorted(c.ada.sent + c.brann.sent, key=lambda m: int(m["message"]["message_id"]))
