"""End to end on Discord: replies, follow/mute, two characters, long replies, CHANNEL_IDS,
reconnects, rate limits, and characters that cannot start."""

from __future__ import annotations

import asyncio
import logging

from bot.kernel.links import LinkState
from bot.kernel.types import RoomState
from platforms.discord._mapping import discord_id

from .scene import plan, until


async def test_answers_a_mention_with_a_reply_and_a_dm(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Hello Sam!"), plan("Hi in private.")]
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} hello?")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0].content == "Hello Sam!" and sent[0].reference is asked
    assert s.ada.typing and s.ada.typing[0] is s.general  # "typing…" while the answer was prepared
    await s.fake.dm(s.sam, s.ada, "psst")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert sent[1].content == "Hi in private." and sent[1].channel.is_dm
    # Both conversations are remembered, with the bot's own replies.
    rt = s.runtime("Ada")
    general = await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, s.general.id))
    assert [m.content.text for m in reversed(general)] == ["@Ada hello?", "Hello Sam!"]


async def test_unaddressed_chatter_is_left_alone_when_the_model_says_ignore(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.decisions["Ada"].append("IGNORE")
    await s.fake.user_says(s.sam, s.general, "anyone seen my keys?")
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts))
    await asyncio.sleep(0.2)
    assert s.ada.sent == [] and s.ada.typing == []


