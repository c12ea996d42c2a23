"""End to end on Discord: CHOOSE_OPTION's buttons (bot.runtime.choices) run the option pressed, once,
without a model call, as on Telegram."""

from __future__ import annotations

from bot.runtime.choices import offer_options
from platforms.discord._mapping import discord_id
from tests.choices import waiting_choice


async def test_choice_buttons_on_discord_run_the_option_pressed_once_without_a_model_call(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} set up the banner")  # answered by the default plan
    await s.fake.wait_for_sent(s.ada, 1)
    rt = s.runtime("Ada")
    task, ran = await waiting_choice(
        rt,
        room_id=discord_id(rt.agent_id, s.general.id),
        entity_id=discord_id(rt.agent_id, s.sam.id),
        description="which colour for the banner?",
    )
    (offer,) = await offer_options(rt, task)
    shown = s.ada.sent[-1]
    assert shown.content == "PICK_COLOUR: which colour for the banner?"
    buttons = [c for row in shown.components for c in row["components"]]
    assert (
        [b["label"] for b in buttons] == ["red", "blue", "Cancel"]
        and offer.content.buttons is not None
        and offer.content.buttons[2].label == "Cancel"
    )
    prompts, sent = len(s.brain.prompts), len(s.ada.sent)
    first = await s.fake.user_clicks(s.sam, shown, buttons[1]["custom_id"])
    await s.fake.wait_for_sent(s.ada, sent + 1)
    assert s.ada.sent[-1].content == 'Chose blue for "PICK_COLOUR".' and ran == [{"option": "blue"}]
    second = await s.fake.user_clicks(s.sam, shown, buttons[1]["custom_id"])
    await s.fake.wait_for_sent(s.ada, sent + 2)
    assert s.ada.sent[-1].content == "That choice is no longer open." and ran == [{"option": "blue"}]
    assert [r.type for r in (*first.responses, *second.responses)] == [6, 6]  # both deferred
    assert len(s.brain.prompts) == prompts  # no model call for either press
    assert await rt.store.get_task(str(task.id)) is None
