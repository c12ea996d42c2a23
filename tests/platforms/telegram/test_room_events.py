"""Rooms as a plugin hears them on Telegram: a group first heard from (ROOM_JOINED), then renamed
(ROOM_UPDATED). Copy the test to start a plugin that follows rooms."""

from __future__ import annotations

from bot.runtime.events import RoomJoined, RoomUpdated
from platforms.telegram._mapping import room_id

from .scene import plan, until


async def test_a_group_heard_then_renamed(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    heard: list[str] = []

    async def joined(event: RoomJoined) -> None:
        heard.append(f"joined {event.room.name}")

    async def updated(event: RoomUpdated) -> None:
        heard.append(f"renamed {event.previous_name} to {event.room.name}")

    rt.on(RoomJoined, joined)
    rt.on(RoomUpdated, updated)
    s.brain.plans["Ada"].append(plan("Hello all."))
    old_title = s.group.title
    await s.fake.user_says(s.sam, s.group, "hey @ada_bot")
    await s.fake.wait_for_sent(s.ada, 1)
    await until(lambda: f"joined {old_title}" in heard)
    await s.fake.group_renamed(s.group, "Night Writers", by=s.sam)
    await until(lambda: f"renamed {old_title} to Night Writers" in heard)
    assert heard == [f"joined {old_title}", f"renamed {old_title} to Night Writers"]
    assert (await rt.store.get_room(room_id(rt.agent_id, s.group.id))).name == "Night Writers"
    assert len(s.ada.sent) == 1  # the service message is not a message to answer
