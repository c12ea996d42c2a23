"""Buttons as inline keyboards, and presses (callback queries, as recorded) as messages."""

from __future__ import annotations

from typing import Any

from bot.kernel.buttons import Button, Press, ReplyKeyboard
from bot.kernel.outgoing import Reply
from platforms.telegram._mapping import chat_room, entity_id, message_id, room_id
from platforms.telegram._presses import keyboard, markup_of, shown_buttons, translate_press

from .recorded import BOT, CLEO, FORUM, GROUP, message, update

AGENT = "00000000-0000-0000-0000-00000000a001"
KEYBOARD = {
    "inline_keyboard": [
        [{"text": "Yes", "callback_data": "y"}, {"text": "No", "callback_data": "n"}],
        [{"text": "Docs", "url": "https://example.com"}],
    ]
}


def pressed(message_data: dict[str, Any], data: str = "n") -> Any:
    query = update(
        callback_query={"id": "4242", "from": CLEO, "chat_instance": "ci", "data": data, "message": message_data}
    ).callback_query
    assert query is not None and query.message is not None
    return query


def test_buttons_become_rows_of_an_inline_keyboard_with_links_as_url_buttons() -> None:
    markup = keyboard([Button("Yes", value="y"), Button("No", value="n"), Button("Docs", url="https://example.com")])
    assert markup is not None and markup.to_dict() == {
        "inline_keyboard": [
            [
                {"text": "Yes", "callback_data": "y"},
                {"text": "No", "callback_data": "n"},
                {"text": "Docs", "url": "https://example.com"},
            ]
        ]
    }
    assert keyboard([]) is None
    many = keyboard([Button(str(n), value=str(n)) for n in range(7)])
    assert many is not None and [len(row) for row in many.inline_keyboard] == [3, 3, 1]


def test_a_press_in_a_forum_topic_is_a_message_from_the_presser_there_labelled_and_addressed() -> None:
    asked = message(FORUM, "Which?", sender=BOT, id=77, thread=5, reply_markup=KEYBOARD)
    query = pressed(asked)
    assert [b.label for b in shown_buttons(query.message)] == ["Yes", "No"]  # the link carries no press
    seen = translate_press(AGENT, query, query.message)
    memory = seen.memory
    assert memory.id == message_id(AGENT, FORUM["id"], "press-4242")
    assert memory.entity_id == entity_id(AGENT, CLEO["id"]) and memory.room_id == room_id(AGENT, FORUM["id"], 5)
    assert memory.content.text == "No" and memory.content.button == Press("n", "No")
    assert memory.content.in_reply_to == message_id(AGENT, FORUM["id"], 77)
    assert memory.metadata.is_reply and not memory.metadata.author_is_bot
    assert (seen.chat_id, seen.message_id, seen.thread_id) == (FORUM["id"], 77, 5)


def test_a_press_on_a_message_the_bot_can_no_longer_read_goes_to_the_chats_main_room_with_its_value() -> None:
    query = pressed({"chat": GROUP, "message_id": 12, "date": 0}, data="y")
    seen = translate_press(AGENT, query, query.message)
    assert seen.room == chat_room(AGENT, query.message.chat) and seen.thread_id is None
    assert seen.memory.content.text == "y" and seen.memory.content.button == Press("y")
    assert shown_buttons(query.message) == []


def test_a_press_under_a_keyboard_troupe_could_not_have_sent_is_still_heard_with_its_value() -> None:
    # Telegram takes labels longer than troupe's limit; such a button must not stop the press.
    long = {"inline_keyboard": [[{"text": "x" * 100, "callback_data": "far"}, {"text": "Yes", "callback_data": "y"}]]}
    asked = message(GROUP, "Which?", sender=BOT, id=78, reply_markup=long)
    query = pressed(asked, data="far")
    assert [b.label for b in shown_buttons(query.message)] == ["Yes"]
    seen = translate_press(AGENT, query, query.message)
    assert seen.memory.content.button == Press("far")


def test_a_reply_keyboard_is_laid_out_as_buttons_are_and_selective_only_when_it_replies() -> None:
    offered = ReplyKeyboard(("Tea", "Coffee", "Neither", "Both"), one_time=False)
    shown = markup_of(Reply(text="Which?", keyboard=offered), replying=True)
    assert shown is not None and shown.to_dict() == {
        "keyboard": [[{"text": "Tea"}, {"text": "Coffee"}, {"text": "Neither"}], [{"text": "Both"}]],
        "resize_keyboard": True,
        "one_time_keyboard": False,
        "selective": True,
    }
    removed = markup_of(Reply(text="Noted.", keyboard=ReplyKeyboard.removed()), replying=False)
    assert removed is not None and removed.to_dict() == {"remove_keyboard": True}
    assert markup_of(Reply(text="Plain"), replying=False) is None
