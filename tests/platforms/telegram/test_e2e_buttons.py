"""End to end on Telegram: buttons. A reply's buttons are an inline keyboard on its last message
(links as url buttons; what is over the limits left out with a warning); a press is acknowledged
at once, before the (slow) model answers, and reaches the character as a message from the person
who pressed, in the chat and topic of the message it was under; a press on a message too old to
read, a press acknowledged too late and a redelivered press are handled once; CHOOSE_OPTION's
buttons run the option chosen, once, without a model call, and the question shows the choice in
place of its keyboard (a new message where it cannot be edited); a reply keyboard offers fixed
answers, and a tap is heard as the person's text."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.kernel.buttons import Button, Press, ReplyKeyboard
from bot.kernel.outgoing import OutgoingFile, Reply
from bot.kernel.types import Memory, Room
from bot.runtime.agent import AgentRuntime
from bot.runtime.choices import offer_options
from platforms.telegram._mapping import entity_id, room_id
from tests.choices import waiting_choice

from ...fakes.openai_server import make_png
from .scene import Scene, plan, until

VOTE = [Button("One", value="vote:1"), Button("Two", value="vote:2"), Button("Docs", url="https://example.com/d")]


async def room_of(rt: AgentRuntime, chat_id: int, topic: int | None = None) -> Room:
    """The room, once troupe has stored it (the first message in it does)."""
    async with asyncio.timeout(60):
        while (room := await rt.store.get_room(room_id(rt.agent_id, chat_id, topic))) is None:
            await asyncio.sleep(0.01)
    return room


async def ada_posts(s: Scene, chat: Any, text: str, buttons: list[Any], topic: int | None = None) -> dict[str, Any]:
    """Ada posts ``text`` with ``buttons`` in a chat (topic) Sam opened by writing there first;
    returns the last message that went out, as the fake keeps it."""
    answered = len(s.ada.sent)
    await s.fake.user_says(s.sam, chat, "hello there", topic=topic)  # stored; Ada stays quiet in a group
    if chat.type == "private":  # where she answers it: after that
        await s.fake.wait_for_sent(s.ada, answered + 1)
    rt = s.runtime("Ada")
    room = await room_of(rt, chat.id, topic)
    before = len(s.ada.sent)
    await rt.get_service("telegram").send_to_room(room, Reply.of_content({"text": text, "buttons": buttons}))
    return s.ada.sent[before:][-1]


async def stored(rt: AgentRuntime, room: str, check: Any) -> Memory:
    async with asyncio.timeout(60):
        while True:
            found = [m for m in await rt.store.get_memories(table="messages", room_id=room) if check(m)]
            if found:
                return found[0]
            await asyncio.sleep(0.02)


async def test_a_long_replys_keyboard_is_on_its_last_part_with_links_as_url_buttons(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    last = await ada_posts(s, s.group, "word " * 1000, VOTE)  # 5000 characters: two messages
    first, second = s.ada.sent[-2:]
    assert first["reply_markup"] is None and second is last
    assert last["reply_markup"] == {
        "inline_keyboard": [
            [
                {"text": "One", "callback_data": "vote:1"},
                {"text": "Two", "callback_data": "vote:2"},
                {"text": "Docs", "url": "https://example.com/d"},
            ]
        ]
    }
    rt = s.runtime("Ada")
    said = await stored(rt, room_id(rt.agent_id, s.group.id), lambda m: m.content.buttons)
    assert said.content.buttons is not None and said.content.buttons[0] == Button(
        "One", value="vote:1"
    )  # kept with the last part


async def test_buttons_over_the_limits_are_left_out_with_a_warning(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    many = [{"label": f"B{n}", "value": f"b{n}"} for n in range(30)]
    with caplog.at_level(logging.WARNING):
        last = await ada_posts(s, s.group, "Pick one", [{"label": "Bad", "value": "x" * 65}, *many])
    shown = [b["callback_data"] for row in last["reply_markup"]["inline_keyboard"] for b in row]
    assert shown == [f"b{n}" for n in range(25)]
    assert "its value is 1 to 64 bytes, not 65" in caplog.text and "at most 25" in caplog.text
    assert caplog.text.count("a button left out") == 1  # read once for sending and storing both


async def test_a_press_reaches_the_character_from_the_presser_in_its_topic_acknowledged_before_the_model(
    scene,
) -> None:
    s = scene
    assert s.openai is not None
    forum = s.fake.add_group("Forum", members=[s.sam, s.cleo, s.ada], forum=True)
    topic = s.fake.add_topic(forum, "Plans")
    await s.start(with_brann=False)
    asked = await ada_posts(s, forum, "Which day?", VOTE, topic=topic)

    def gated() -> int:
        return sum("Decide what Ada does" in p for p in s.brain.prompts)

    gated_before = gated()
    held = s.openai.hold(lambda r: 'pressed "Two"' in str(r.json))  # the model is slow to answer
    s.brain.plans["Ada"].append(plan("Two it is."))
    query = await s.fake.user_presses(s.cleo, asked["message"], "vote:2")
    async with asyncio.timeout(60):
        await held.reached.wait()
    assert s.fake.answered(query)  # acknowledged while the model is still thinking
    assert s.ada.sent[-1] is asked
    held.release()
    (reply,) = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1))[-1:]
    assert reply["text"] == "Two it is." and reply["thread_id"] == topic and reply["chat_id"] == forum.id
    assert reply["reply_to"] == asked["message"]["message_id"]
    rt = s.runtime("Ada")
    press = await stored(rt, room_id(rt.agent_id, forum.id, topic), lambda m: m.content.button)
    assert press.entity_id == entity_id(rt.agent_id, s.cleo.id) and press.content.text == "Two"
    assert press.content.button == Press("vote:2", "Two")
    assert gated() == gated_before  # addressed: no small-model gate


async def test_a_press_on_a_message_too_old_to_read_or_acknowledged_too_late_is_still_heard(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    chat = s.fake.private(s.sam, s.ada)
    asked = await ada_posts(s, chat, "Which one?", VOTE)
    s.brain.plans["Ada"] += [plan("You pressed something old."), plan("Late, but heard.")]
    sent = len(s.ada.sent)
    old = await s.fake.user_presses(s.sam, asked["message"], "vote:1", inaccessible=True)
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.fake.answered(old) and s.ada.sent[-1]["text"] == "You pressed something old."
    rt = s.runtime("Ada")
    press = await stored(rt, room_id(rt.agent_id, chat.id), lambda m: m.content.button)
    assert press.content.text == "vote:1" and press.content.button == Press("vote:1")
    s.fake.callback_expiry = 0.0  # every acknowledgement now comes too late
    late = await s.fake.user_presses(s.sam, asked["message"], "vote:2")
    await s.fake.wait_for_sent(s.ada, sent + 2)
    assert not s.fake.answered(late) and s.ada.sent[-1]["text"] == "Late, but heard."


async def test_a_redelivered_press_is_answered_once_and_an_inline_one_only_acknowledged(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    chat = s.fake.private(s.sam, s.ada)
    asked = await ada_posts(s, chat, "Which one?", VOTE)
    s.brain.plans["Ada"] += [plan("Only once."), plan("Twice: a bug.")]
    sent = len(s.ada.sent)
    query = await s.fake.user_presses(s.sam, asked["message"], "vote:1")
    await s.fake.wait_for_sent(s.ada, sent + 1)
    s.fake.redeliver(s.ada, s.fake.presses[query].update_id)  # its confirmation never reached Telegram
    inline = await s.fake.user_presses(s.sam, asked["message"], "vote:2", inline=True)
    await until(lambda: s.fake.answered(inline) and not s.ada.updates)
    await asyncio.sleep(0.3)
    assert [m["text"] for m in s.ada.sent[sent:]] == ["Only once."]
    assert len(s.fake.answered(query)) == 1  # the second acknowledgement was refused, logged at debug
    assert await s.runtime("Ada").store.inbox_pending("telegram") == []


async def offered_choice(s: Scene, *, hold: asyncio.Event | None = None) -> tuple[Any, list[Any], dict[str, Any]]:
    """PICK_COLOUR waiting on Sam in his private chat with Ada, its options shown as buttons:
    the task, the worker's runs, and the question as Telegram keeps it."""
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "set up the banner")  # answered by the default plan
    await s.fake.wait_for_sent(s.ada, 1)
    rt = s.runtime("Ada")
    room = await room_of(rt, chat.id)
    task, ran = await waiting_choice(
        rt,
        room_id=room.id,
        entity_id=entity_id(rt.agent_id, s.sam.id),
        description="which colour for the banner?",
        hold=hold,
    )
    (offer,) = await offer_options(rt, task)
    shown = s.ada.sent[-1]
    assert offer.content.buttons is not None and offer.content.buttons[2].label == "Cancel"
    return task, ran, shown


