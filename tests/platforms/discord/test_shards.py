"""A Discord bot split into shards: each connection hears only the servers of the shards it
holds, two daemons' runtimes of one character split them and answer every message once, shards
move between them without a message lost or answered twice, and Discord's "sharding required"
(4011) and "invalid shard" (4010) become errors that say what to set."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import bot.runtime.adapters
from bot.config.character import load_character
from bot.config.shards import Reshardable, Shards
from bot.daemon.chat import runtime_plugins
from bot.kernel.errors import ConfigError
from bot.kernel.links import LinkState
from bot.runtime.agent import AgentRuntime
from bot.runtime.events import PlatformConnected, RunEnded
from bot.runtime.shared import Shared
from bot.store import StoreBackend, backend_for
from platforms.discord import connect
from platforms.discord._adapter import DiscordAdapter
from platforms.discord._client import Client
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import FakeBot, FakeChannel, FakeDiscord, FakeGuild, FakeMessage, FakeUser
from ...fakes.openai_server import FakeOpenAIServer
from .scene import Brain, Scene, character, until

COUNT = 3


class IdentifyGate:
    """discord.py waits 5 s before every IDENTIFY but a client's first (Discord's rate limit);
    tests need not. ``close()`` holds every IDENTIFY until ``open()``: the window in which a
    connection is away."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.opened.set()

    def close(self) -> None:
        self.opened.clear()

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def identify_gate(monkeypatch: pytest.MonkeyPatch) -> IdentifyGate:
    gate = IdentifyGate()

    async def before_identify_hook(self: Any, shard_id: int | None, *, initial: bool = False) -> None:
        await gate.opened.wait()

    monkeypatch.setattr(Client, "before_identify_hook", before_identify_hook)
    return gate


def shard_of(guild: FakeGuild) -> int:
    return (guild.id >> 22) % COUNT


def guilds_on_every_shard(fake: FakeDiscord, owner: FakeUser, bot: FakeBot) -> list[FakeGuild]:
    """One server per shard (Discord routes by the snowflake's timestamp), index = shard; built
    before any bot connects."""
    guilds: dict[int, FakeGuild] = {}
    while len(guilds) < COUNT:
        guild = fake.add_guild(f"Server {len(fake.guilds)}", owner=owner, members=[bot])
        if shard_of(guild) in guilds:
            del fake.guilds[guild.id]  # not needed: nobody is connected yet to have heard of it
        else:
            guilds[shard_of(guild)] = guild
    return [guilds[k] for k in range(COUNT)]


@dataclass
class Daemonlet:
    """Ada's runtime as one daemon runs it: its own Shared, the troupe's one database."""

    runtime: AgentRuntime
    handled: list[tuple[str, str]] = field(default_factory=list)
    """(message id, outcome) of every message this runtime handled."""

    @property
    def adapter(self) -> DiscordAdapter:
        adapter = self.runtime.get_service("discord")
        assert isinstance(adapter, DiscordAdapter)
        return adapter

    def outcome(self, message: FakeMessage) -> list[str]:
        memory_id = discord_id(self.runtime.agent_id, message.id)
        return [status for handled, status in self.handled if handled == memory_id]


@dataclass
class World:
    fake: FakeDiscord
    openai: FakeOpenAIServer
    ada: FakeBot
    sam: FakeUser
    guilds: list[FakeGuild]
    channels: list[FakeChannel]
    start: Callable[[Shards | None], Awaitable[Daemonlet]]

    async def two_daemons(self) -> tuple[Daemonlet, Daemonlet]:
        """A with shards 0 and 2 (and so the DMs), B with shard 1."""
        return await self.start(Shards(COUNT, (0, 2))), await self.start(Shards(COUNT, (1,)))

    def answers(self) -> Counter[int]:
        """How many replies each message got from Ada (whichever runtime sent them)."""
        return Counter(m.reference.id for m in self.ada.sent if m.reference is not None)

    async def ask(self, shard: int | None, text: str) -> FakeMessage:
        """Ask Ada something in the server on ``shard``, or in a DM (``None``)."""
        if shard is None:
            return await self.fake.dm(self.sam, self.ada, text)
        return await self.fake.user_says(self.sam, self.channels[shard], f"{self.ada.mention} {text}")

    async def answered_once(self, *messages: FakeMessage) -> None:
        await until(lambda: all(self.answers()[m.id] >= 1 for m in messages), timeout=60)
        await asyncio.sleep(0.3)  # room for a second answer that must not come
        assert [self.answers()[m.id] for m in messages] == [1] * len(messages)


