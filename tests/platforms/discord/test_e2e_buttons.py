"""End to end on Discord: buttons. A reply's buttons are components on its last message (links
as link buttons, rows of at most five; with a picture, on the picture's message); a press is
deferred at once, before the (slow) model answers, and reaches the character as a message from
the person who pressed it, in the channel, thread or DM of the message it was under, answered
there as a normal reply to that message, also after a restart; a press Discord no longer knows is
still handled, a redelivered one once; components of other code and presses outside CHANNEL_IDS
are left alone."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import discord

from bot.kernel.buttons import Button, Press, buttons_in
from bot.kernel.outgoing import OutgoingFile, Reply
from bot.kernel.types import ChannelType, Memory
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import Action, ActionContext, ActionResult
from platforms.discord._mapping import discord_id
from platforms.discord._presses import components_of

from ...fakes.discord_server import FakeChannel, FakeMessage
from ...fakes.openai_server import make_png
from .scene import Scene, plan, until

VOTE = [
    {"label": "One", "value": "vote:1"},
    {"label": "Two", "value": "vote:2"},
    {"label": "Docs", "url": "https://example.com/docs"},
]


def offering(name: str, buttons: list[dict[str, Any]], text: str) -> Action:
    """An action ``name`` that answers ``text`` with ``buttons`` (what a plugin's action would do)."""

    async def offer(context: ActionContext) -> ActionResult:
        await context.reply(Reply(text=text, buttons=tuple(Button.parse(b) for b in buttons)))
        return ActionResult()

    return Action(name, offer)


async def ada_offers(
    s: Scene, channel: FakeChannel, buttons: list[dict[str, Any]] = VOTE, text: str = "Pick one."
) -> FakeMessage:
    """Sam asks Ada in ``channel``; she answers ``text`` with ``buttons`` (her last message)."""
    before = len(s.ada.sent)
    name = f"OFFER_{before}"  # one action per offer: an action is registered once
    s.runtime("Ada").register_action(offering(name, buttons, text))
    s.brain.plans["Ada"].append(plan("", name))
    await s.fake.user_says(s.sam, channel, f"{s.ada.mention} what are the options?")
    # The buttons ride on the last part: once it is out, the offer is.
    return await until(lambda: next((m for m in s.ada.sent[before:] if m.components), None), timeout=60)


def shown(message: FakeMessage) -> list[list[tuple[int, str]]]:
    return [[(c["style"], c.get("custom_id") or c["url"]) for c in row["components"]] for row in message.components]


async def stored(rt: AgentRuntime, room_id: str, check: Any) -> Memory:
    async with asyncio.timeout(60):
        while True:
            found = [m for m in await rt.store.get_memories(table="messages", room_id=room_id) if check(m)]
            if found:
                return found[0]
            await asyncio.sleep(0.02)


def press_of(m: Memory) -> bool:
    return m.content.button is not None


async def presses_in(rt: AgentRuntime, channel: FakeChannel) -> list[Memory]:
    """The presses stored in ``channel``'s room."""
    return [
        m
        for m in await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, channel.id))
        if press_of(m)
    ]


