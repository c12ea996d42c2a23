"""End to end on Discord: every start reads back what was said while no daemon listened — a
daemon alone too, after a clean stop or a crash — and what it held in memory while the store
could not write when it was stopped; each message is answered once, as if it had just arrived,
and nothing older than RECOVERY_WINDOW_S is taken up."""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections import Counter

import discord
import pytest

from platforms.discord._catchup import CatchUpLimits, MissedMessages

from ...fakes.discord_server import FakeMessage
from ...store_faults import DISK_FULL, StoreFault
from .scene import Scene, until
from .test_catchup import answered, history_reads, snowflake_ago, stored, talk_before_the_loss


async def _die(s: Scene) -> None:
    """Stop the daemon as a crash would: no draining, nothing finished or recorded after this point."""
    assert s.task is not None
    s.task.cancel()
    await asyncio.gather(s.task, return_exceptions=True)


async def _alone_after_a_talk(s: Scene, settings: dict[str, str] | None = None) -> FakeMessage:
    """Start the daemon with Ada alone, and have her answer a message in #general."""
    await s.start(settings, with_brann=False)
    return await talk_before_the_loss(s, s.general, "one")


def _caught_up(caplog: pytest.LogCaptureFixture) -> bool:
    return any("missed message(s) handed over" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("how", ["stopped", "killed"])
async def test_a_message_said_while_a_daemon_alone_was_down_is_answered_once_when_it_starts_again(
    scene, how: str
) -> None:
    s = scene
    before = await _alone_after_a_talk(s)
    if how == "stopped":
        await s.stop()
    else:
        await _die(s)
    meanwhile = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} are you back?")

    await s.start(with_brann=False)
    await until(lambda: answered(s)[meanwhile.id] == 1, timeout=60)
    await asyncio.sleep(0.3)  # room for a second answer that must not come
    assert answered(s) == Counter({before.id: 1, meanwhile.id: 1})


async def test_a_message_held_while_the_store_could_not_write_survives_a_stop_and_is_answered_once(
    scene, monkeypatch
) -> None:
    s = scene
    before = await _alone_after_a_talk(s)
    fault = StoreFault(monkeypatch, DISK_FULL)
    fault.failing = True
    held = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} did you get this?")
    await until(lambda: fault.refused >= 1, timeout=30)
    await s.stop()  # before the store writes again: the message was only in memory
    assert answered(s)[held.id] == 0

    fault.failing = False
    await s.start(with_brann=False)
    await until(lambda: answered(s)[held.id] == 1, timeout=60)
    await asyncio.sleep(0.3)
    assert answered(s) == Counter({before.id: 1, held.id: 1})


async def test_a_message_heard_live_while_the_start_reads_the_history_is_answered_once(scene) -> None:
    s = scene
    before = await _alone_after_a_talk(s)
    await s.stop()
    read_before = len(history_reads(s, s.general))
    meanwhile = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} while you were away")
    # Rate limited: discord.py waits a second before it reads the history again, and the live
    # message said meanwhile is in both.
    s.fake.fail_next("GET", rf"/channels/{s.general.id}/messages$", status=429, retry_after=1.0)

    await s.start(with_brann=False)
    await until(lambda: len(history_reads(s, s.general)) > read_before, timeout=60)
    live = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} back now?")
    await until(lambda: answered(s)[meanwhile.id] and answered(s)[live.id], timeout=60)
    await until(lambda: len(history_reads(s, s.general)) == read_before + 2, timeout=60)
    await asyncio.sleep(0.3)
    assert answered(s) == Counter({before.id: 1, meanwhile.id: 1, live.id: 1})


async def test_a_message_older_than_the_recovery_window_is_not_taken_up_at_start(scene, caplog) -> None:
    s = scene
    caplog.set_level(logging.INFO)
    settings = {"RECOVERY_WINDOW_S": "1"}  # the Discord catch-up window stays 600 s
    await _alone_after_a_talk(s, settings)
    await s.stop()
    old = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} still there?")
    said = discord.utils.snowflake_time(old.id).timestamp()
    await asyncio.sleep(max(0.0, said + 1.5 - time.time()))  # the message ages past the window
    caplog.clear()

    await s.start(settings, with_brann=False)
    await until(lambda: _caught_up(caplog), timeout=60)
    await asyncio.sleep(0.3)  # room for an answer that must not come
    assert answered(s)[old.id] == 0
    reads = history_reads(s, s.general)
    assert reads and int(reads[-1].query["after"]) > old.id  # read, from within the window only
    oldest = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=60)
    assert discord.utils.snowflake_time(int(reads[-1].query["after"])) > oldest


def test_a_shorter_window_bounds_what_is_read_for_shards_taken_on_but_never_widens_it() -> None:
    now = datetime.datetime.now(datetime.UTC)
    missed = MissedMessages(CatchUpLimits(window_s=600))
    recent = [stored(5, snowflake_ago(now, 3600), guild_id=70)]
    assert missed.with_stored([], recent, lambda guild: True, now, window_s=60) == [(5, snowflake_ago(now, 60))]
    assert missed.with_stored([], recent, lambda guild: True, now, window_s=6000) == [(5, snowflake_ago(now, 600))]
