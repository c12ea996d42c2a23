"""End to end on Discord: a reply's menu is a string select beside its buttons; a choice in it
reaches the character as a press does (deferred at once, one message however many options were
chosen, claimed once when redelivered or chosen twice, the question edited when the answer
settles it); a button that asks for text opens a modal, and its submission is the press, with
the text written, handled once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.kernel.buttons import Button, Menu, Press, Settled, TextPrompt
from bot.kernel.outgoing import Reply
from bot.runtime.components import Action, ActionContext, ActionResult
from bot.runtime.events import InteractionReceived
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import FakeChannel, FakeMessage
from .scene import Scene, plan, until
from .test_e2e_buttons import presses_in

COLOURS = tuple(
    Button(name.title(), value=f"colour:{name}") for name in ("red", "green", "blue", "gold", "grey", "teal")
)


def offering(name: str, reply: Reply) -> Action:
    """An action ``name`` that answers with ``reply`` (what a plugin's action would do)."""

    async def offer(context: ActionContext) -> ActionResult:
        await context.reply(reply)
        return ActionResult()

    return Action(name, offer)


async def ada_offers(s: Scene, reply: Reply, channel: FakeChannel | None = None) -> FakeMessage:
    """Sam asks Ada; she answers with ``reply`` (her last message, with its components)."""
    before = len(s.ada.sent)
    name = f"OFFER_{before}"
    s.runtime("Ada").register_action(offering(name, reply))
    s.brain.plans["Ada"].append(plan("", name))
    await s.fake.user_says(s.sam, channel or s.general, f"{s.ada.mention} what are the options?")
    return await until(lambda: next((m for m in s.ada.sent[before:] if m.components), None), timeout=60)


def settling(name: str) -> Action:
    """An action that settles the press it answers: "✓ chosen: <what was said>" on the question."""

    async def settle(context: ActionContext) -> ActionResult:
        press = context.message.content.button
        assert press is not None
        await context.reply(Reply(settles=Settled(f"✓ chosen: {press.text}")))
        return ActionResult()

    return Action(name, settle)


async def test_a_menu_is_a_select_in_the_first_row_with_the_buttons_after_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    menu = Menu.of(COLOURS, "Pick a colour")
    offer = await ada_offers(s, Reply(text="Which colour?", menu=menu, buttons=(Button("Cancel", value="cancel"),)))
    select, cancel = (row["components"] for row in offer.components)
    assert [(c["type"], c["custom_id"]) for c in select] == [(3, "troupe-menu")]
    assert select[0]["placeholder"] == "Pick a colour" and (select[0]["min_values"], select[0]["max_values"]) == (1, 1)
    assert [(o["label"], o["value"]) for o in select[0]["options"]] == [(b.label, b.value) for b in COLOURS]
    assert [(c["type"], c["custom_id"]) for c in cancel] == [(2, "troupe:cancel")]


async def test_a_choice_reaches_the_character_once_even_redelivered_and_chosen_twice(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, Reply(text="Which colour?", menu=Menu.of(COLOURS)))
    s.brain.plans["Ada"].append(plan("Green it is."))
    before = len(s.ada.sent)
    choice = await s.fake.user_selects(s.cleo, offer, ["colour:green"])
    (callback,) = await s.fake.wait_for_response(choice)
    assert callback.type == 6  # deferred: nothing visible changes
    answer = (await s.fake.wait_for_sent(s.ada, before + 1))[-1]
    assert answer.content == "Green it is." and answer.reference is offer
    await s.fake.redeliver(choice)  # the same INTERACTION_CREATE again
    deferrals = await until(
        lambda: (
            (found := [r for r in s.fake.requests if r.path.startswith(f"/interactions/{choice.id}/")])[1:] and found
        )
    )
    assert [r.status for r in deferrals][1] == 400  # already acknowledged
    await asyncio.sleep(0.5)  # what the redelivered choice could have set off
    assert [m.content for m in s.ada.sent[before:]] == ["Green it is."]
    rt = s.runtime("Ada")
    (press,) = await presses_in(rt, s.general)
    assert press.content.text == "Green" and press.content.button == Press("colour:green", "Green")
    assert press.entity_id == discord_id(rt.agent_id, s.cleo.id)
    assert press.content.in_reply_to == discord_id(rt.agent_id, offer.id)
    s.brain.plans["Ada"].append(plan("Green again, then."))
    await s.fake.user_selects(s.cleo, offer, ["colour:green"])  # chosen again: a new choice of its own
    await s.fake.wait_for_sent(s.ada, before + 2)
    assert len(await presses_in(rt, s.general)) == 2


async def test_several_options_chosen_come_in_one_message(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, Reply(text="Which colours?", menu=Menu.of(COLOURS, max_values=3)))
    assert offer.components[0]["components"][0]["max_values"] == 3
    s.brain.plans["Ada"].append(plan("A bold mix."))
    await s.fake.user_selects(s.sam, offer, ["colour:gold", "colour:red"])
    await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1)
    rt = s.runtime("Ada")
    (press,) = await presses_in(rt, s.general)
    chosen = press.content.button
    assert chosen is not None and chosen.values == ("colour:gold", "colour:red")
    assert press.content.text == "Gold, Red" and chosen.also == (Press("colour:red", "Red"),)
    turn = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "Gold, Red" in turn
    with pytest.raises(LookupError):  # Discord would not let four go
        await s.fake.user_selects(s.sam, offer, ["colour:gold", "colour:red", "colour:teal", "colour:grey"])