def callback_data(shown: dict[str, Any], label: str) -> str:
    return next(
        b["callback_data"] for row in shown["reply_markup"]["inline_keyboard"] for b in row if b["text"] == label
    )


async def test_choose_option_buttons_run_the_option_pressed_once_without_a_model_call(scene) -> None:
    # The question itself shows the choice, its keyboard gone: no new message says it.
    s = scene
    await s.start(with_brann=False)
    task, ran, shown = await offered_choice(s)
    assert shown["text"] == "PICK_COLOUR: which colour for the banner?"
    labels = [b["text"] for row in shown["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["red", "blue", "Cancel"]
    blue = callback_data(shown, "blue")
    rt = s.runtime("Ada")
    prompts, sent = len(s.brain.prompts), len(s.ada.sent)
    first = await s.fake.user_presses(s.sam, shown["message"], blue)
    await until(lambda: s.ada.edits)
    (edit,) = s.ada.edits
    assert edit["kind"] == "text" and edit["message_id"] == shown["message"]["message_id"]
    assert edit["text"] == "PICK_COLOUR: which colour for the banner?\n\n✓ chosen: blue"
    assert "reply_markup" not in edit["message"] and ran == [{"option": "blue"}]
    question = await stored(rt, room_id(rt.agent_id, s.sam.id), lambda m: "✓ chosen: blue" in (m.content.text or ""))
    assert question.content.buttons is None  # stored as it reads now
    # A second press (a client that still showed the keyboard): told, and nothing runs again.
    second = await s.fake.user_presses(s.sam, edit["message"], blue)
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1]["text"] == "That choice is no longer open." and ran == [{"option": "blue"}]
    assert len(s.ada.edits) == 1 and s.fake.answered(first) and s.fake.answered(second)
    assert len(s.brain.prompts) == prompts  # no model call for either press
    assert await rt.store.get_task(str(task.id)) is None


async def test_a_double_press_edits_the_question_once_and_runs_the_option_once(scene) -> None:
    # Both presses reach the bot before the first is answered: one runs and edits, the other is told.
    s = scene
    await s.start(with_brann=False)
    hold = asyncio.Event()
    _, ran, shown = await offered_choice(s, hold=hold)
    sent = len(s.ada.sent)
    red = callback_data(shown, "red")
    await s.fake.user_presses(s.sam, shown["message"], red)
    await until(lambda: ran)  # the first press's option is running
    await s.fake.user_presses(s.sam, shown["message"], red)
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1]["text"] == 'The choice for "PICK_COLOUR" is already being made.'
    hold.set()
    await until(lambda: s.ada.edits)
    assert [e["text"] for e in s.ada.edits] == ["PICK_COLOUR: which colour for the banner?\n\n✓ chosen: red"]
    assert ran == [{"option": "red"}] and len(s.ada.sent) == sent + 1


