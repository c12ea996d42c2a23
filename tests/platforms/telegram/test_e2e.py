"""End to end on Telegram: the daemon, two characters as two bots, the real python-telegram-bot
and openai clients against local fakes of the Bot API and an OpenAI-compatible API."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from bot.kernel.links import LinkState
from bot.kernel.types import Role, RoomState
from bot.runtime.events import EntityJoined
from platforms.telegram._mapping import entity_id, room_id, world_id

from ...bot.test_adapters import count_world_writes
from ..discord.scene import CHAT_EXAMPLE, CHAT_STYLE, POST_EXAMPLE, POST_STYLE
from .scene import plan, until

RESERVED = "Mind these: _ * [ ] ( ) ~ ` > # + - = | { } . ! and a_b*c (ok)."


async def test_a_private_chat_is_answered_with_a_quoting_reply(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Hello Sam!"))
    asked = await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hi there")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["text"] == "Hello Sam!" and sent[0]["reply_to"] == asked["message_id"]
    assert sent[0]["parse_mode"] == "MarkdownV2" and s.ada.webhook_deletions >= 1
    assert (s.sam.id, "typing") in s.ada.actions


async def test_group_messages_are_answered_when_addressed_or_when_the_model_says_so(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.decisions["Ada"] += ["IGNORE", "RESPOND"]
    s.brain.plans["Ada"] += [plan("You called?"), plan("Joining in.")]
    await s.fake.user_says(s.sam, s.group, "hey @ada_bot, thoughts?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "You called?"
    await s.fake.user_says(s.sam, s.group, "anyone seen my keys?")  # the model says IGNORE
    await until(lambda: sum("Decide what Ada does" in p for p in s.brain.prompts) == 1)
    await s.fake.user_says(s.cleo, s.group, "what a plot twist")  # the model says RESPOND
    assert (await s.fake.wait_for_sent(s.ada, 2))[1]["text"] == "Joining in."


async def test_forum_topics_are_separate_conversations(scene) -> None:
    s = scene
    forum = s.fake.add_group("Guild", members=[s.sam, s.ada], forum=True)
    plot, lore = s.fake.add_topic(forum, "Plot"), s.fake.add_topic(forum, "Lore")
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("About the plot.", "REPLY,FOLLOW_ROOM"), plan("About the lore.")]
    await s.fake.user_says(s.sam, forum, "Ada, follow the plot please", topic=plot)
    await s.fake.wait_for_sent(s.ada, 1)  # one at a time: the scripted plans are taken in order
    await s.fake.user_says(s.sam, forum, "Ada, and the lore?", topic=lore)
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert {(m["thread_id"], m["text"]) for m in sent} == {(plot, "About the plot."), (lore, "About the lore.")}
    async with asyncio.timeout(60):
        while await s.room_state("Ada", forum.id, plot) is not RoomState.FOLLOWED:
            await asyncio.sleep(0.01)
    assert await s.room_state("Ada", forum.id, lore) is None  # following one topic is not following another


async def test_forum_topics_are_conversations_in_the_chat_format(scene) -> None:
    s = scene
    forum = s.fake.add_group("Guild", members=[s.sam, s.ada], forum=True)
    topic = s.fake.add_topic(forum, "Plot")
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("About the plot."))
    await s.fake.user_says(s.sam, forum, "Ada, a twist please", topic=topic)
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["thread_id"] == topic
    (prompt,) = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert CHAT_STYLE in prompt and CHAT_EXAMPLE in prompt
    assert POST_STYLE not in prompt and POST_EXAMPLE not in prompt and "Post Directions" not in prompt


async def test_allowed_chats_limit_where_the_bot_answers(scene) -> None:
    s = scene
    other = s.fake.add_group("Elsewhere", members=[s.sam, s.ada])
    await s.start({"TELEGRAM_ALLOWED_CHATS": f'["{s.group.id}"]'}, with_brann=False)
    s.brain.plans["Ada"].append(plan("Here only."))
    await s.fake.user_says(s.sam, other, "@ada_bot hello?")
    await s.fake.user_says(s.sam, s.group, "@ada_bot hello?")
    await s.fake.wait_for_sent(s.ada, 1)
    await asyncio.sleep(0.2)
    assert [m["chat_id"] for m in s.ada.sent] == [s.group.id]


async def test_long_replies_and_reserved_characters_arrive_intact(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    long = "\n".join(f"Point {i}: keep going." for i in range(230))
    assert 4900 < len(long) < 5200
    s.brain.plans["Ada"] += [plan(long), plan(RESERVED)]
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "give me everything")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    await asyncio.sleep(0.1)
    assert len(s.ada.sent) == 2 and all(len(m["raw"]) <= 4096 for m in sent)
    assert "\n".join(m["text"] for m in sent) == long and all(m["parse_mode"] == "MarkdownV2" for m in sent)
    await s.fake.user_says(s.sam, chat, "and the symbols?")
    assert (await s.fake.wait_for_sent(s.ada, 3))[2]["text"] == RESERVED


async def test_a_429_is_waited_out(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("sendMessage", status=429, retry_after=1, bot=s.ada)
    s.brain.plans["Ada"].append(plan("Eventually."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
    assert (await s.fake.wait_for_sent(s.ada, 1, timeout=60))[0]["text"] == "Eventually."


async def test_two_characters_converse_through_the_relay_until_the_loop_guard(scene) -> None:
    s = scene
    await s.start({"MAX_BOT_TURNS": "2"})
    s.brain.plans["Ada"] += [plan("@brann_bot, what do you think?"), plan("@brann_bot, really?"), plan("more")]
    s.brain.plans["Brann"] += [plan("@ada_bot I think it works."), plan("@ada_bot truly."), plan("more")]
    await s.fake.user_says(s.sam, s.group, "@ada_bot ask the captain about the ending")
    await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    await asyncio.sleep(0.5)
    assert [m["text"] for m in s.ada.sent] == ["@brann_bot, what do you think?", "@brann_bot, really?"]
    assert [m["text"] for m in s.brann.sent] == ["@ada_bot I think it works."]


async def test_mute_unmute_and_follow_round_trip(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [
        plan("Going quiet.", "REPLY,MUTE_ROOM"),
        plan("I'm back.", "REPLY,UNMUTE_ROOM"),
        plan("Following.", "REPLY,FOLLOW_ROOM"),
        plan("Noted."),
    ]
    await s.fake.user_says(s.sam, s.group, "@ada_bot be quiet")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.state_becomes("Ada", s.group.id, RoomState.MUTED)
    await s.fake.user_says(s.sam, s.group, "so anyway, the ending")
    await asyncio.sleep(0.2)
    assert len(s.ada.sent) == 1
    await s.fake.user_says(s.sam, s.group, "@ada_bot you can talk again")
    await s.fake.wait_for_sent(s.ada, 2)
    await s.state_becomes("Ada", s.group.id, None)
    await s.fake.user_says(s.sam, s.group, "@ada_bot follow along")
    await s.fake.wait_for_sent(s.ada, 3)
    await s.state_becomes("Ada", s.group.id, RoomState.FOLLOWED)
    await s.fake.user_says(s.sam, s.group, "the villain needs work")  # followed: no name needed
    assert (await s.fake.wait_for_sent(s.ada, 4))[3]["text"] == "Noted."


async def test_start_and_help_are_answered_without_the_model(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "/start")
    await s.fake.user_says(s.sam, s.group, "/help@ada_bot")
    # Two chats: their answers may go out in either order.
    (started,) = await s.fake.wait_for_sent(s.ada, 1, chat=chat)
    (helped,) = await s.fake.wait_for_sent(s.ada, 1, chat=s.group)
    assert started["text"].startswith("Hi, I'm Ada. Ada is a test character.")
    assert "mention @ada_bot" in helped["text"]
    assert not any("Write the next turn" in p for p in s.brain.prompts)


async def test_send_message_reaches_someone_met_only_in_a_group_and_is_remembered(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.user_says(s.cleo, s.group, "morning all")  # Ada lets it pass; Cleo started Ada elsewhere
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts), timeout=60)
    cleo = s.fake.private(s.cleo, s.ada)
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [
        (
            "<response><targetType>user</targetType><target>Cleo</target><source>telegram</source>"
            "<message>The meeting moved to 3pm.</message></response>"
        )
    ]
    await s.fake.user_says(s.sam, s.group, "@ada_bot tell Cleo the meeting moved to 3pm")
    sent = await s.fake.wait_for_sent(s.ada, 3, timeout=60)
    assert [(m["chat_id"], m["text"]) for m in sent] == [
        (s.group.id, "Will do."),
        (cleo.id, "The meeting moved to 3pm."),
        (s.group.id, "Message sent to Cleo on telegram."),
    ]
    # The private chat troupe had never seen is now a room, with Cleo in it and the message stored.
    rt = s.runtime("Ada")
    room = room_id(rt.agent_id, cleo.id)
    async with asyncio.timeout(60):
        while not (stored := await rt.store.get_memories(table="messages", room_id=room, count=5)):
            await asyncio.sleep(0.02)
    assert [m.content.text for m in stored] == ["The meeting moved to 3pm."]
    assert entity_id(rt.agent_id, s.cleo.id) in await rt.store.get_participants_for_room(room)


async def test_photos_are_described_and_documents_read(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("A cat!"), plan("Good notes.")]
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "look", photo=("cat.jpg", b"\xff\xd8\xfffake", "image/jpeg"))
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.user_says(s.sam, chat, "and this", document=("notes.txt", b"Chapter 3 needs a twist.", "text/plain"))
    await s.fake.wait_for_sent(s.ada, 2)
    planning = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert "A ginger cat asleep on a keyboard." in planning[0]
    assert "Chapter 3 needs a twist." in planning[1]
    assert "token-ada" not in "".join(s.brain.prompts)  # file URLs carry the token: never shown to a model


async def test_telegram_down_at_start_is_waited_out(scene, caplog) -> None:
    s = scene
    s.fake.fail_next("getMe", status=502, description="Bad Gateway", bot=s.ada, times=3)
    with caplog.at_level(logging.INFO):
        await s.start(with_brann=False)
    assert "Ada: could not reach telegram (" in caplog.text and "Ada: connected to telegram after" in caplog.text
    s.brain.plans["Ada"].append(plan("Back."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "you there?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Back."


async def test_a_polling_outage_shows_as_retrying_until_telegram_answers_again(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    links = s.runtime("Ada").links
    await until(lambda: links.get("telegram").state is LinkState.CONNECTED)
    s.fake.fail_next("getUpdates", status=502, description="Bad Gateway", bot=s.ada, times=2)
    await until(lambda: links.get("telegram").state is LinkState.RETRYING, timeout=60)
    assert "polling failed" in links.get("telegram").detail
    await until(lambda: links.get("telegram").state is LinkState.CONNECTED, timeout=60)
    s.brain.plans["Ada"].append(plan("Back again."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "still there?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Back again."


async def test_a_bad_token_stops_only_that_character(scene, caplog) -> None:
    s = scene
    with caplog.at_level(logging.ERROR):
        await s.start(brann_token="7002:wrong")
        await until(lambda: "Brann: could not connect to telegram" in caplog.text)
    assert "Telegram refused the bot token in TELEGRAM_BOT_TOKEN" in caplog.text and "wrong" not in caplog.text
    s.brain.plans["Ada"].append(plan("Still here."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Still here."


async def test_another_process_polling_the_same_token_stops_telegram_for_that_character(scene, caplog) -> None:
    from telegram.ext import ApplicationBuilder

    s = scene
    await s.start(with_brann=False)
    intruder = (
        ApplicationBuilder()
        .token(s.ada.token)
        .base_url(f"{s.fake.url}/bot")
        .base_file_url(f"{s.fake.url}/file/bot")
        .build()
    )
    await intruder.initialize()
    await intruder.start()
    assert intruder.updater is not None
    with caplog.at_level(logging.ERROR):
        await intruder.updater.start_polling(timeout=1, poll_interval=0)
        try:
            await until(lambda: "another process is polling Telegram with this bot's token" in caplog.text, timeout=60)
        finally:
            await intruder.updater.stop()
            await intruder.stop()
            await intruder.shutdown()
    assert "Ada: another process is polling Telegram" in caplog.text


async def test_edits_reactions_and_people_joining_reach_memory(scene) -> None:
    from platforms.telegram._mapping import entity_id, room_id

    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    seen: list[str] = []

    async def record(event: EntityJoined) -> None:
        seen.append(event.entity_id)

    rt.on(EntityJoined, record)
    s.brain.plans["Ada"].append(plan("Noted."))
    asked = await s.fake.user_says(s.sam, s.group, "@ada_bot teh ending")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.user_edits(asked, "@ada_bot the ending")
    await s.fake.user_reacts(s.sam, asked, "👍")
    newcomer = s.fake.add_user("Nia")
    await s.fake.member_joins(s.group, newcomer)
    room = room_id(rt.agent_id, s.group.id)

    async def texts() -> list[str]:
        return [m.content.text for m in await rt.store.get_memories(table="messages", room_id=room)]

    async with asyncio.timeout(60):
        while not {"@ada_bot the ending", "*reacted 👍*"} <= set(await texts()):
            await asyncio.sleep(0.01)
    assert "@ada_bot teh ending" not in await texts() and len(s.ada.sent) == 1
    await until(lambda: seen)
    assert seen == [entity_id(rt.agent_id, newcomer.id)]


async def test_an_update_telegram_sends_again_is_answered_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Only once."), plan("Second answer: a bug.")]
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello?")
    await s.fake.wait_for_sent(s.ada, 1)
    first = s.ada.delivered[-1]["update_id"]
    s.fake.redeliver(s.ada, first)  # its confirmation never reached Telegram
    await until(lambda: not s.ada.updates and s.ada.polls >= 3)
    await asyncio.sleep(0.3)
    assert [m["text"] for m in s.ada.sent] == ["Only once."]
    rows = await s.runtime("Ada").store.inbox_pending("telegram")
    assert rows == []  # dealt with, the inbox is empty


async def test_a_chat_seen_again_after_a_restart_is_not_rewritten_and_keeps_roles_given_in_chat(
    scene, monkeypatch
) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.user_says(s.sam, s.group, "morning all")
    rt = s.runtime("Ada")
    group_world = world_id(rt.agent_id, s.group.id)
    async with asyncio.timeout(60):
        while (world := await rt.store.get_world(group_world)) is None:
            await asyncio.sleep(0.01)
    assert world.metadata.roles == {entity_id(rt.agent_id, s.sam.id): Role.OWNER}  # the group's creator
    roles = {**(world.metadata.roles or {}), entity_id(rt.agent_id, s.cleo.id): Role.ADMIN}
    world.metadata = replace(world.metadata, roles=roles)  # as UPDATE_ROLE writes it
    await rt.store.update_world(world)
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()
    await asyncio.wait_for(s.task, 60)

    writes = count_world_writes(monkeypatch, rt.store)
    await s.start(with_brann=False)  # a new run sees the chat again, with the same people in charge
    await s.fake.user_says(s.sam, s.group, "anyone seen my keys?")
    await until(lambda: sum("Decide what Ada does" in p for p in s.brain.prompts) == 2)
    again = await s.runtime("Ada").store.get_world(group_world)
    assert again is not None and again.metadata.roles == {
        entity_id(rt.agent_id, s.sam.id): "OWNER",
        entity_id(rt.agent_id, s.cleo.id): "ADMIN",
    }
    assert writes == []  # nothing changed: the world is not written again


async def test_two_characters_in_a_group_decide_once_and_answer_in_turn(scene) -> None:
    s = scene
    await s.start()
    s.brain.troupe.append("Brann, Ada")
    s.brain.plans["Brann"].append(plan("I'd start with the lighthouse."))
    s.brain.plans["Ada"].append(plan("And I'd end there."))
    await s.fake.user_says(s.sam, s.group, "anyone got a story for tonight?")
    brann = await s.fake.wait_for_sent(s.brann, 1, timeout=60)
    ada = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert brann[0]["text"] == "I'd start with the lighthouse." and ada[0]["text"] == "And I'd end there."
    decisions = [p for p in s.brain.prompts if "Which of these characters should answer" in p]
    alone = [p.rsplit("# Received Message", 1)[-1] for p in s.brain.prompts if "Decide what" in p]
    # One decision for Sam's message; only Ada's reply, which Brann alone then hears, may ask Brann's own.
    assert len(decisions) == 1 and all("And I'd end there." in received for received in alone)
    ada_plan = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "I'd start with the lighthouse." in ada_plan  # Ada answered after hearing Brann


def stopped_count(s) -> float:
    """How many messages Ada has let pass in this run because she was asked to stay out."""
    return s.runtime("Ada").metrics.messages_handled.labels(agent="Ada", outcome="stopped").value


async def test_asked_to_stay_out_a_character_stays_out_across_a_restart_until_named(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.decisions["Ada"].append("STOP")
    await s.fake.user_says(s.sam, s.group, "we'd rather talk among ourselves")
    await s.state_becomes("Ada", s.group.id, RoomState.STOPPED)
    await s.fake.user_says(s.sam, s.group, "so, the plot")
    await until(lambda: stopped_count(s) == 2)
    assert s.daemon is not None and s.task is not None
    s.daemon.stop()
    await asyncio.wait_for(s.task, 10)

    await s.start(with_brann=False)
    await s.fake.user_says(s.cleo, s.group, "what do we all think?")
    await until(lambda: stopped_count(s) == 1)
    assert sum("Decide what Ada does" in p for p in s.brain.prompts) == 1 and s.ada.sent == []
    s.brain.plans["Ada"].append(plan("Back with you."))
    await s.fake.user_says(s.sam, s.group, "Ada, what do you think?")  # named: invited back
    assert (await s.fake.wait_for_sent(s.ada, 1))[0]["text"] == "Back with you."
    await s.state_becomes("Ada", s.group.id, None)