@asynccontextmanager
async def sharded_world(tmp_path: Path) -> AsyncIterator[World]:
    """Ada with DISCORD_SHARD_COUNT=3, in a server on each shard; ``start(shards)`` runs one more
    runtime of hers on the same database, connected with ``shards``, as another daemon would."""
    async with AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeDiscord())
        openai = await stack.enter_async_context(FakeOpenAIServer())
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        ada, sam = fake.add_bot("token-ada", "Ada"), fake.add_user("sam", global_name="Sam")
        guilds = guilds_on_every_shard(fake, sam, ada)
        channels = [fake.add_channel(g, "general") for g in guilds]
        path = character(tmp_path, "Ada", "token-ada", fake.api_base, DISCORD_SHARD_COUNT=str(COUNT))
        result = load_character(path, environ=environ)
        db: StoreBackend = backend_for(tmp_path / "troupe.db")
        await db.open()
        stack.push_async_callback(db.close)

        async def start(shards: Shards | None) -> Daemonlet:
            agent = result.raise_for_problems()
            runtime = AgentRuntime(
                agent,
                db.for_agent(agent.agent_id),
                environ=environ,
                plugins=runtime_plugins(result),
                shared=Shared(),  # another daemon's
            )
            daemonlet = Daemonlet(runtime)

            async def ended(event: RunEnded) -> None:
                daemonlet.handled.append((event.message_id, event.status))

            runtime.on(RunEnded, ended)
            await runtime.start()
            stack.push_async_callback(runtime.close)
            await connect(runtime, shards=shards)
            await runtime.emit(PlatformConnected(source="discord"))  # as the daemon does
            return daemonlet

        yield World(fake, openai, ada, sam, guilds, channels, start)


def history_reads(w: World) -> set[int]:
    """The channels whose history was read (catching up)."""
    paths = {r.path for r in w.fake.requests if r.method == "GET" and r.path.endswith("/messages")}
    return {int(p.split("/")[2]) for p in paths}


def identified_shards(bot: FakeBot) -> list[list[int] | None]:
    return [i.get("shard") for i in bot.identifies]


async def test_two_daemons_split_the_shards_and_each_message_is_answered_once_by_the_holder_of_its_shard(
    tmp_path, identify_gate
) -> None:
    async with sharded_world(tmp_path) as w:
        a, b = await w.two_daemons()
        assert sorted(identified_shards(w.ada)) == [[0, 3], [1, 3], [2, 3]]  # type: ignore[type-var]
        assert isinstance(a.adapter, Reshardable)  # what the daemon moves between shard sets
        client = a.adapter.client
        assert client is not None and {g.id for g in client.guilds} == {w.guilds[0].id, w.guilds[2].id}

        asked = [await w.ask(k, f"hello on shard {k}") for k in range(COUNT)]
        in_dm = await w.ask(None, "hello in private")
        await w.answered_once(*asked, in_dm)

        assert [a.outcome(m) for m in (asked[0], asked[2], in_dm)] == [["replied"]] * 3  # DMs go to shard 0
        assert b.outcome(asked[1]) == ["replied"]
        assert len(a.handled) == 3 and len(b.handled) == 1


