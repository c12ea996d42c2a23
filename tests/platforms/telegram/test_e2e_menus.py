"""End to end on Telegram, which has no select menus nor modals: a reply's menu is shown as
buttons (its options first), a tap choosing that option as a press; a button that asks for
text sends the question as a ForceReply, and the asker's reply to it is the press, with the text
as its answer, handled once; an answer that settles it edits the message the button was under."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.kernel.buttons import Button, Menu, Press, Settled, TextPrompt
from bot.kernel.outgoing import Reply
from bot.runtime.components import Action, ActionContext, ActionResult
from platforms.telegram._mapping import room_id

from .scene import Scene, plan, until
from .test_e2e_buttons import room_of, stored

COLOURS = (
    Button("Red", value="colour:red"),
    Button("Green", value="colour:green"),
    Button("Blue", value="colour:blue"),
)
OTHER = Button("Other…", value="colour:other", asks=TextPrompt("Which colour, then?", placeholder="mauve"))


async def ada_posts(s: Scene, chat: Any, reply: Reply) -> dict[str, Any]:
    """Ada posts ``reply`` in a chat Sam opened by writing there first; the last message sent."""
    answered = len(s.ada.sent)
    await s.fake.user_says(s.sam, chat, "hello there")
    if chat.type == "private":
        await s.fake.wait_for_sent(s.ada, answered + 1)
    rt = s.runtime("Ada")
    room = await room_of(rt, chat.id)
    before = len(s.ada.sent)
    await rt.get_service("telegram").send_to_room(room, reply)
    return s.ada.sent[before:][-1]


def settling() -> Action:
    """SETTLE: the press it answers settled on its question, "✓ chosen: <what was said>"."""

    async def settle(context: ActionContext) -> ActionResult:
        press = context.message.content.button
        assert press is not None
        await context.reply(Reply(settles=Settled(f"✓ chosen: {press.text}")))
        return ActionResult()

    return Action("SETTLE", settle)


async def test_a_menu_is_shown_as_buttons_and_a_tap_chooses_its_option(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    chat = s.fake.private(s.sam, s.ada)
    reply = Reply(text="Which colour?", menu=Menu.of(COLOURS, "Pick one"), buttons=(Button("Cancel", value="cancel"),))
    asked = await ada_posts(s, chat, reply)
    shown = [b["callback_data"] for row in asked["reply_markup"]["inline_keyboard"] for b in row]
    assert shown == ["colour:red", "colour:green", "colour:blue", "cancel"]
    s.brain.plans["Ada"].append(plan("Green it is."))
    sent = len(s.ada.sent)
    query = await s.fake.user_presses(s.sam, asked["message"], "colour:green")
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.fake.answered(query) and s.ada.sent[-1]["text"] == "Green it is."
    rt = s.runtime("Ada")
    press = await stored(rt, room_id(rt.agent_id, chat.id), lambda m: m.content.button)
    assert press.content.button == Press("colour:green", "Green") and press.content.text == "Green"


async def test_a_button_that_asks_sends_a_force_reply_and_the_answer_is_the_press_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    rt.register_action(settling())
    asked = await ada_posts(s, s.group, Reply(text="Which colour?", buttons=(COLOURS[0], OTHER)))
    prompts, sent = len(s.brain.prompts), len(s.ada.sent)
    query = await s.fake.user_presses(s.cleo, asked["message"], "colour:other")
    question = (await s.fake.wait_for_sent(s.ada, sent + 1))[-1]
    assert s.fake.answered(query)
    markup = question["reply_markup"]
    assert markup["force_reply"] is True and markup["selective"] is True
    assert markup["input_field_placeholder"] == "mauve"
    assert question["text"] == "Cleo, Which colour, then?"  # names the asker: only their app opens a reply
    said = await stored(rt, room_id(rt.agent_id, s.group.id), lambda m: m.content.text == question["text"])
    assert said.entity_id == rt.agent_id  # the conversation shows the question
    await asyncio.sleep(0.3)
    assert len(s.brain.prompts) == prompts  # nothing for the character yet
    s.brain.plans["Ada"].append(plan("", "SETTLE"))
    await s.fake.user_says(s.cleo, s.group, "mauve", reply_to=question["message"])
    await until(lambda: s.ada.edits)
    (edit,) = s.ada.edits
    assert edit["message_id"] == asked["message"]["message_id"]
    assert edit["text"] == "Which colour?\n\n✓ chosen: mauve" and "reply_markup" not in edit["message"]
    press = await stored(rt, room_id(rt.agent_id, s.group.id), lambda m: m.content.button)
    assert press.content.text == "mauve"
    assert press.content.button == Press("colour:other", "Other…", answer="mauve")
    (update,) = [u for u in s.ada.delivered if (u.get("message") or {}).get("text") == "mauve"]
    s.fake.redeliver(s.ada, update["update_id"])  # its confirmation never reached Telegram
    await asyncio.sleep(0.5)
    assert len(s.ada.edits) == 1 and len(s.ada.sent) == sent + 1
    presses = [m for m in await rt.store.get_memories(table="messages", room_id=press.room_id) if m.content.button]
    assert len(presses) == 1


async def test_a_reply_to_the_question_by_someone_else_is_an_ordinary_message(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    asked = await ada_posts(s, s.group, Reply(text="Which colour?", buttons=(OTHER,)))
    sent = len(s.ada.sent)
    await s.fake.user_presses(s.cleo, asked["message"], "colour:other")
    question = (await s.fake.wait_for_sent(s.ada, sent + 1))[-1]
    s.brain.plans["Ada"].append(plan("Noted, Sam."))
    await s.fake.user_says(s.sam, s.group, "teal", reply_to=question["message"])
    heard = await stored(rt, room_id(rt.agent_id, s.group.id), lambda m: m.content.text == "teal")
    assert heard.content.button is None  # Sam was not asked


def keyboard_of(message: dict[str, Any]) -> list[list[str]]:
    return [[b["text"] for b in row] for row in message["reply_markup"]["inline_keyboard"]]


async def test_a_menu_of_several_options_ticks_them_and_done_sends_them_in_one_press_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    chat = s.fake.private(s.sam, s.ada)
    menu = Menu.of(COLOURS, max_values=2)
    asked = await ada_posts(s, chat, Reply(text="Which colours?", menu=menu, buttons=(Button("Cancel", value="no"),)))
    question = asked["message"]
    assert keyboard_of(question) == [["Red", "Green", "Blue"], ["Done"], ["Cancel"]]
    done = question["reply_markup"]["inline_keyboard"][1][0]["callback_data"]
    prompts = len(s.brain.prompts)
    refused = await s.fake.user_presses(s.sam, question, done)  # nothing ticked yet
    await until(lambda: s.fake.answered(refused))
    assert s.fake.answered(refused)[0][2] == "Choose at least 1."
    for edits, value in enumerate(("colour:red", "colour:blue", "colour:red", "colour:green"), start=1):
        tap = await s.fake.user_presses(s.sam, question, value)
        await until(lambda: len(s.ada.edits) == edits)  # noqa: B023 - awaited in this very turn
        assert s.fake.answered(tap)
    assert keyboard_of(question) == [["Red", "✓ Green", "✓ Blue"], ["Done"], ["Cancel"]]
    too_many = await s.fake.user_presses(s.sam, question, "colour:red")
    await until(lambda: s.fake.answered(too_many))
    assert s.fake.answered(too_many)[0][2] == "Choose at most 2." and len(s.ada.edits) == 4
    assert len(s.brain.prompts) == prompts  # ticking says nothing to the character
    s.brain.plans["Ada"].append(plan("Green and blue, then."))
    sent = len(s.ada.sent)
    query = await s.fake.user_presses(s.sam, question, done)
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1]["text"] == "Green and blue, then."
    s.fake.redeliver(s.ada, s.fake.presses[query].update_id)  # its confirmation never reached Telegram
    await asyncio.sleep(0.5)
    assert len(s.ada.sent) == sent + 1
    memories = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat.id))
    (press,) = [m for m in memories if m.content.button]
    assert press.content.button == Press("colour:green", "Green", also=(Press("colour:blue", "Blue"),))
    assert press.content.text == "Green, Blue"
