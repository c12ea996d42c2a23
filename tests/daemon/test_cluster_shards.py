"""Discord across daemons: two daemons on one PostgreSQL serve one character split into three
shards, each daemon connecting the shards it holds; every message (in a server on each shard,
and in private) is answered once, and when one daemon stops, its shards move to the other and
are still answered once. What is said while a character moves is read back by the daemon that
takes it over."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from bot.cluster.placement import split_unit
from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.links import LinkState

from ..fakes.discord_server import FakeDiscord
from ..fakes.openai_server import FakeOpenAIServer
from ..platforms.discord.scene import Brain, character, plan, until
from ..platforms.discord.test_shards import COUNT, IdentifyGate, guilds_on_every_shard, identify_gate

__all__ = ["identify_gate"]  # the fixture, used here by name

LEASE_S = 3.0


def shards_served(daemon: Daemon) -> set[int]:
    """The Discord shards of the character ``daemon`` serves now (its own unit carries shard 0)."""
    placement = daemon.placement
    assert placement is not None
    return {split_unit(unit)[1] or 0 for unit in placement.units if placement.lease_of(unit) is not None}


async def test_two_daemons_split_a_sharded_character_and_one_takes_all_when_the_other_stops(
    tmp_path: Path, postgres_url: str, identify_gate: object
) -> None:
    async with FakeDiscord() as fake, FakeOpenAIServer() as openai:
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        ada, sam = fake.add_bot("token-ada", "Ada"), fake.add_user("sam", global_name="Sam")
        ada.shards = COUNT
        guilds = guilds_on_every_shard(fake, sam, ada)
        channels = [fake.add_channel(g, "general") for g in guilds]
        path = character(tmp_path, "Ada", "token-ada", fake.api_base, DISCORD_SHARD_COUNT=str(COUNT))

        def answers() -> Counter[int]:
            return Counter(m.reference.id for m in ada.sent if m.reference is not None)

        async def ask_everywhere(text: str) -> None:
            asked = [await fake.user_says(sam, ch, f"{ada.mention} {text}") for ch in channels]
            asked.append(await fake.dm(sam, ada, text))
            await until(lambda: all(answers()[m.id] >= 1 for m in asked), timeout=60)
            await asyncio.sleep(0.5)  # room for a second answer that must not come
            assert [answers()[m.id] for m in asked] == [1] * len(asked)

        def start(n: int) -> tuple[Daemon, asyncio.Task[int]]:
            settings = DaemonSettings(
                data_dir=tmp_path / f"data-{n}",
                database_url=postgres_url,
                lease_s=LEASE_S,
                stop_timeout_s=3,
                control_socket=tmp_path / f"control-{n}.sock",
            )
            daemon = Daemon(settings, [load_character(path, environ=environ)], environ)
            return daemon, asyncio.create_task(daemon.run())

        first, first_run = start(0)
        await until(lambda: first.placement is not None and shards_served(first) == {0, 1, 2}, timeout=60)
        second, second_run = start(1)
        try:
            # Three units (the character with shard 0, shards 1 and 2) over two daemons: 2 and 1.
            await until(
                lambda: (
                    second.placement is not None
                    and len(shards_served(first)) + len(shards_served(second)) == COUNT
                    and sorted([len(shards_served(first)), len(shards_served(second))]) == [1, 2]
                ),
                timeout=30,
            )
            assert shards_served(first).isdisjoint(shards_served(second))
            # One home (its stored tasks, knowledge sync): the daemon holding the character itself.
            # (The character's own unit may still be moving: its runtime restarts at home.)
            await until(lambda: sorted(rt.home for rt in first.runtimes + second.runtimes) == [False, True], timeout=60)
            connected = {tuple(i["shard"]) for i in ada.identifies if i.get("shard")}
            assert {(k, COUNT) for k in range(COUNT)} <= connected
            await until(lambda: all(rt.links.get("discord") for rt in first.runtimes + second.runtimes), timeout=60)
            await asyncio.sleep(1)  # the reshard's new connection is READY
            await ask_everywhere("hello, split")

            first.stop()  # graceful: its units are handed over to the other daemon
            assert await asyncio.wait_for(first_run, 30) == 0
            await until(lambda: shards_served(second) == {0, 1, 2}, timeout=30)
            await asyncio.sleep(1)
            await ask_everywhere("hello, together")
        finally:
            for daemon, run in ((first, first_run), (second, second_run)):
                if not run.done():
                    daemon.stop()
                    await asyncio.wait_for(run, 30)


async def test_what_was_said_while_a_character_moved_between_daemons_is_read_back_and_answered_once(
    tmp_path: Path, postgres_url: str, identify_gate: IdentifyGate
) -> None:
    """Discord does not replay what a bot missed while nobody was connected as it: the daemon
    that takes a character over reads back where the store ends (unsharded, too)."""
    async with FakeDiscord() as fake, FakeOpenAIServer() as openai:
        openai.script_chat(lambda body: plan("Here I am."))
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        bo, sam = fake.add_bot("token-bo", "Bo"), fake.add_user("sam", global_name="Sam")
        channel = fake.add_channel(fake.add_guild("Writers", owner=sam, members=[bo]), "general")
        path = character(tmp_path, "Bo", "token-bo", fake.api_base)
        runs: list[tuple[Daemon, asyncio.Task[int]]] = []

        def answers() -> Counter[int]:
            return Counter(m.reference.id for m in bo.sent if m.reference is not None)

        def holder() -> int | None:
            for n, (daemon, _run) in enumerate(runs):
                if daemon.runtimes and daemon.runtimes[0].links.get("discord"):
                    link = daemon.runtimes[0].links.get("discord")
                    if link is not None and link.state is LinkState.CONNECTED:
                        return n
            return None

        for n in range(2):
            settings = DaemonSettings(
                data_dir=tmp_path / f"data-{n}", database_url=postgres_url, lease_s=LEASE_S, stop_timeout_s=3
            )
            daemon = Daemon(settings, [load_character(path, environ=environ)], environ)
            runs.append((daemon, asyncio.create_task(daemon.run())))
            await until(lambda: holder() is not None, timeout=30)
        try:
            await asyncio.sleep(LEASE_S)  # placement settles: one of them serves Bo
            await until(lambda: holder() is not None, timeout=30)
            first = holder()
            assert first is not None
            said = await fake.user_says(sam, channel, f"{bo.mention} before the move")
            await until(lambda: answers()[said.id] == 1, timeout=60)

            identify_gate.close()  # the next connection as Bo waits: what is said meanwhile is missed live
            runs[first][0].stop()
            assert await asyncio.wait_for(runs[first][1], 30) == 0
            other = 1 - first
            await until(lambda: runs[other][0].runtimes, timeout=30)  # it took Bo over, and is connecting
            gap = await fake.user_says(sam, channel, f"{bo.mention} said while nobody was Bo")
            identify_gate.open()
            await until(lambda: answers()[gap.id] >= 1, timeout=30)
            await asyncio.sleep(0.5)
            assert (answers()[said.id], answers()[gap.id]) == (1, 1)
        finally:
            for daemon, run in runs:
                if not run.done():
                    daemon.stop()
                    await asyncio.wait_for(run, 30)