async def test_a_shard_moved_to_the_other_daemon_is_answered_there_with_nothing_lost_or_answered_twice(
    tmp_path, identify_gate
) -> None:
    async with sharded_world(tmp_path) as w:
        a, b = await w.two_daemons()
        before = [await w.ask(k, "before the move") for k in range(COUNT)]
        await w.answered_once(*before)

        # Shard 2 moves from A to B: A lets it go first, then B takes it (what placement does).
        await a.adapter.reshard(Shards(COUNT, (0,)))
        await until(lambda: history_reads(w) == {w.channels[0].id})  # A reads back only what it still holds
        unheld = await w.ask(2, "said while nobody holds shard 2")
        identify_gate.close()  # B's new connection waits: what is said meanwhile is missed live
        dialled = w.fake.gateway_connections
        moving = asyncio.create_task(b.adapter.reshard(Shards(COUNT, (1, 2))))
        await until(lambda: w.fake.gateway_connections > dialled)  # the old connection is closed by then
        meanwhile = await w.ask(1, "said while B reconnects")
        identify_gate.open()
        await moving

        after = [await w.ask(k, "after the move") for k in range(COUNT)]
        await w.answered_once(*before, unheld, meanwhile, *after)
        assert b.outcome(after[2]) == ["replied"] and a.outcome(after[2]) == []
        assert b.outcome(meanwhile) == ["replied"]  # read back when B was connected again
        assert b.outcome(unheld) == ["replied"]  # B read shard 2's server back from where the store ends
        assert a.outcome(after[0]) == ["replied"] and b.outcome(after[1]) == ["replied"]
        assert [i["shard"] for i in w.ada.identifies[-2:]] == [[1, 3], [2, 3]]
        assert a.adapter.shards == Shards(COUNT, (0,)) and b.adapter.shards == Shards(COUNT, (1, 2))
        link = b.runtime.links.get("discord")
        assert link is not None and link.state is LinkState.CONNECTED


async def test_the_first_words_said_in_a_channel_while_no_one_held_its_shard_are_read_back_by_the_next_holder(
    tmp_path, identify_gate
) -> None:
    async with sharded_world(tmp_path) as w:
        quiet = w.fake.add_channel(w.guilds[2], "quiet")  # nothing was ever said (or stored) there
        a = await w.start(Shards.all(COUNT))  # notes since when it listens on each shard
        await a.adapter.reshard(Shards(COUNT, (0, 1)))  # lets shard 2 go
        unheld = await w.fake.user_says(w.sam, quiet, f"{w.ada.mention} anyone here?")
        b = await w.start(Shards(COUNT, (2,)))  # the store has nothing of that channel: A's mark says where to read
        await w.answered_once(unheld)
        assert b.outcome(unheld) == ["replied"] and a.outcome(unheld) == []


async def test_a_shard_no_one_ever_listened_on_reads_nothing_back(tmp_path, identify_gate) -> None:
    async with sharded_world(tmp_path) as w:
        before = await w.ask(2, "said before Ada ever connected")
        b = await w.start(Shards(COUNT, (2,)))
        after = await w.ask(2, "said once connected")
        await w.answered_once(after)
        assert w.answers()[before.id] == 0 and b.outcome(before) == []
        assert history_reads(w) == set()


async def test_a_reply_being_written_when_its_shard_moves_away_still_goes_out_once(tmp_path, identify_gate) -> None:
    async with sharded_world(tmp_path) as w:
        a, b = await w.two_daemons()
        w.openai.latency = 0.5
        asked = await w.ask(2, "a slow question")
        await until(lambda: w.openai.requests_for("chat"))
        await a.adapter.reshard(Shards(COUNT, (0,)))  # waits for the reply being written
        assert w.answers()[asked.id] == 1 and a.outcome(asked) == ["replied"]
        w.openai.latency = 0.0
        await b.adapter.reshard(Shards(COUNT, (1, 2)))
        await w.answered_once(asked)
        assert b.outcome(asked) == []


