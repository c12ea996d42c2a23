"""End to end on Discord: INTERACTION_RECEIVED for every slash command (its name, options, who and
where), after the MESSAGE_RECEIVED of the message for ``/chat`` and ``/ask``; a choice in a menu is
heard the same way as a press. The first test is a plugin author's to copy: a plugin that counts
the commands people use."""

from __future__ import annotations

from bot.kernel.buttons import Button, Menu, Press
from bot.kernel.outgoing import Reply
from bot.kernel.slash_commands import SlashCommand
from bot.runtime.events import Event, InteractionReceived, MessageReceived
from platforms.discord._mapping import discord_id

from .scene import plan, until
from .test_e2e_menus import ada_offers


async def test_a_plugin_hears_every_slash_command_with_its_options_who_and_where(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    used: list[SlashCommand] = []

    async def on_interaction(event: InteractionReceived) -> None:
        if event.command is not None:  # a slash command (a press carries ``press`` instead)
            used.append(event.command)

    rt.on(InteractionReceived, on_interaction)
    troupe = await s.fake.invoke_command(s.sam, s.general, s.ada, "troupe", options={"action": "follow"})
    await s.fake.wait_for_response(troupe)
    (command,) = await until(lambda: used)
    assert command.name == "troupe" and dict(command.options) == {"action": "follow"}
    assert command.entity_id == discord_id(rt.agent_id, s.sam.id)
    assert command.room_id == discord_id(rt.agent_id, s.general.id)
    assert command.world_id == discord_id(rt.agent_id, s.guild.id) and command.interaction_id == str(troupe.id)
    s.brain.plans["Ada"].append(plan("A summary."))
    summary = await s.fake.invoke_command(s.cleo, s.general, s.ada, "summarize", options={"messages": 20})
    await s.fake.wait_for_response(summary)
    await until(lambda: len(used) == 2)
    assert (used[1].name, dict(used[1].options), used[1].entity_id) == (
        "summarize",
        {"messages": 20},
        discord_id(rt.agent_id, s.cleo.id),
    )
    dm = s.fake.dm_channel(s.sam, s.ada)
    status = await s.fake.invoke_command(s.sam, dm, s.ada, "troupe")
    await s.fake.wait_for_response(status)
    await until(lambda: len(used) == 3)
    assert used[2].options == {} and used[2].world_id is None and used[2].room_id == discord_id(rt.agent_id, dm.id)


async def test_chat_is_heard_as_its_message_then_the_command(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    heard: list[Event] = []

    async def listen(event: Event) -> None:
        heard.append(event)

    rt.on(MessageReceived, listen)
    rt.on(InteractionReceived, listen)
    s.brain.plans["Ada"].append(plan("Hello Cleo."))
    chat = await s.fake.invoke_command(s.cleo, s.general, s.ada, "chat", options={"message": "hi Ada"})
    await s.fake.wait_for_response(chat, count=2, timeout=60)
    received, interaction = await until(lambda: heard[1:] and heard)
    assert isinstance(received, MessageReceived) and isinstance(interaction, InteractionReceived)
    assert interaction.message is received.message and interaction.press is None
    assert interaction.command is not None and interaction.command.name == "chat"
    assert dict(interaction.command.options) == {"message": "hi Ada"}
    assert interaction.message.metadata.interaction_id == interaction.command.interaction_id == str(chat.id)
    blank = await s.fake.invoke_command(s.cleo, s.general, s.ada, "ask", options={"question": "   "})
    await s.fake.wait_for_response(blank)  # refused: nothing to answer, and no message
    last = await until(lambda: heard[2:] and heard[-1])
    assert isinstance(last, InteractionReceived) and last.message is None
    assert last.command is not None and last.command.name == "ask"


async def test_a_choice_in_a_menu_is_heard_as_a_press(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    pressed: list[Press] = []

    async def on_interaction(event: InteractionReceived) -> None:
        if event.press is not None:
            pressed.append(event.press)

    rt.on(InteractionReceived, on_interaction)
    options = (Button("Tea", value="tea"), Button("Coffee", value="coffee"))
    offer = await ada_offers(s, Reply(text="Tea or coffee?", menu=Menu.of(options, max_values=2)))
    s.brain.plans["Ada"].append(plan("Both, then."))
    await s.fake.user_selects(s.sam, offer, ["tea", "coffee"])
    (press,) = await until(lambda: pressed)
    assert press.values == ("tea", "coffee") and press.text == "Tea, Coffee"