async def test_a_long_replys_buttons_are_components_on_its_last_part_with_links_as_link_buttons(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    last = await ada_offers(s, s.general, text="word " * 1000)  # 5000 characters: three messages
    first, second, third = s.ada.sent[-3:]
    assert third is last and first.components == [] and second.components == []
    assert shown(last) == [[(1, "troupe:vote:1"), (1, "troupe:vote:2"), (5, "https://example.com/docs")]]
    assert [c["label"] for c in last.components[0]["components"]] == ["One", "Two", "Docs"]
    assert first.reference is not None and third.reference is None  # the reply quotes Sam once
    rt = s.runtime("Ada")
    kept = await stored(rt, discord_id(rt.agent_id, s.general.id), lambda m: m.id == discord_id(rt.agent_id, last.id))
    assert [
        b.record() for b in kept.content.buttons or ()
    ] == VOTE  # the last part is stored with the buttons it showed
    said = await stored(rt, discord_id(rt.agent_id, s.general.id), lambda m: m.id == discord_id(rt.agent_id, first.id))
    assert said.content.buttons is None


async def test_many_buttons_go_in_rows_of_at_most_five(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    many = [{"label": f"B{i}", "value": f"b{i}"} for i in range(12)]
    last = await ada_offers(s, s.general, many, text="Many.")
    assert [len(row) for row in shown(last)] == [5, 5, 2]
    assert last.content == "Many."


async def test_a_press_reaches_the_character_from_the_presser_and_is_answered_under_the_message(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, s.general)
    s.brain.plans["Ada"].append(plan("Two it is."))
    click = await s.fake.user_clicks(s.cleo, offer, "troupe:vote:2")
    (callback,) = await s.fake.wait_for_response(click)
    assert callback.type == 6  # a deferred update: nothing visible changes
    answer = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1))[-1]
    assert answer.content == "Two it is." and answer.channel is s.general and answer.reference is offer
    assert click.followups == []  # a normal message, not an interaction followup
    rt = s.runtime("Ada")
    press = await stored(rt, discord_id(rt.agent_id, s.general.id), press_of)
    assert press.content.text == "Two" and press.content.button == Press("vote:2", "Two")
    assert press.entity_id == discord_id(rt.agent_id, s.cleo.id)
    assert press.content.in_reply_to == discord_id(rt.agent_id, offer.id)
    assert press.metadata.is_reply is True and press.content.source == "discord"
    turn = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "Two" in turn


async def test_a_press_in_a_thread_and_in_a_dm_stays_there(scene) -> None:
    s = scene
    thread = s.fake.add_thread(s.general, "plans")
    await s.start(with_brann=False)
    offer = await ada_offers(s, thread)
    s.brain.plans["Ada"].append(plan("In the thread."))
    await s.fake.user_clicks(s.sam, offer, "troupe:vote:1")
    answer = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1))[-1]
    assert answer.channel is thread and answer.content == "In the thread."
    rt = s.runtime("Ada")
    press = await stored(rt, discord_id(rt.agent_id, thread.id), press_of)
    assert press.content.channel_type == ChannelType.THREAD.value
    dm = s.fake.dm_channel(s.sam, s.ada)
    offer = await ada_offers(s, dm)
    s.brain.plans["Ada"].append(plan("In private."))
    await s.fake.user_clicks(s.sam, offer, "troupe:vote:2")
    answer = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1))[-1]
    assert answer.channel is dm and answer.content == "In private."
    press = await stored(rt, discord_id(rt.agent_id, dm.id), press_of)
    assert press.entity_id == discord_id(rt.agent_id, s.sam.id) and press.world_id is None


async def test_a_press_is_deferred_before_the_slow_model_answers(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(with_brann=False)
    offer = await ada_offers(s, s.general)
    s.openai.latency = 2.0
    s.brain.plans["Ada"].append(plan("Slowly: one."))
    click = await s.fake.user_clicks(s.sam, offer, "troupe:vote:1")
    (callback,) = await s.fake.wait_for_response(click)
    acknowledged = callback.at - click.dispatched[0]
    answer = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1, timeout=60))[-1]
    answered = time.monotonic() - click.dispatched[0]
    assert answer.content == "Slowly: one."
    assert acknowledged < 1.0 and answered >= s.openai.latency  # within Discord's 3 s, before the model answered


async def test_a_press_discord_no_longer_knows_is_still_handled(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, s.general)
    s.fake.interaction_window = 0.0  # every callback comes too late
    s.brain.plans["Ada"].append(plan("Late, but here."))
    with caplog.at_level(logging.DEBUG, logger="platforms.discord._presses"):
        click = await s.fake.user_clicks(s.sam, offer, "troupe:vote:1")
        answer = (await s.fake.wait_for_sent(s.ada, len(s.ada.sent) + 1))[-1]
    assert answer.content == "Late, but here." and click.responses == []
    assert any("10062" in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)


