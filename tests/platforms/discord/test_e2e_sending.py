"""End to end on Discord, what may go wrong on the way out or in: rate limits that outlast
discord.py's own tries, text a platform cannot encode. Nothing lost silently, nothing doubled,
nothing crashes."""

from __future__ import annotations

import asyncio
import logging

from platforms.discord._mapping import discord_id

from .scene import plan, until


async def test_rate_limits_beyond_discord_py_s_own_five_tries_are_waited_out_within_the_deadline(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("POST", r"/channels/\d+/messages$", status=429, retry_after=0.05, times=7, bot=s.ada)
    s.brain.plans["Ada"].append(plan("Eventually."))
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert [m.content for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Eventually."]


async def test_a_rate_limit_past_the_deadline_logs_the_lost_reply_with_its_channel_and_message(scene, caplog) -> None:
    s = scene
    await s.start({"DISCORD_SEND_DEADLINE_S": "1"}, with_brann=False)
    s.fake.fail_next("POST", r"/channels/\d+/messages$", status=429, retry_after=5, bot=s.ada)
    s.brain.plans["Ada"].append(plan("This reply will never arrive at all, sadly."))
    with caplog.at_level(logging.ERROR):
        asked = await s.fake.user_says(s.sam, s.general, "Ada?")
        await until(lambda: "could not send a reply" in caplog.text, timeout=60)
    line = next(r.getMessage() for r in caplog.records if "could not send a reply" in r.getMessage())
    assert f"#general (channel {s.general.id}) to message {asked.id}" in line
    assert '"This reply will never arrive at…"' in line and "1 s send deadline" in line
    assert s.ada.sent == []


async def test_a_reply_with_a_lone_surrogate_arrives_with_a_replacement_character_and_is_remembered(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Broken \ud800 but here."))
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert [m.content for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Broken \ufffd but here."]
    rt = s.runtime("Ada")
    room = discord_id(rt.agent_id, s.general.id)
    for _ in range(100):  # the reply is remembered once Discord has taken it
        stored = await rt.store.get_memories(table="messages", room_id=room)
        if "Broken \ufffd but here." in [m.content.text for m in stored]:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError(f"the reply was not remembered: {[m.content.text for m in stored]}")


async def test_a_long_reply_stopped_part_way_keeps_what_went_out_and_logs_the_rest_lost(scene, caplog) -> None:
    s = scene
    await s.start({"DISCORD_SEND_DEADLINE_S": "1"}, with_brann=False)
    s.fake.fail_next(
        "POST", r"/channels/\d+/messages$", status=403, code=50013, message="Missing Permissions", bot=s.ada, after=1
    )  # the second part is refused
    long = "\n".join(f"Point {i}: keep going." for i in range(120))
    s.brain.plans["Ada"].append(plan(long))
    with caplog.at_level(logging.ERROR):
        await s.fake.user_says(s.sam, s.general, "Ada, everything please")
        await until(lambda: "could not send a reply" in caplog.text, timeout=60)
    assert "only 1 of 2 parts went out: 403 Missing Permissions" in caplog.text and len(s.ada.sent) == 1
    rt = s.runtime("Ada")
    room = discord_id(rt.agent_id, s.general.id)

    async def remembered() -> list[str]:
        return [
            m.content.text
            for m in await rt.store.get_memories(table="messages", room_id=room)
            if m.entity_id == rt.agent_id and m.content.text
        ]

    async with asyncio.timeout(60):
        while await remembered() != [s.ada.sent[0].content]:
            await asyncio.sleep(0.02)