async def test_follow_and_mute_by_conversation_and_by_slash_command(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [
        plan("I'll follow along.", "REPLY,FOLLOW_ROOM"),
        plan("Noted."),
        plan("Going quiet.", "REPLY,MUTE_ROOM"),
    ]
    await s.fake.user_says(s.sam, s.general, "Ada, follow this channel please")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.state_becomes("Ada", s.general, RoomState.FOLLOWED)
    await s.fake.user_says(s.sam, s.general, "the plot needs work")  # followed: answered without being named
    assert (await s.fake.wait_for_sent(s.ada, 2))[1].content == "Noted."
    await s.fake.user_says(s.sam, s.general, "Ada, shush")
    await s.fake.wait_for_sent(s.ada, 3)
    await s.state_becomes("Ada", s.general, RoomState.MUTED)
    await s.fake.user_says(s.sam, s.general, "so anyway")
    await asyncio.sleep(0.2)
    assert len(s.ada.sent) == 3  # muted: silent

    # /troupe: the owner unmutes without asking the model; a member may look but not change.
    interaction = await s.fake.invoke_command(s.sam, s.general, s.ada, "troupe", options={"action": "unmute"})
    response = (await s.fake.wait_for_response(interaction))[0]
    assert response.payload["data"]["content"] == "Done: Ada answers when addressed, and otherwise decides for itself."
    assert response.payload["data"]["flags"] == 64  # ephemeral
    assert await s.room_state("Ada", s.general) is None
    denied = await s.fake.invoke_command(s.cleo, s.general, s.ada, "troupe", options={"action": "follow"})
    assert (await s.fake.wait_for_response(denied))[0].payload["data"]["content"] == (
        "Only the server's owner or an admin can change that."
    )
    status = await s.fake.invoke_command(s.cleo, s.general, s.ada, "troupe")
    assert "answers when addressed" in (await s.fake.wait_for_response(status))[0].payload["data"]["content"]


async def test_two_characters_converse_until_the_loop_guard(scene) -> None:
    s = scene
    await s.start({"MAX_BOT_TURNS": "2"})
    s.brain.plans["Ada"] += [plan("Brann, what do you think?"), plan("Brann, really?"), plan("Brann, go on.")]
    s.brain.plans["Brann"] += [plan("Ada, I think it works."), plan("Ada, truly."), plan("Ada, and more.")]
    await s.fake.user_says(s.sam, s.general, "Ada, what does the captain think of the ending?")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.wait_for_sent(s.brann, 1)
    await asyncio.sleep(0.5)
    # Ada answered Sam, Brann answered Ada, Ada answered Brann (2 bot turns in a row), then silence.
    assert [m.content for m in s.ada.sent] == ["Brann, what do you think?", "Brann, really?"]
    assert [m.content for m in s.brann.sent] == ["Ada, I think it works."]
    # A human speaking resets the guard.
    await s.fake.user_says(s.sam, s.general, "Brann, your turn")
    assert (await s.fake.wait_for_sent(s.brann, 2))[1].content == "Ada, truly."


async def test_a_long_reply_with_code_arrives_as_valid_messages_and_never_pings_everyone(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    code = "\n".join(f"    total += item_{i}  # accumulate the values" for i in range(40))
    long = "Here you go, @everyone:\n" + "Some explanation. " * 45 + "\n```python\n" + code + "\n```\nDone."
    assert 2400 < len(long) < 2700
    s.brain.plans["Ada"].append(plan(long))
    await s.fake.user_says(s.sam, s.general, "Ada, show me the loop")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert all(len(m.content) <= 2000 and m.content.count("```") % 2 == 0 for m in sent)
    assert sent[1].content.startswith("```python") and sent[1].content.endswith("Done.")
    # Only people can be pinged (never @everyone, @here or a role), and not the author replied to.
    assert [m.allowed_mentions for m in sent] == [{"parse": ["users"], "replied_user": False}, {"parse": ["users"]}]
    assert sent[0].reference is not None and sent[1].reference is None


async def test_channel_ids_limit_where_the_bot_listens(scene) -> None:
    s = scene
    await s.start({"CHANNEL_IDS": str(s.lounge.id)}, with_brann=False)
    s.brain.plans["Ada"].append(plan("Lounge only."))
    await s.fake.user_says(s.sam, s.general, "Ada, hello?")
    await s.fake.user_says(s.sam, s.lounge, "Ada, hello?")
    await s.fake.wait_for_sent(s.ada, 1)
    await asyncio.sleep(0.2)
    assert [(m.channel, m.content) for m in s.ada.sent] == [(s.lounge, "Lounge only.")]


async def test_a_dropped_gateway_reconnects_and_the_next_message_is_answered(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Before."), plan("After.")]
    await s.fake.user_says(s.sam, s.general, "Ada, one")
    await s.fake.wait_for_sent(s.ada, 1)
    links = s.runtime("Ada").links
    assert links.get("discord").state is LinkState.CONNECTED
    seen: list[LinkState] = []
    links.on_change = lambda platform, link, old: seen.append(link.state)
    await s.fake.drop_gateway(s.ada)
    await s.fake.wait_connected(s.ada)
    await until(lambda: seen[-1:] == [LinkState.CONNECTED])
    assert seen == [LinkState.RETRYING, LinkState.CONNECTED]  # what status and readiness showed meanwhile
    await s.fake.user_says(s.sam, s.general, "Ada, two")
    assert (await s.fake.wait_for_sent(s.ada, 2))[1].content == "After."


async def test_rate_limits_and_server_errors_are_retried(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("POST", r"/channels/\d+/messages$", status=429, retry_after=0.05, bot=s.ada)
    s.brain.plans["Ada"].append(plan("Eventually."))
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Eventually."


async def test_missing_message_content_intent_and_a_bad_token_stop_only_that_character(scene, caplog) -> None:
    s = scene
    s.ada.message_content_intent = False
    with caplog.at_level(logging.ERROR):
        await s.start(brann_token="token-nobody", wait=False)
        assert await asyncio.wait_for(s.task, 60) == 78  # nobody could connect: a configuration error
    assert (
        f"Ada: could not connect to discord: the Message Content intent is not enabled for the bot Ada; "
        f"enable it at https://discord.com/developers/applications/{s.ada.id}/bot"
    ) in caplog.text
    assert "Brann: could not connect to discord: Discord refused the bot token in DISCORD_API_TOKEN" in caplog.text
    assert "token-nobody" not in caplog.text and s.ada.identifies == []  # stopped before the gateway: no loop


async def test_one_broken_character_does_not_stop_the_other(scene, caplog) -> None:
    s = scene
    s.brann.message_content_intent = False
    s.brain.plans["Ada"].append(plan("Still here."))
    with caplog.at_level(logging.ERROR):
        await s.start()
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Still here."
    assert "Brann: could not connect to discord" in caplog.text


async def test_two_characters_on_one_token_are_refused(scene, caplog) -> None:
    s = scene
    with caplog.at_level(logging.ERROR):
        await s.start(brann_token="token-ada", wait=False)
        await until(lambda: "uses the same DISCORD_API_TOKEN as" in caplog.text, timeout=60)
    assert (
        "Brann: could not connect to discord: uses the same DISCORD_API_TOKEN as Ada" in caplog.text
        or "Ada: could not connect to discord: uses the same DISCORD_API_TOKEN as Brann" in caplog.text
    )
    assert "token-ada" not in caplog.text


def stopped_count(s) -> float:
    """How many messages Ada has let pass in this run because she was asked to stay out."""
    return s.runtime("Ada").metrics.messages_handled.labels(agent="Ada", outcome="stopped").value


async def test_asked_to_stay_out_a_character_stays_out_across_a_restart_until_named(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.decisions["Ada"].append("STOP")
    await s.fake.user_says(s.sam, s.general, "we'd rather talk among ourselves")
    await s.state_becomes("Ada", s.general, RoomState.STOPPED)
    await s.fake.user_says(s.sam, s.general, "so, the plot")
    await until(lambda: stopped_count(s) == 2)
    assert await s.stop() == 0

    await s.start(with_brann=False)
    await s.fake.user_says(s.cleo, s.general, "what do we all think?")
    await until(lambda: stopped_count(s) == 1)
    assert sum("Decide what Ada does" in p for p in s.brain.prompts) == 1 and s.ada.sent == []
    status = await s.fake.invoke_command(s.cleo, s.general, s.ada, "troupe")
    assert "stay out" in (await s.fake.wait_for_response(status))[0].payload["data"]["content"]
    s.brain.plans["Ada"].append(plan("Back with you."))
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} what do you think?")  # mentioned: invited back
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Back with you."
    await s.state_becomes("Ada", s.general, None)
