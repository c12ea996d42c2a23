"""Two daemons serving one troupe on PostgreSQL, Ada on one and Brann on the other: they hear
each other in a Telegram group through the relay (the troupe's bus), the loop guard ends their
exchange, a character that starts serving catches up on what it missed, once, and its room
states (follow, mute) go with it when it moves.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.types import RoomState
from bot.store import Lease
from bot.store.postgres import PostgresDatabase, _bus
from platforms.telegram._mapping import room_id

from ...fakes.openai_server import FakeOpenAIServer
from ...fakes.telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser
from ..discord.scene import Brain, plan, until
from .scene import character


@dataclass
class Cluster:
    """Ada and Brann, Sam and a group on the fake Telegram; daemons on one PostgreSQL database."""

    fake: FakeTelegram
    brain: Brain
    ada: FakeBot
    brann: FakeBot
    sam: FakeUser
    group: FakeChat
    db: PostgresDatabase
    workdir: Path
    environ: dict[str, str]
    paths: list[Path]
    db_url: str
    running: list[tuple[Daemon, asyncio.Task[int]]] = field(default_factory=list)
    held: dict[str, Lease] = field(default_factory=dict)

    def start(self, **more: Any) -> Daemon:
        """One more daemon (``more``: more of its DaemonSettings). Each has both characters,
        as in production; which serves which is forced through the leases (:meth:`hold`)."""
        folder = self.workdir / f"daemon-{len(self.running)}-{secrets.token_hex(3)}"
        folder.mkdir()
        settings = DaemonSettings(
            data_dir=folder,
            database_url=self.db_url,
            # Both daemons share this process's loop: on a loaded machine it can stall for
            # seconds, and a lease that lapses moves a character mid-conversation (which these
            # tests are not about). Placement rounds come every lease_s / 3.
            lease_s=6,
            reconnect_base_s=0.05,
            reconnect_cap_s=0.2,
            stop_timeout_s=5,
            **more,
        )
        daemon = Daemon(settings, [load_character(p, environ=self.environ) for p in self.paths], self.environ)
        self.running.append((daemon, asyncio.create_task(daemon.run())))
        return daemon

    async def hold(self, name: str) -> None:
        """Keep the daemons off ``name`` (as if a daemon elsewhere served it)."""
        path = next(p for p in self.paths if p.stem == name.lower())
        agent_id = load_character(path).raise_for_problems().agent_id
        lease = await self.db.leases.acquire(f"agent:{agent_id}", "elsewhere", 120)
        assert lease is not None
        self.held[name] = lease

    async def let_go(self, name: str) -> None:
        assert await self.db.leases.release(self.held.pop(name))

    async def placed_apart(self) -> tuple[Daemon, Daemon]:
        """Ada on a first daemon, Brann on a second: the first starts while Brann is held
        elsewhere, and has its share (one of two) once the second is up."""
        await self.hold("Brann")
        one = self.start()
        await self.serving(one, "Ada")
        two = self.start()
        await self.let_go("Brann")
        await self.serving(two, "Brann")
        return one, two

    async def serving(self, daemon: Daemon, name: str, timeout: float = 30) -> None:
        def serves() -> bool:
            return any(rt.character.name == name and rt.get_service("telegram") for rt in daemon.runtimes)

        await until(serves, timeout=timeout)

    async def stop(self, daemon: Daemon) -> None:
        task = next(t for d, t in self.running if d is daemon)
        self.running = [(d, t) for d, t in self.running if d is not daemon]
        daemon.stop()
        assert await asyncio.wait_for(task, 60) == 0


@pytest.fixture
async def cluster(tmp_path: Path, postgres_url: str) -> AsyncIterator[Cluster]:
    async with FakeTelegram() as fake, FakeOpenAIServer() as openai, PostgresDatabase(postgres_url) as db:
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-relay-0000", "OPENAI_BASE_URL": openai.url}
        ada = fake.add_bot("7101:token-ada", username="ada_bot", first_name="Ada")
        brann = fake.add_bot("7102:token-brann", username="brann_bot", first_name="Brann")
        sam = fake.add_user("Sam", username="samr")
        group = fake.add_group("Writers' Room", members=[sam, ada, brann], supergroup=True)
        paths = [character(tmp_path, b.first_name, b.token, fake.url, MAX_BOT_TURNS="2") for b in (ada, brann)]
        made = Cluster(fake, brain, ada, brann, sam, group, db, tmp_path, environ, paths, postgres_url)
        try:
            yield made
        finally:
            for daemon, _ in list(made.running):
                await made.stop(daemon)


async def test_characters_of_two_daemons_talk_through_the_relay_until_the_loop_guard(cluster) -> None:
    c = cluster
    one, two = await c.placed_apart()
    assert one.shared.bus.spans_daemons and two.shared.bus is not one.shared.bus
    c.brain.plans["Ada"] += [plan("@brann_bot, what do you think?"), plan("@brann_bot, really?"), plan("more")]
    c.brain.plans["Brann"] += [plan("@ada_bot I think it works."), plan("@ada_bot truly."), plan("more")]
    await c.fake.user_says(c.sam, c.group, "@ada_bot ask the captain about the ending")
    await c.fake.wait_for_sent(c.ada, 2, timeout=60)
    await asyncio.sleep(1.5)  # a third bot turn, or a second answer, would come now
    # Ada, Brann, Ada: then Brann sees three bot turns in a row (MAX_BOT_TURNS=2) and stays quiet.
    assert [m["text"] for m in c.ada.sent] == ["@brann_bot, what do you think?", "@brann_bot, really?"]
    assert [m["text"] for m in c.brann.sent] == ["@ada_bot I think it works."]
    assert c.brann.sent[0]["reply_to"] == c.ada.sent[0]["message"]["message_id"]  # it answered what Ada said
    brann = next(rt for rt in two.runtimes if rt.character.name == "Brann")
    heard = [m.content.text for m in await brann.store.get_memories(table="messages", count=10)]
    assert "@brann_bot, really?" in heard  # heard, and silenced by the loop guard


async def test_a_character_that_starts_serving_hears_once_what_it_missed(cluster, monkeypatch) -> None:
    # A daemon's first read of the bus reaches GRACE_S back, which would hand Brann Ada's words
    # too: here only the catch-up may.
    monkeypatch.setattr(_bus, "GRACE_S", 0.0)
    c = cluster
    await c.hold("Brann")
    one = c.start()
    await c.serving(one, "Ada")
    c.brain.plans["Ada"] += [plan("@brann_bot, are you there?")]
    c.brain.plans["Brann"] += [plan("@ada_bot I am now."), plan("@ada_bot twice?")]
    await c.fake.user_says(c.sam, c.group, "@ada_bot call your colleague")
    await c.fake.wait_for_sent(c.ada, 1)
    await asyncio.sleep(0.5)
    assert c.brann.sent == []  # nobody serves Brann yet
    # Brann's daemon starts: it catches up on what Ada said.
    two = c.start()
    await c.let_go("Brann")
    await c.serving(two, "Brann")
    assert [m["text"] for m in await c.fake.wait_for_sent(c.brann, 1, timeout=60)] == ["@ada_bot I am now."]
    assert c.brann.sent[0]["reply_to"] == c.ada.sent[0]["message"]["message_id"]
    # Brann moves to the first daemon: what Ada said is caught up on again, and recognised as answered.
    await c.stop(two)
    await c.serving(one, "Brann")
    await asyncio.sleep(2)
    assert [m["text"] for m in c.brann.sent] == ["@ada_bot I am now."]


async def test_a_character_muted_on_one_daemon_stays_muted_on_the_daemon_it_moves_to(cluster) -> None:
    c = cluster
    one, two = await c.placed_apart()
    c.brain.plans["Brann"] += [plan("Going quiet.", "REPLY,MUTE_ROOM"), plan("Back for you, Sam.")]
    c.brain.decisions["Brann"] += ["RESPOND", "RESPOND"]  # it would answer, were it not muted
    await c.fake.user_says(c.sam, c.group, "@brann_bot be quiet in here")
    await c.fake.wait_for_sent(c.brann, 1)
    brann = next(rt for rt in two.runtimes if rt.character.name == "Brann")
    group_room = room_id(brann.agent_id, c.group.id)
    async with asyncio.timeout(60):
        while await brann.store.get_participant_state(group_room, brann.agent_id) is not RoomState.MUTED:
            await asyncio.sleep(0.02)
    # Brann moves to the first daemon (its daemon stops): the state was in the database, not in the daemon.
    await c.stop(two)
    await c.serving(one, "Brann")
    moved = next(rt for rt in one.runtimes if rt.character.name == "Brann")
    assert await moved.store.get_participant_state(group_room, moved.agent_id) is RoomState.MUTED
    await c.fake.user_says(c.sam, c.group, "so anyway, the ending")
    await asyncio.sleep(1.0)
    assert len(c.brann.sent) == 1
    assert c.brain.decisions["Brann"] == ["RESPOND", "RESPOND"]  # muted: its small model was not even asked
    await c.fake.user_says(c.sam, c.group, "Brann, what do you say?")
    assert (await c.fake.wait_for_sent(c.brann, 2, timeout=60))[1]["text"] == "Back for you, Sam."


async def test_the_relay_keeps_nothing_of_the_people_in_the_chat_and_still_says_who_answered_whom(cluster) -> None:
    c = cluster
    await c.placed_apart()
    c.brain.plans["Brann"] += [plan("Brann, at your service."), plan("Likewise, Ada.")]
    # Ada stays out of what Sam asks Brann, and answers Brann. She may hear Sam's message (polled)
    # before or after Brann's answer (relayed), and decide on each: which one comes first depends
    # on how fast Brann answers, so her small model answers by what it is asked about.
    c.brain.deciders["Ada"] = lambda prompt: (
        "RESPOND" if "# Received Message\nBrann: Brann, at your service." in prompt else "IGNORE"
    )
    c.brain.plans["Ada"] += [plan("Nice to meet you.")]
    await c.fake.user_says(c.sam, c.group, "@brann_bot my turnip secret is the frost; who are you?")
    # Ada hears Brann's answer (to Sam) and answers it; Brann hears that Ada answered *it*.
    said = await c.fake.wait_for_sent(c.brann, 2, timeout=60)
    assert [m["text"] for m in said] == ["Brann, at your service.", "Likewise, Ada."]
    assert c.ada.sent[0]["reply_to"] == said[0]["message"]["message_id"]
    # What the bus holds (for minutes) has the characters' words, and nothing of Sam: `troupe
    # memory forget` of a person does not look there.
    payloads = [r["payload"] for r in await c.db.fetchall("SELECT payload FROM bus_posts ORDER BY id")]
    assert any("Brann, at your service." in p for p in payloads) and any("Nice to meet you." in p for p in payloads)
    assert not [p for p in payloads if "turnip" in p or "Sam" in p or "samr" in p or f'"id": {c.sam.id}' in p]
