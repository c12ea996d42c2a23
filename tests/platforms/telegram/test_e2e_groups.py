"""Groups the owner allows, end to end (``shouldOnlyJoinInAllowedGroups`` with
``allowedGroupIds``): a bot in a group off the list says why once and leaves it, whatever Telegram
delivers again and across a restart; groups on the list, private chats, and every group with the
option off, are answered as ever."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from platforms.telegram._mapping import room_id

from .scene import Scene, plan, until


def calls(s: Scene, method: str, chat: Any) -> int:
    return sum(1 for name, params in s.ada.requests if name == method and int(params["chat_id"]) == chat.id)


def heard(s: Scene, text: str) -> bool:
    return any(text in prompt for prompt in s.brain.prompts)


async def settled(s: Scene) -> None:
    """Until every update Ada has been given was fetched and dealt with (the inbox is empty)."""
    store = s.runtime("Ada").store
    await until(lambda: not s.ada.updates)
    async with asyncio.timeout(30):
        while await store.inbox_pending("telegram"):
            await asyncio.sleep(0.01)


async def restart(s: Scene, settings: dict[str, Any]) -> None:
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()
    await asyncio.wait_for(s.task, 60)
    await s.start(settings, with_brann=False)
    await s.fake.wait_polling(s.ada)


async def test_added_to_a_group_off_the_list_it_says_why_once_and_leaves_even_when_told_again(scene) -> None:
    s = scene
    pirates = s.fake.add_group("Pirates", members=[s.sam])
    settings = {"shouldOnlyJoinInAllowedGroups": True, "allowedGroupIds": [s.group.id]}
    await s.start(settings, with_brann=False)
    await s.fake.wait_polling(s.ada)

    # The bot's own my_chat_member and the group's "Sam added Ada" come together.
    await s.fake.bot_added(pirates, s.ada, by=s.sam, announce=True)
    await until(lambda: s.ada.left)
    notices = [m for m in s.ada.sent if m["chat_id"] == pirates.id]
    assert [m["text"] for m in notices] == [
        "Ada only takes part in the groups its owner allows, and this is not one of them, so I'm leaving."
    ]
    assert s.ada.left == [pirates.id] and calls(s, "leaveChat", pirates) == 1
    assert not any(m is s.ada for m in pirates.members)
    await settled(s)

    # Telegram sends "added" again (its confirmation was lost): asked, Telegram says the bot is gone.
    added = next(u for u in s.ada.delivered if u.get("my_chat_member", {}).get("chat", {}).get("id") == pirates.id)
    s.fake.redeliver(s.ada, added["update_id"])
    await until(lambda: calls(s, "getChatMember", pirates) == 1)
    await settled(s)
    assert len([m for m in s.ada.sent if m["chat_id"] == pirates.id]) == 1 and s.ada.left == [pirates.id]

    # A group on the list and a private chat are answered as ever.
    s.brain.plans["Ada"] += [plan("Ahoy, writers."), plan("Hello Sam!")]
    await s.fake.user_says(s.sam, s.group, "@ada_bot are you with us?")
    assert (await s.fake.wait_for_sent(s.ada, 1, chat=s.group))[0]["text"] == "Ahoy, writers."
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "and here?")
    assert (await s.fake.wait_for_sent(s.ada, 1, chat=s.fake.private(s.sam, s.ada)))[0]["text"] == "Hello Sam!"

    # After a restart, the same update once more: still one notice, no second leave.
    await restart(s, settings)
    s.fake.redeliver(s.ada, added["update_id"])
    await until(lambda: calls(s, "getChatMember", pirates) == 2)
    await settled(s)
    assert len([m for m in s.ada.sent if m["chat_id"] == pirates.id]) == 1 and s.ada.left == [pirates.id]

    # Added again later: it leaves again (the reason was given).
    await s.fake.bot_added(pirates, s.ada, by=s.sam)
    await until(lambda: len(s.ada.left) == 2)
    assert len([m for m in s.ada.sent if m["chat_id"] == pirates.id]) == 1
    assert not heard(s, "Pirates")


async def test_a_group_it_is_already_in_is_answered_until_the_option_is_on_then_left_at_its_next_message(
    scene, caplog
) -> None:
    s = scene
    with caplog.at_level(logging.INFO):  # the option off: every group
        await s.start({"allowedGroupIds": ["-100999"], "messageTrackingLimit": 50}, with_brann=False)
    assert "Ada: messageTrackingLimit is not used: CONVERSATION_LENGTH is how many" in caplog.text
    s.brain.plans["Ada"].append(plan("Morning!"))
    await s.fake.user_says(s.sam, s.group, "@ada_bot good morning")
    assert (await s.fake.wait_for_sent(s.ada, 1, chat=s.group))[0]["text"] == "Morning!"

    await restart(s, {"shouldOnlyJoinInAllowedGroups": "true", "allowedGroupIds": "-100999"})
    # Two messages in one go: one notice, one leave, and neither reaches the character.
    await s.fake.user_says(s.sam, s.group, "@ada_bot still there?")
    await s.fake.user_says(s.cleo, s.group, "Ada, hello?")
    await until(lambda: s.ada.left)
    await settled(s)
    texts = [m["text"] for m in s.ada.sent if m["chat_id"] == s.group.id]
    assert texts[0] == "Morning!" and len(texts) == 2 and "owner allows" in texts[1]
    assert s.ada.left == [s.group.id] and calls(s, "leaveChat", s.group) == 1
    assert not heard(s, "still there?") and not heard(s, "Ada, hello?")
    rt = s.runtime("Ada")
    room = await rt.store.get_room(room_id(rt.agent_id, s.group.id))
    assert room is not None and room.metadata.left_as == "left"  # SEND_MESSAGE refuses it now