async def test_a_question_that_can_no_longer_be_edited_is_answered_in_a_new_message(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    _, ran, shown = await offered_choice(s)
    sent = len(s.ada.sent)
    s.fake.fail_next("editMessageText", status=400, description="Bad Request: message can't be edited")
    with caplog.at_level(logging.WARNING):
        await s.fake.user_presses(s.sam, shown["message"], callback_data(shown, "Cancel"))
        await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1]["text"] == 'Cancelled "PICK_COLOUR".' and ran == [] and not s.ada.edits
    assert "could not show '✗ cancelled' on the message pressed" in caplog.text


async def test_a_reply_keyboard_offers_fixed_answers_and_a_tap_is_heard_as_text(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    chat = s.fake.private(s.sam, s.ada)
    rt = s.runtime("Ada")
    offered = ReplyKeyboard(("Tea", "Coffee", "Neither"))
    s.brain.plans["Ada"] += [plan("Which one, then?"), plan("Tea it is.")]
    await s.fake.user_says(s.sam, chat, "what should I drink?")
    await s.fake.wait_for_sent(s.ada, 1)
    room = await room_of(rt, chat.id)
    await rt.get_service("telegram").send_to_room(room, Reply(text="Tea or coffee?", keyboard=offered))
    asked = s.ada.sent[-1]
    assert asked["reply_markup"] == {
        "keyboard": [[{"text": "Tea"}, {"text": "Coffee"}, {"text": "Neither"}]],
        "resize_keyboard": True,
        "one_time_keyboard": True,
    }
    assert "reply_markup" not in asked["message"]  # not part of the message, as Telegram returns it
    assert chat.keyboard == asked["reply_markup"]
    await s.fake.user_taps(s.sam, chat, "Tea")
    assert chat.keyboard is None  # one time: hidden once tapped
    await s.fake.wait_for_sent(s.ada, 3)
    assert s.ada.sent[-1]["text"] == "Tea it is."
    heard = await stored(rt, room.id, lambda m: m.content.text == "Tea")
    assert heard.content.button is None  # an ordinary message
    # Taken away again, and a reply with buttons shows its buttons, not a keyboard.
    await rt.get_service("telegram").send_to_room(room, Reply(text="Noted.", keyboard=ReplyKeyboard.removed()))
    assert s.ada.sent[-1]["reply_markup"] == {"remove_keyboard": True}
    await rt.get_service("telegram").send_to_room(
        room, Reply(text="Vote?", buttons=tuple(VOTE[:2]), keyboard=ReplyKeyboard(("Yes", "No")))
    )
    assert "inline_keyboard" in s.ada.sent[-1]["reply_markup"]


async def test_a_reply_with_a_picture_carries_its_keyboard_on_the_picture(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    picture = OutgoingFile("cat.png", "image/png", data=make_png(2, 2))
    await s.fake.user_says(s.sam, s.group, "show me the cat")
    rt = s.runtime("Ada")
    room = await room_of(rt, s.group.id)
    before = len(s.ada.sent)
    await rt.get_service("telegram").send_to_room(
        room, Reply.of_content({"text": "Here is the cat. Like it?", "files": [picture], "buttons": VOTE})
    )
    (photo,) = s.ada.sent[before:]
    assert photo["kind"] == "photo" and photo["text"] == "Here is the cat. Like it?"
    assert [b["text"] for b in photo["reply_markup"]["inline_keyboard"][0]] == ["One", "Two", "Docs"]
    assert photo["message"]["reply_markup"] == photo["reply_markup"]  # kept, for a press to find its label


async def test_a_reply_with_several_pictures_and_buttons_sends_the_last_picture_alone_with_them(scene) -> None:
    # An album cannot carry a keyboard: the pictures before the last go as one, the last with the buttons.
    s = scene
    await s.start(with_brann=False)
    pictures = [OutgoingFile(f"cat{n}.png", "image/png", data=make_png(2, 2)) for n in range(3)]
    await s.fake.user_says(s.sam, s.group, "show me the cats")
    rt = s.runtime("Ada")
    room = await room_of(rt, s.group.id)
    before = len(s.ada.sent)
    await rt.get_service("telegram").send_to_room(
        room, Reply.of_content({"text": "The cats. Which one?", "files": pictures, "buttons": VOTE})
    )
    first, second, last = s.ada.sent[before:]
    assert first.get("album") is not None and first.get("album") == second.get("album") and "album" not in last
    assert first["text"] == "The cats. Which one?"
    assert first["reply_markup"] is None and second["reply_markup"] is None
    assert [b["text"] for b in last["reply_markup"]["inline_keyboard"][0]] == ["One", "Two", "Docs"]