async def test_an_answer_that_settles_a_choice_edits_the_question_and_removes_the_menu(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    rt.register_action(settling("SETTLE"))
    offer = await ada_offers(s, Reply(text="Which colour?", menu=Menu.of(COLOURS)))
    s.brain.plans["Ada"].append(plan("", "SETTLE"))
    sent = len(s.ada.sent)
    await s.fake.user_selects(s.sam, offer, ["colour:teal"])
    await until(lambda: s.ada.edits)
    ((edited, body),) = s.ada.edits
    assert edited is offer and body["components"] == []
    assert offer.content == "Which colour?\n\n✓ chosen: Teal" and not offer.components
    assert len(s.ada.sent) == sent  # said on the question, not below it
    with pytest.raises(LookupError):  # nothing left to choose in
        await s.fake.user_selects(s.sam, offer, ["colour:teal"])


async def test_a_button_that_asks_opens_a_modal_whose_answer_reaches_the_character_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    heard: list[InteractionReceived] = []

    async def on_interaction(event: InteractionReceived) -> None:
        heard.append(event)

    rt.on(InteractionReceived, on_interaction)
    other = Button(
        "Other…", value="colour:other", asks=TextPrompt("Which colour, then?", placeholder="mauve", max_length=40)
    )
    offer = await ada_offers(s, Reply(text="Which colour?", buttons=(COLOURS[0], other)))
    assert [c["custom_id"] for c in offer.components[0]["components"]] == [
        "troupe:colour:red",
        "troupe-ask:colour:other",
    ]
    prompts = len(s.brain.prompts)
    opened = await s.fake.user_clicks(s.sam, offer, "troupe-ask:colour:other")
    (callback,) = await s.fake.wait_for_response(opened)
    assert callback.type == 9 and opened.modal is not None  # a modal, within Discord's 3 s
    assert opened.modal["title"] == "Other…" and opened.modal["custom_id"] == "troupe-ask:colour:other"
    (field,) = [c for row in opened.modal["components"] for c in row["components"]]
    assert (field["label"], field["placeholder"], field["max_length"]) == ("Which colour, then?", "mauve", 40)
    await asyncio.sleep(0.3)
    assert len(s.brain.prompts) == prompts and await presses_in(rt, s.general) == []  # nothing said yet
    s.brain.plans["Ada"].append(plan("Mauve, lovely."))
    before = len(s.ada.sent)
    submitted = await s.fake.user_submits(s.sam, opened, {field["custom_id"]: "mauve"})
    (deferred,) = await s.fake.wait_for_response(submitted)
    assert deferred.type == 6
    answer = (await s.fake.wait_for_sent(s.ada, before + 1))[-1]
    assert answer.content == "Mauve, lovely." and answer.reference is offer
    await s.fake.redeliver(submitted)
    await until(lambda: len([r for r in s.fake.requests if r.path.startswith(f"/interactions/{submitted.id}/")]) == 2)
    await asyncio.sleep(0.5)
    assert [m.content for m in s.ada.sent[before:]] == ["Mauve, lovely."]
    (press,) = await presses_in(rt, s.general)
    assert press.content.text == "mauve"
    assert press.content.button == Press("colour:other", "Other…", answer="mauve")
    assert press.metadata.interaction_id == str(submitted.id)
    turn = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "mauve" in turn
    # Heard as each delivery comes (the redelivered one too); answered once.
    assert {e.press for e in heard} == {Press("colour:other", "Other…", answer="mauve")}


async def test_a_modal_is_still_opened_for_a_message_the_store_does_not_know(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    client: Any = rt.get_service("discord").client
    from platforms.discord._presses import components_of

    view = components_of([Button("Tell me", value="tell", asks=TextPrompt("What?"))])
    await client.get_channel(s.general.id).send("Old question", view=view)
    (old,) = await s.fake.wait_for_sent(s.ada, 1)
    opened = await s.fake.user_clicks(s.sam, old, "troupe-ask:tell")
    (callback,) = await s.fake.wait_for_response(opened)
    assert callback.type == 9 and opened.modal is not None
    (field,) = [c for row in opened.modal["components"] for c in row["components"]]
    assert field["label"] == "Tell me"  # the button's label is the question


async def test_outside_channel_ids_a_choice_is_ignored_and_no_modal_opens(scene) -> None:
    s = scene
    await s.start({"CHANNEL_IDS": str(s.general.id)}, with_brann=False)
    rt = s.runtime("Ada")
    client: Any = rt.get_service("discord").client
    from platforms.discord._presses import components_of

    # A message left from before CHANNEL_IDS (Ada does not post there now).
    view = components_of([Button("Tell me", value="tell", asks=TextPrompt("What?"))], Menu.of(COLOURS))
    await client.get_channel(s.lounge.id).send("Old question", view=view)
    (old,) = await s.fake.wait_for_sent(s.ada, 1)
    prompts = len(s.brain.prompts)
    opened = await s.fake.user_clicks(s.sam, old, "troupe-ask:tell")
    chosen = await s.fake.user_selects(s.sam, old, ["colour:red"])
    assert [r.type for r in await s.fake.wait_for_response(opened)] == [6]  # deferred: no modal
    assert [r.type for r in await s.fake.wait_for_response(chosen)] == [6]
    await asyncio.sleep(0.5)
    assert len(s.ada.sent) == 1 and len(s.brain.prompts) == prompts
    assert await presses_in(rt, s.lounge) == []
