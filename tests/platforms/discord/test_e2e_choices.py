"""End to end on Discord: CHOOSE_OPTION's buttons (bot.runtime.choices) run the option pressed, once,
without a model call, as on Telegram; the question then shows the choice in place of its buttons
(the bot's own message edited), so it cannot be pressed again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.runtime.choices import offer_options
from platforms.discord._mapping import discord_id
from tests.choices import waiting_choice

from .scene import until


async def offered(
    s: Any, hold: asyncio.Event | None = None, options: list[str] | None = None
) -> tuple[Any, list[Any], Any, list[dict[str, Any]]]:
    """PICK_COLOUR waiting on Sam in #general (red and blue unless ``options``), its options
    shown: the task, its worker's runs, the question as the fake keeps it and its components."""
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} set up the banner")  # answered by the default plan
    await s.fake.wait_for_sent(s.ada, 1)
    rt = s.runtime("Ada")
    task, ran = await waiting_choice(
        rt,
        room_id=discord_id(rt.agent_id, s.general.id),
        entity_id=discord_id(rt.agent_id, s.sam.id),
        description="which colour for the banner?",
        options=options,
        hold=hold,
    )
    (offer,) = await offer_options(rt, task)
    assert offer.content.buttons is not None and offer.content.buttons[-1].label == "Cancel"
    shown = s.ada.sent[-1]
    return task, ran, shown, [c for row in shown.components for c in row["components"]]


async def test_choice_buttons_on_discord_run_the_option_pressed_once_without_a_model_call(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    task, ran, shown, buttons = await offered(s)
    assert shown.content == "PICK_COLOUR: which colour for the banner?"
    assert [b["label"] for b in buttons] == ["red", "blue", "Cancel"]
    rt = s.runtime("Ada")
    prompts, sent = len(s.brain.prompts), len(s.ada.sent)
    first = await s.fake.user_clicks(s.sam, shown, buttons[1]["custom_id"])
    await until(lambda: s.ada.edits)
    ((edited, body),) = s.ada.edits
    assert edited is shown and body["components"] == [] and ran == [{"option": "blue"}]
    assert shown.content == "PICK_COLOUR: which colour for the banner?\n\n✓ chosen: blue" and not shown.components
    assert len(s.ada.sent) == sent  # said on the question, not below it
    with pytest.raises(LookupError):  # no button left to press again
        await s.fake.user_clicks(s.sam, shown, buttons[1]["custom_id"])
    assert [r.type for r in first.responses] == [6]  # deferred
    assert len(s.brain.prompts) == prompts  # no model call
    assert await rt.store.get_task(str(task.id)) is None
    async with asyncio.timeout(30):  # the stored question follows the edit once Discord answered it
        while (question := await rt.store.get_memory(discord_id(rt.agent_id, shown.id))) is None or (
            question.content.buttons is not None
        ):
            await asyncio.sleep(0.01)
    assert "✓ chosen: blue" in str(question.content.text)


@pytest.mark.parametrize("in_a_menu", [False, True])
async def test_a_double_click_on_discord_runs_the_option_once_and_edits_the_question_once(scene, in_a_menu) -> None:
    s = scene
    await s.start(with_brann=False)
    hold = asyncio.Event()
    # Six options are offered in a menu; two as buttons.
    options = ["red", "green", "blue", "gold", "grey", "teal"] if in_a_menu else None
    _, ran, shown, components = await offered(s, hold, options=options)

    async def choose_red() -> None:
        if in_a_menu:
            await s.fake.user_selects(s.sam, shown, [components[0]["options"][0]["value"]])
        else:
            await s.fake.user_clicks(s.sam, shown, components[0]["custom_id"])

    sent = len(s.ada.sent)
    await choose_red()
    await until(lambda: ran)  # the first click's option is running; the buttons still show
    await choose_red()
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1].content == 'The choice for "PICK_COLOUR" is already being made.'
    hold.set()
    await until(lambda: s.ada.edits)
    assert [body["content"] for _, body in s.ada.edits] == [
        "PICK_COLOUR: which colour for the banner?\n\n✓ chosen: red"
    ]
    assert ran == [{"option": "red"}]


async def test_many_options_are_offered_in_a_menu_and_a_choice_runs_once_and_settles_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    names = ["red", "green", "blue", "gold", "grey", "teal", "plum"]
    _, ran, shown, (select, cancel) = await offered(s, options=names)
    assert [o["label"] for o in select["options"]] == names and select["placeholder"] == "Choose for PICK_COLOUR"
    assert cancel["label"] == "Cancel"
    prompts, sent = len(s.brain.prompts), len(s.ada.sent)
    choice = await s.fake.user_selects(s.sam, shown, [select["options"][5]["value"]])
    await until(lambda: s.ada.edits)
    assert ran == [{"option": "teal"}] and [r.type for r in choice.responses] == [6]
    assert shown.content == "PICK_COLOUR: which colour for the banner?\n\n✓ chosen: teal" and not shown.components
    assert len(s.ada.sent) == sent and len(s.brain.prompts) == prompts  # on the question; no model call
    await s.fake.redeliver(choice)
    await until(lambda: len([r for r in s.fake.requests if r.path.startswith(f"/interactions/{choice.id}/")]) == 2)
    await asyncio.sleep(0.5)
    assert ran == [{"option": "teal"}] and len(s.ada.edits) == 1