async def test_a_redelivered_press_is_handled_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, s.general)
    s.brain.plans["Ada"].append(plan("Once."))
    before = len(s.ada.sent)
    click = await s.fake.user_clicks(s.sam, offer, "troupe:vote:1")
    await s.fake.wait_for_sent(s.ada, before + 1)
    await s.fake.redeliver(click)
    deferrals = await until(
        lambda: (found := [r for r in s.fake.requests if r.path.startswith(f"/interactions/{click.id}/")])[1:] and found
    )
    first, second = (r.status or 0 for r in deferrals)
    assert first < 300 and second == 400  # the second deferral refused: already acknowledged
    await asyncio.sleep(0.5)  # what the redelivered press could have set off
    assert [m.content for m in s.ada.sent[before:]] == ["Once."]
    assert len(await presses_in(s.runtime("Ada"), s.general)) == 1


async def test_components_of_other_code_are_left_to_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    client = rt.get_service("discord").client
    pressed: list[str] = []

    class Poll(discord.ui.View):
        @discord.ui.button(label="Yes", custom_id="poll:yes")
        async def yes(self, interaction: discord.Interaction, button: Any) -> None:
            pressed.append(str(button.custom_id))
            await interaction.response.send_message("noted", ephemeral=True)

    await client.get_channel(s.general.id).send("Poll", view=Poll(timeout=None))
    (poll,) = await s.fake.wait_for_sent(s.ada, 1)
    click = await s.fake.user_clicks(s.sam, poll, "poll:yes")
    (callback,) = await s.fake.wait_for_response(click)
    assert callback.type == 4 and pressed == ["poll:yes"]  # the view answered; troupe did not defer it
    await asyncio.sleep(0.3)
    assert len(click.responses) == 1 and len(s.ada.sent) == 1
    assert await presses_in(rt, s.general) == []


async def test_a_press_in_a_channel_outside_channel_ids_is_ignored(scene) -> None:
    s = scene
    await s.start({"CHANNEL_IDS": str(s.general.id)}, with_brann=False)
    rt = s.runtime("Ada")
    # Ada does not post there (SEND_MESSAGE refuses): a message left from before CHANNEL_IDS.
    client = rt.get_service("discord").client
    await client.get_channel(s.lounge.id).send("Old vote", view=components_of(buttons_in({"buttons": VOTE})))
    (old,) = await s.fake.wait_for_sent(s.ada, 1)
    before = len(s.brain.prompts)
    await s.fake.user_clicks(s.sam, old, "troupe:vote:1")
    await asyncio.sleep(0.5)
    assert len(s.ada.sent) == 1 and len(s.brain.prompts) == before
    assert await presses_in(rt, s.lounge) == []


async def test_buttons_sent_before_a_restart_still_work(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    offer = await ada_offers(s, s.general)
    assert await s.stop() == 0
    await s.start(with_brann=False)
    await s.fake.wait_connected(s.ada)
    s.brain.plans["Ada"].append(plan("Still counting."))
    before = len(s.ada.sent)
    await s.fake.user_clicks(s.sam, offer, "troupe:vote:1")
    answer = (await s.fake.wait_for_sent(s.ada, before + 1))[-1]
    assert answer.content == "Still counting." and answer.reference is offer


async def test_a_message_the_character_starts_with_a_picture_carries_the_buttons_on_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await ada_offers(s, s.general)  # Sam spoke there: the room is known
    rt = s.runtime("Ada")
    room = await rt.store.get_room(discord_id(rt.agent_id, s.general.id))
    assert room is not None
    before = len(s.ada.sent)
    picture = OutgoingFile.of_bytes(make_png(2, 2), "cat.png")
    await rt.get_service("discord").send_to_room(
        room, Reply.of_content({"text": "The cat. Like it?", "files": [picture], "buttons": VOTE})
    )
    (sent,) = s.ada.sent[before:]
    assert sent.content == "The cat. Like it?" and [a.filename for a in sent.attachments] == ["cat.png"]
    assert shown(sent) == [[(1, "troupe:vote:1"), (1, "troupe:vote:2"), (5, "https://example.com/docs")]]