async def test_a_reply_cut_short_by_the_move_is_answered_once_by_the_new_holder_of_the_shard(
    tmp_path, identify_gate, monkeypatch
) -> None:
    monkeypatch.setattr(bot.runtime.adapters, "_DRAIN_TIMEOUT_S", 0.2)  # how long a move waits for replies
    async with sharded_world(tmp_path) as w:
        a, b = await w.two_daemons()
        w.openai.latency = 30.0
        asked = await w.ask(2, "a very slow question")
        await until(lambda: w.openai.requests_for("chat"))
        await a.adapter.reshard(Shards(COUNT, (0,)))
        assert w.answers()[asked.id] == 0 and a.outcome(asked) == []  # cut short: still claimed
        w.openai.latency = 0.0
        await b.adapter.reshard(Shards(COUNT, (1, 2)))  # its recovery takes the message up
        await w.answered_once(asked)
        assert b.outcome(asked) == ["replied"]


async def test_what_one_shard_missed_while_its_session_was_lost_is_read_back_and_answered_once(
    tmp_path, identify_gate
) -> None:
    async with sharded_world(tmp_path) as w:
        a = await w.start(Shards.all(COUNT))
        before = [await w.ask(k, "before") for k in range(COUNT)]
        await w.answered_once(*before)

        identify_gate.close()
        await w.fake.invalidate_session(w.ada, shard=1)  # not resumable: shard 1 identifies again
        missed = await w.ask(1, "said while shard 1 was away")
        live = await w.ask(0, "said meanwhile on shard 0")  # the other shards carry on
        identify_gate.open()

        await w.answered_once(missed, live)
        assert a.outcome(missed) == ["replied"] and a.outcome(live) == ["replied"]
        assert history_reads(w) == {w.channels[1].id}  # only the shard that was away reads back
        assert [i["shard"] for i in w.ada.identifies[COUNT:]] == [[1, 3]]


async def test_a_move_discord_refuses_fails_the_link_and_a_later_move_connects_again(tmp_path, identify_gate) -> None:
    async with sharded_world(tmp_path) as w:
        a = await w.start(Shards.all(COUNT))
        w.ada.shards = COUNT  # Discord insists on 3 shards: a move to 2 is refused
        with pytest.raises(ConfigError, match="for 2 shards: set DISCORD_SHARD_COUNT to at least 3"):
            await a.adapter.reshard(Shards.all(2))
        link = a.runtime.links.get("discord")
        assert link is not None and link.state is LinkState.FAILED and "at least 3" in link.detail
        await a.adapter.reshard(Shards.all(COUNT))
        link = a.runtime.links.get("discord")
        assert link is not None and link.state is LinkState.CONNECTED
        asked = await w.ask(1, "still there?")
        await w.answered_once(asked)


async def test_resharding_to_the_shards_held_changes_nothing_and_a_closed_adapter_refuses(
    tmp_path, identify_gate
) -> None:
    async with sharded_world(tmp_path) as w:
        a = await w.start(Shards(COUNT, (0, 1, 2)))
        identifies = len(w.ada.identifies)
        await a.adapter.reshard(Shards(COUNT, (0, 1, 2)))
        assert len(w.ada.identifies) == identifies
        adapter = a.adapter
        await adapter.close()
        with pytest.raises(RuntimeError, match="Ada: the Discord connection is closed; it cannot move shards"):
            await adapter.reshard(Shards(COUNT, (0,)))


# -- through the daemon ---------------------------------------------------------------------


def guild_on_shard(s: Scene, shard: int) -> FakeGuild:
    while True:
        guild = s.fake.add_guild("Another", owner=s.sam, members=[s.ada])
        if shard_of(guild) == shard:
            return guild
        del s.fake.guilds[guild.id]


