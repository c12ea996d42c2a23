"""Rooms as a plugin hears them on Discord: a channel or thread created (ROOM_JOINED), renamed
(ROOM_UPDATED), deleted (ROOM_LEFT). Copy a test to start a plugin that follows rooms."""

from __future__ import annotations

from bot.runtime.events import RoomJoined, RoomLeft, RoomUpdated

from .scene import Scene, until


async def test_channels_created_renamed_and_deleted_are_heard(scene: Scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    heard: list[str] = []

    async def joined(event: RoomJoined) -> None:
        heard.append(f"joined {event.room.name}")

    async def updated(event: RoomUpdated) -> None:
        heard.append(f"renamed {event.previous_name} to {event.room.name}")

    async def left(event: RoomLeft) -> None:
        heard.append(f"left {event.room.name} ({event.status})")

    rt.on(RoomJoined, joined)
    rt.on(RoomUpdated, updated)
    rt.on(RoomLeft, left)
    channel = s.fake.add_channel(s.guild, "drafts")
    await until(lambda: "joined drafts" in heard)
    s.fake.add_thread(channel, "chapter one")
    await until(lambda: "joined chapter one" in heard)
    await s.fake.rename_channel(channel, "second-drafts")
    await until(lambda: "renamed drafts to second-drafts" in heard)
    await s.fake.delete_channel(channel)
    await until(lambda: "left second-drafts (deleted)" in heard)
    assert heard == [
        "joined drafts",
        "joined chapter one",
        "renamed drafts to second-drafts",
        "left second-drafts (deleted)",
    ]
