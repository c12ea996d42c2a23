"""End to end on Discord: messages sent while the gateway session was lost for good are read back
after the bot identifies again and answered once; a resumed session reads nothing back."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections import Counter
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import Memory, now_ms
from platforms.discord._catchup import CatchUpLimits, MissedMessages
from platforms.discord._client import Client
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import FakeChannel, FakeMessage, RecordedRequest
from .scene import Scene, plan, until


@pytest.fixture
def identify_gate(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Holds every IDENTIFY after the first until set: the window in which the bot is away.

    (discord.py's own hook sleeps 5 s there, as Discord asks; the gate makes the gap explicit.)"""
    gate = asyncio.Event()

    async def before_identify_hook(self: Any, shard_id: int | None, *, initial: bool = False) -> None:
        if not initial:
            await gate.wait()

    monkeypatch.setattr(Client, "before_identify_hook", before_identify_hook)
    return gate


def history_reads(s: Scene, channel: FakeChannel | None = None) -> list[RecordedRequest]:
    return [
        r
        for r in s.fake.requests
        if r.method == "GET"
        and r.path.endswith("/messages")
        and (channel is None or r.path == f"/channels/{channel.id}/messages")
    ]


def answered(s: Scene) -> Counter[int]:
    """How many replies each message got from Ada, by message id."""
    return Counter(m.reference.id for m in s.ada.sent if m.reference is not None)


async def talk_before_the_loss(s: Scene, channel: FakeChannel, text: str) -> FakeMessage:
    asked = await s.fake.user_says(s.sam, channel, f"{s.ada.mention} {text}")
    await until(lambda: answered(s)[asked.id] == 1)
    # Ada's client has seen its own reply too before the session goes.
    await asyncio.sleep(0.1)
    return asked


async def test_messages_sent_while_the_session_was_lost_are_answered_once_after_identifying_again(
    scene, identify_gate
) -> None:
    s = scene
    await s.start(with_brann=False)
    before = await talk_before_the_loss(s, s.general, "one")

    await s.fake.invalidate_session(s.ada)  # not resumable: discord.py identifies again
    missed = [await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} missed {n}") for n in range(3)]
    identify_gate.set()

    await until(lambda: sum(answered(s).values()) == 4, timeout=60)
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} and live again")
    await until(lambda: sum(answered(s).values()) == 5)
    await asyncio.sleep(0.3)  # room for a reply that should not come
    counts = answered(s)
    assert [counts[m.id] for m in [before, *missed]] == [1, 1, 1, 1] and sum(counts.values()) == 5
    assert len(s.ada.identifies) == 2
    reads = history_reads(s)
    assert [r.path for r in reads] == [f"/channels/{s.general.id}/messages"]  # the one channel Ada was active in
    assert int(reads[0].query["after"]) >= before.id and reads[0].query["limit"] == "50"