async def test_one_daemon_serves_every_shard_of_a_character_that_sets_a_shard_count(scene, identify_gate) -> None:
    s = scene
    far = guild_on_shard(s, 2)
    far_channel = s.fake.add_channel(far, "general")
    await s.start({"DISCORD_SHARD_COUNT": "3"}, with_brann=False)
    await until(lambda: len(s.ada.identifies) == 3)
    assert [i["shard"] for i in s.ada.identifies] == [[0, 3], [1, 3], [2, 3]]
    asked = [await s.fake.user_says(s.sam, channel, f"{s.ada.mention} hi") for channel in (s.general, far_channel)]
    await until(lambda: len(s.ada.sent) == 2, timeout=60)
    assert sorted(m.reference.id for m in s.ada.sent if m.reference) == sorted(m.id for m in asked)


async def test_an_unsharded_character_identifies_without_shards(scene) -> None:
    await scene.start(with_brann=False)
    assert [i.get("shard") for i in scene.ada.identifies] == [None]
    assert scene.runtime("Ada").get_service("discord").shards is None


async def failed(s: Scene) -> None:
    """Wait until Ada's Discord link has failed."""

    def state() -> LinkState | None:
        runtime = next((rt for rt in s.daemon.runtimes if rt.character.name == "Ada"), None) if s.daemon else None
        link = runtime.links.get("discord") if runtime else None
        return link.state if link else None

    await until(lambda: state() is LinkState.FAILED, timeout=60)


async def test_a_bad_shard_count_fails_the_connection_with_what_to_write(scene) -> None:
    s = scene
    await s.start({"DISCORD_SHARD_COUNT": "lots"}, wait=False)  # Brann keeps the daemon running
    await failed(s)
    assert s.runtime("Ada").links.get("discord").detail == (
        "DISCORD_SHARD_COUNT must be a whole number from 1 to 1000, not 'lots'"
    )
    assert s.ada.identifies == []


async def test_discord_requiring_shards_at_start_says_how_many_to_set(scene) -> None:
    s = scene
    s.ada.shards = 4  # Discord: the bot is in too many servers for one connection
    await s.start(wait=False)
    await failed(s)
    assert s.runtime("Ada").links.get("discord").detail == (
        "the bot is in too many Discord servers for one connection: set DISCORD_SHARD_COUNT to at least 4 "
        "in the character's settings (Discord requires a shard per 2,500 servers at most)"
    )
    assert s.ada.gateway_closes == [4011]


async def test_too_few_shards_say_how_many_discord_requires(tmp_path, identify_gate) -> None:
    async with sharded_world(tmp_path) as w:
        w.ada.shards = 5
        with pytest.raises(
            ConfigError,
            match=r"^Ada: the bot is in too many Discord servers for 3 shards: set DISCORD_SHARD_COUNT to at least 5 ",
        ):
            await w.start(Shards(COUNT, (0, 1, 2)))


async def test_discord_refusing_the_connection_later_fails_the_link_with_the_reason(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    caplog.set_level(logging.ERROR)
    s.ada.shards = 2  # the bot outgrew one connection while running
    await s.fake.drop_gateway(s.ada, code=4011)
    runtime = s.runtime("Ada")
    await until(lambda: runtime.links.get("discord").state is LinkState.FAILED, timeout=60)
    assert runtime.links.get("discord").detail.startswith(
        "the bot is in too many Discord servers for one connection: set DISCORD_SHARD_COUNT to at least 2"
    )
    assert "Ada: Discord closed the connection: the bot is in too many Discord servers" in caplog.text
    assert "Traceback" not in caplog.text


async def test_an_invalid_shard_says_that_every_daemon_must_read_the_same_shard_count(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.drop_gateway(s.ada, code=4010)
    runtime = s.runtime("Ada")
    await until(lambda: runtime.links.get("discord").state is LinkState.FAILED, timeout=60)
    assert runtime.links.get("discord").detail == (
        "Discord refused the shard ids this daemon connected with (close code 4010, invalid shard); "
        "every daemon serving the character must read the same DISCORD_SHARD_COUNT"
    )
