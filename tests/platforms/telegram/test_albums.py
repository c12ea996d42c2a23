"""Albums on Telegram: several photos or documents sent together (one media group, one update
per part) are one message to the character, answered once — also across a restart in the
middle of gathering and when Telegram delivers parts again."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from platforms.telegram._albums import Albums
from platforms.telegram._mapping import album_memory_id, room_id
from tests.fakes.openai_server import make_png
from tests.fakes.telegram_server import FakeChat

from .scene import Scene, plan


def _photos(n: int) -> list[tuple[str, tuple[str, bytes]]]:
    return [("photo", (f"p{i}.png", make_png(8 + i, 8))) for i in range(n)]


async def _album_in_private(s: Scene, count: int, caption: str, *answers: str) -> FakeChat:
    """Ada started, with ``answers`` planned; Sam sends her an album of ``count`` photos."""
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan(a) for a in answers]
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_sends_album(s.sam, chat, _photos(count), caption)
    return chat


async def _stored(s: Scene, chat_id: int) -> list:
    rt = s.runtime("Ada")
    return await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat_id))


async def test_an_album_of_three_photos_is_one_message_with_all_of_them_answered_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("The second one."), plan("Again?")]
    chat = s.fake.private(s.sam, s.ada)
    parts = await s.fake.user_sends_album(s.sam, chat, _photos(3), "which is best?")
    [answer] = await s.fake.wait_for_sent(s.ada, 1)
    assert answer["text"] == "The second one." and answer["reply_to"] == parts[0]["message_id"]
    await asyncio.sleep(1.5)  # nothing more comes: not one answer per photo
    assert len(s.ada.sent) == 1
    planning = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert len(planning) == 1 and "which is best?" in planning[0]
    rt = s.runtime("Ada")
    [heard] = [m for m in await _stored(s, chat.id) if m.entity_id != rt.agent_id]
    assert heard.id == album_memory_id(rt.agent_id, chat.id, parts[0]["media_group_id"])
    assert heard.content.text == "which is best?"
    assert [a.id for a in heard.content.attachments or ()] == [p["photo"][-1]["file_id"] for p in parts]


async def test_a_mixed_album_in_a_group_is_heard_once_with_the_caption_of_whichever_part_has_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Read them."))
    group = "album-77"
    await s.fake.user_says(s.sam, s.group, "", photo=("a.png", make_png(8, 8)), media_group_id=group)
    await s.fake.user_says(
        s.sam, s.group, "@ada_bot thoughts?", document=("notes.txt", b"tide at six", "text/plain"), media_group_id=group
    )
    [answer] = await s.fake.wait_for_sent(s.ada, 1)
    assert answer["text"] == "Read them."
    planning = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "thoughts?" in planning and "notes.txt" in planning and "tide at six" in planning


async def test_parts_delivered_again_after_the_album_was_answered_are_not_answered_again(scene) -> None:
    s = scene
    await _album_in_private(s, 2, "look", "Lovely.", "Twice?")
    await s.fake.wait_for_sent(s.ada, 1)
    for update in [u for u in s.ada.delivered if "message" in u][-1:]:  # Telegram sends the last part again
        s.fake.redeliver(s.ada, update["update_id"])
    await asyncio.sleep(2.0)
    assert len(s.ada.sent) == 1


async def test_a_restart_while_an_album_is_gathered_hears_it_once_after_the_restart(scene) -> None:
    s = scene
    chat = await _album_in_private(s, 3, "a trip", "All three, lovely.", "Again?")
    rt = s.runtime("Ada")
    async with asyncio.timeout(60):  # all three parts fetched, kept in the inbox, being gathered
        while len(await rt.store.inbox_pending("telegram")) < 3:
            await asyncio.sleep(0.02)
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()  # within the second the album waits for more parts
    await asyncio.wait_for(s.task, 60)
    assert not s.ada.sent

    await s.start(with_brann=False)
    [answer] = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert answer["text"] == "All three, lovely."
    await asyncio.sleep(1.5)
    assert len(s.ada.sent) == 1
    rt = s.runtime("Ada")
    [heard] = [m for m in await _stored(s, chat.id) if m.entity_id != rt.agent_id]
    assert len(heard.content.attachments or ()) == 3 and heard.content.text == "a trip"
    assert not await rt.store.inbox_pending("telegram")


def _part(message_id: int, group: str = "g1", chat_id: int = 5) -> Any:
    return SimpleNamespace(message_id=message_id, media_group_id=group, chat=SimpleNamespace(id=chat_id))


async def test_every_part_fails_when_hearing_the_album_fails_so_none_leaves_the_inbox() -> None:
    albums, heard = Albums(quiet_s=0.05), []

    async def hear(parts: list) -> None:
        heard.append([p.message_id for p in parts])
        raise RuntimeError("the store is gone")

    results = await asyncio.gather(
        *(albums.gather(_part(i), hear) for i in (1, 2, 3)), albums.gather(_part(9, "g2"), hear), return_exceptions=True
    )
    assert sorted(heard) == [[1, 2, 3], [9]]  # one album per chat and media group, heard once each
    assert [str(r) for r in results] == ["the store is gone"] * 4


async def test_an_album_still_growing_is_heard_after_the_longest_wait() -> None:
    albums, heard = Albums(quiet_s=0.2, longest_s=0.3), []

    async def hear(parts: list) -> None:
        heard.append([p.message_id for p in parts])

    async def trickle() -> None:
        for i in range(2, 12):
            await asyncio.sleep(0.05)
            later.append(asyncio.ensure_future(albums.gather(_part(i), hear)))

    later: list[asyncio.Future[None]] = []
    started = asyncio.get_running_loop().time()
    await asyncio.gather(albums.gather(_part(1), hear), trickle())
    await asyncio.gather(*later)
    assert asyncio.get_running_loop().time() - started < 1.0
    assert heard[0][:3] == [1, 2, 3] and len(heard) >= 2 and sum(map(len, heard)) == 11


async def test_an_album_s_edited_caption_changes_the_album_s_message_not_a_new_one(scene) -> None:
    s = scene
    chat = await _album_in_private(s, 2, "two cats", "Nice cats.")
    await s.fake.wait_for_sent(s.ada, 1)
    first = next(u["message"] for u in s.ada.delivered if u.get("message", {}).get("caption") == "two cats")
    await s.fake.user_edits(first, "two dogs, in fact")
    rt = s.runtime("Ada")

    async def theirs() -> list:
        return [m for m in await _stored(s, chat.id) if m.entity_id != rt.agent_id]

    async with asyncio.timeout(60):
        while [m.content.text for m in await theirs()] != ["two dogs, in fact"]:
            await asyncio.sleep(0.02)
    [album] = await theirs()
    assert len(album.content.attachments or ()) == 2 and album.metadata.edited_at


async def test_a_reply_to_any_photo_of_an_album_replies_to_the_album_s_message(scene) -> None:
    s = scene
    chat = await _album_in_private(s, 2, "two cats", "Nice cats.", "The grey one.")
    await s.fake.wait_for_sent(s.ada, 1)
    second = next(u["message"] for u in reversed(s.ada.delivered) if "photo" in u.get("message", {}))
    await s.fake.user_says(s.sam, chat, "this one?", reply_to=second)
    await s.fake.wait_for_sent(s.ada, 2)
    rt = s.runtime("Ada")
    [asked] = [m for m in await _stored(s, chat.id) if m.content.text == "this one?"]
    assert asked.content.in_reply_to == album_memory_id(rt.agent_id, chat.id, second["media_group_id"])