async def test_the_first_words_said_during_the_gap_in_a_channel_quiet_until_then_are_answered(
    scene, identify_gate
) -> None:
    s = scene
    await s.start(with_brann=False)
    await talk_before_the_loss(s, s.general, "one")  # the lounge stays quiet: this run saw nothing there

    await s.fake.invalidate_session(s.ada)
    first = await s.fake.user_says(s.sam, s.lounge, f"{s.ada.mention} anyone in the lounge?")
    identify_gate.set()

    await until(lambda: answered(s)[first.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert answered(s)[first.id] == 1
    lounge = history_reads(s, s.lounge)
    assert len(lounge) == 1 and int(lounge[0].query["after"]) < first.id


async def test_the_catch_up_reads_only_the_window_the_count_and_the_most_recent_channels(scene, identify_gate) -> None:
    s = scene
    await s.start(
        {"DISCORD_CATCHUP_WINDOW_S": "3", "DISCORD_CATCHUP_MAX_MESSAGES": "2", "DISCORD_CATCHUP_MAX_CHANNELS": "1"},
        with_brann=False,
    )
    await talk_before_the_loss(s, s.lounge, "in the lounge")
    await talk_before_the_loss(s, s.general, "in general")  # general is the most recently active

    await s.fake.invalidate_session(s.ada)
    too_old = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} long ago")
    in_lounge = await s.fake.user_says(s.sam, s.lounge, f"{s.ada.mention} over here")
    await asyncio.sleep(3.5)
    recent = [await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} recent {n}") for n in range(3)]
    identify_gate.set()

    await until(lambda: sum(answered(s).values()) == 4, timeout=60)
    await asyncio.sleep(0.3)
    counts = answered(s)
    assert [counts[m.id] for m in recent] == [1, 1, 0]  # the first two after the bound; the third is over it
    assert counts[too_old.id] == 0 and counts[in_lounge.id] == 0
    reads = history_reads(s)
    assert [r.path for r in reads] == [f"/channels/{s.general.id}/messages"]  # one channel at most
    assert too_old.id < int(reads[0].query["after"]) < recent[0].id and reads[0].query["limit"] == "2"


async def test_a_channel_that_cannot_be_read_is_skipped_with_a_log_line(scene, identify_gate, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    await talk_before_the_loss(s, s.lounge, "in the lounge")
    await talk_before_the_loss(s, s.general, "in general")
    s.fake.fail_next("GET", rf"/channels/{s.general.id}/messages$", status=403, code=50001, message="Missing Access")

    await s.fake.invalidate_session(s.ada)
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} can you see this?")
    in_lounge = await s.fake.user_says(s.sam, s.lounge, f"{s.ada.mention} over here")
    with caplog.at_level(logging.WARNING):
        identify_gate.set()
        await until(lambda: answered(s)[in_lounge.id] == 1, timeout=60)
    assert f"Ada: could not read the messages missed in channel {s.general.id}: 403 Missing Access" in caplog.text
    assert sum(answered(s).values()) == 3


async def test_a_resumed_session_reads_nothing_back(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Before."), plan("Replayed.")]
    await talk_before_the_loss(s, s.general, "one")
    await s.fake.drop_gateway(s.ada)  # resumable: Discord replays what the session missed
    during = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} during the gap")
    await until(lambda: answered(s)[during.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert len(s.ada.resumes) == 1 and len(s.ada.identifies) == 1
    assert sum(answered(s).values()) == 2 and history_reads(s) == []


async def test_a_missed_message_already_in_the_store_is_not_handed_over_again(scene, identify_gate) -> None:
    s = scene
    await s.start(with_brann=False)
    await talk_before_the_loss(s, s.general, "one")
    await s.fake.invalidate_session(s.ada)
    handled, missed = [await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} {t}") for t in ("two", "three")]
    # As if another daemon had received "two" meanwhile (a lease handover): it is stored already.
    rt = s.runtime("Ada")
    await rt.store.create_memory(
        Memory(
            id=discord_id(rt.agent_id, handled.id),
            entity_id=discord_id(rt.agent_id, s.sam.id),
            agent_id=rt.agent_id,
            room_id=discord_id(rt.agent_id, s.general.id),
            content=Content(text="@Ada two", source="discord"),
            created_at=now_ms(),
        ),
        "messages",
    )
    identify_gate.set()
    await until(lambda: answered(s)[missed.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert answered(s)[handled.id] == 0 and sum(answered(s).values()) == 2


def said(channel_id: int, message_id: int, guild_id: int | None = None) -> SimpleNamespace:
    guild = SimpleNamespace(id=guild_id) if guild_id is not None else None
    return SimpleNamespace(id=message_id, channel=SimpleNamespace(id=channel_id), guild=guild)


def snowflake_ago(now: datetime.datetime, seconds: float) -> int:
    return discord.utils.time_snowflake(now - datetime.timedelta(seconds=seconds))


def test_the_plan_starts_where_each_channel_stood_when_the_connection_was_lost() -> None:
    now = datetime.datetime.now(datetime.UTC)
    missed = MissedMessages(CatchUpLimits(window_s=600, max_channels=2))
    first, second, third = (snowflake_ago(now, s) for s in (30, 20, 10))
    assert missed.claim(said(1, first)) and not missed.claim(said(1, first))  # handed over once
    assert missed.claim(said(2, second))
    missed.connection_lost()
    missed.claim(said(1, third))  # arrived live after the loss (before READY): not where the gap ends
    missed.connection_lost()  # a second disconnect before reconnecting changes nothing
    assert missed.plan(now) == [(2, second), (1, first)]  # most recently active first
    missed.connection_lost()
    missed.resumed()  # Discord replayed the gap: the next plan starts from what is seen now
    assert missed.plan(now) == [(1, third), (2, second)]


def test_the_plan_is_bounded_by_the_window_and_the_number_of_channels_and_can_be_off() -> None:
    now = datetime.datetime.now(datetime.UTC)
    missed = MissedMessages(CatchUpLimits(window_s=60, max_channels=2))
    for channel_id in (1, 2, 3):
        missed.claim(said(channel_id, snowflake_ago(now, 3600)))
    assert missed.plan(now) == [(3, snowflake_ago(now, 60)), (2, snowflake_ago(now, 60))]
    off = MissedMessages(CatchUpLimits(window_s=0))
    off.claim(said(1, snowflake_ago(now, 1)))
    assert off.plan(now) == []


async def test_a_direct_message_sent_during_the_gap_is_answered(scene, identify_gate) -> None:
    s = scene
    await s.start(with_brann=False)
    hello = await s.fake.dm(s.sam, s.ada, "hello")
    await until(lambda: answered(s)[hello.id] == 1)
    await asyncio.sleep(0.1)
    await s.fake.invalidate_session(s.ada)
    missed = await s.fake.dm(s.sam, s.ada, "are you there?")
    identify_gate.set()
    await until(lambda: answered(s)[missed.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert sum(answered(s).values()) == 2 and s.ada.sent[-1].channel.is_dm


async def test_a_message_that_arrives_live_while_the_history_is_read_is_answered_once(scene, identify_gate) -> None:
    s = scene
    await s.start(with_brann=False)
    await talk_before_the_loss(s, s.general, "one")
    # Rate limited: discord.py waits a second before it reads the history again.
    s.fake.fail_next("GET", rf"/channels/{s.general.id}/messages$", status=429, retry_after=1.0)
    await s.fake.invalidate_session(s.ada)
    missed = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} while away")
    identify_gate.set()
    await until(lambda: history_reads(s), timeout=60)
    live = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} back now?")
    await until(lambda: len(history_reads(s)) == 2 and answered(s)[missed.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert answered(s)[live.id] == 1 and sum(answered(s).values()) == 3


def test_the_plan_reads_only_the_channels_of_the_servers_the_connection_still_hears() -> None:
    # A connection that gave up a shard must not read its channels back: its new holder answers them.
    now = datetime.datetime.now(datetime.UTC)
    missed = MissedMessages(CatchUpLimits(window_s=600, max_channels=3))
    kept, given_up = snowflake_ago(now, 30), snowflake_ago(now, 20)
    missed.claim(said(1, kept, guild_id=10))
    missed.claim(said(2, given_up, guild_id=20))
    missed.claim(said(3, snowflake_ago(now, 10)))  # a DM
    missed.connection_lost()
    assert missed.plan(now, covers=lambda guild: guild == 10) == [(1, kept)]
    missed.connection_lost()
    assert missed.plan(now, covers=lambda guild: guild is None) == [(3, snowflake_ago(now, 10))]


def stored(channel_id: int, message_id: int, guild_id: int | None, source: str = "discord") -> Memory:
    meta = MemoryMetadata(
        channel_id=str(channel_id),
        discord_message_id=str(message_id),
        server_id=str(guild_id) if guild_id else None,
    )
    return Memory(entity_id="e", room_id="r", content=Content(source=source), metadata=meta)


def test_for_shards_taken_on_the_store_says_where_to_read_and_the_earlier_bound_wins() -> None:
    now = datetime.datetime.now(datetime.UTC)
    missed = MissedMessages(CatchUpLimits(window_s=600, max_channels=3))
    older, newer, newest, seen = (snowflake_ago(now, s) for s in (50, 40, 30, 20))
    recent = [  # newest first, as the store gives them
        stored(7, newest, guild_id=70),
        stored(7, newer, guild_id=70),  # an older one in the same channel: the newest counts
        stored(8, older, guild_id=80),  # a server on a shard not taken on
        stored(9, newer, guild_id=None),  # a DM: shard 0
        stored(6, newest, guild_id=70, source="telegram"),
        stored(5, snowflake_ago(now, 3600), guild_id=70),  # before the window: read from its start
    ]
    plan = [(1, seen), (7, older)]  # what this run saw itself
    taken_on = {70, None}
    assert missed.with_stored(plan, recent, lambda guild: guild in taken_on, now) == [
        (1, seen),
        (9, newer),
        (7, older),  # this run's own bound is the earlier one
    ]
    assert missed.with_stored([], recent[-1:], lambda guild: True, now) == [(5, snowflake_ago(now, 600))]
