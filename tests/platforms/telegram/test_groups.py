"""Which updates come from a group the bot may not stay in (``shouldOnlyJoinInAllowedGroups``),
on updates as the Bot API sends them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from platforms.telegram._config import read_config
from platforms.telegram._groups import GroupGate, refused_group
from platforms.telegram._handlers import _NotAllowedGroup

from .recorded import BOT, CHANNEL, FORUM, GROUP, PRIVATE, SAM, message, received, update

ALLOWED = frozenset({str(FORUM["id"])})
SMALL_GROUP: dict[str, Any] = {"id": -4012345678, "type": "group", "title": "Book club"}


def test_only_groups_and_supergroups_off_the_list_are_refused_and_only_with_the_option_on() -> None:
    chats = [received(message(chat, "hi")).chat for chat in (GROUP, SMALL_GROUP, FORUM, PRIVATE, CHANNEL)]
    assert [refused_group(chat, ALLOWED) for chat in chats] == [True, True, False, False, False]
    assert not any(refused_group(chat, None) for chat in chats)  # the option off: every group
    assert refused_group(chats[2], frozenset())  # on, with an empty list: no group at all


def my_chat_member(chat: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {
        "chat": chat,
        "from": SAM,
        "date": 1795334400,
        "old_chat_member": {"status": old, "user": BOT},
        "new_chat_member": {"status": new, "user": BOT},
    }


def test_every_kind_of_update_from_a_refused_group_is_taken_before_the_others() -> None:
    settings = {"TELEGRAM_BOT_TOKEN": "7001:secret", "shouldOnlyJoinInAllowedGroups": "true"}
    adapter = SimpleNamespace(config=read_config({**settings, "allowedGroupIds": str(FORUM["id"])}.get, "Ada"))
    adapter.groups = GroupGate(adapter)  # type: ignore[arg-type]
    handler = _NotAllowedGroup(adapter)  # type: ignore[arg-type]
    reaction = {
        "chat": GROUP,
        "message_id": 10,
        "user": SAM,
        "date": 1795334400,
        "old_reaction": [],
        "new_reaction": [{"type": "emoji", "emoji": "👍"}],
    }
    added = message(GROUP, None, new_chat_members=[BOT])
    from_group = [
        update(my_chat_member=my_chat_member(GROUP, "left", "member")),
        update(message=added),
        update(message=message(GROUP, "@ada_bot hello")),
        update(edited_message={**message(GROUP, "hello again"), "edit_date": 1795334500}),
        update(message_reaction=reaction),
    ]
    assert all(handler.check_update(u) for u in from_group)
    elsewhere = [
        update(my_chat_member=my_chat_member(FORUM, "left", "member")),
        update(message=message(FORUM, "@ada_bot hello")),
        update(message=message(PRIVATE, "hello")),
        update(channel_post={**message(CHANNEL, "news"), "sender_chat": CHANNEL}),
    ]
    assert not any(handler.check_update(u) for u in elsewhere)
