"""End to end on Discord: ``/chat message:<text>`` and ``/ask question:<text>``. The interaction is
deferred at once ("thinking…"), goes through the pipeline as a direct address from the person
who used it, and the character's answer comes as its follow-ups (the first replaces "thinking…"),
split under 2000 characters; a redelivered one is answered once; blank text, or silence, gets a
clear answer; one Discord no longer knows is still answered in the channel."""

from __future__ import annotations

import asyncio

from bot.runtime.agent import AgentRuntime
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import FakeChannel, FakeInteraction
from ...fakes.openai_server import Fail
from .scene import plan, until


async def command_messages(rt: AgentRuntime, channel: FakeChannel) -> list:
    """The slash-command messages stored in ``channel``'s room."""
    memories = await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, channel.id))
    return [m for m in memories if m.metadata.interaction_id is not None]


def followups(interaction: FakeInteraction) -> list[str]:
    return [str(r.payload.get("content")) for r in interaction.responses if r.kind == "followup"]


async def test_chat_is_answered_through_the_pipeline_as_the_interactions_followup(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("The captain hides the map."))
    chat = await s.fake.invoke_command(s.cleo, s.general, s.ada, "chat", options={"message": "where is the map?"})
    responses = await s.fake.wait_for_response(chat, count=2, timeout=60)
    assert responses[0].kind == "callback" and responses[0].type == 5  # deferred at once: "thinking…"
    assert responses[0].at - chat.dispatched[0] < 3.0
    assert followups(chat) == ["The captain hides the map."]
    assert chat.followups[0] is chat.original and chat.original.channel is s.general  # it replaced "thinking…"
    assert not chat.original.flags & 64  # for everyone in the channel
    assert s.ada.sent == []  # no plain message besides
    turn = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "where is the map?" in turn
    assert not any("Decide what Ada does" in p for p in s.brain.prompts)  # a direct address: no model asked
    rt = s.runtime("Ada")
    (heard,) = await command_messages(rt, s.general)
    assert heard.content.text == "where is the map?" and heard.entity_id == discord_id(rt.agent_id, s.cleo.id)
    assert heard.metadata.is_mention is True and heard.metadata.interaction_id == str(chat.id)
    answer_id = discord_id(rt.agent_id, chat.original.id)

    async def answer_stored() -> list:
        async with asyncio.timeout(60):
            while True:
                memories = await rt.store.get_memories(table="messages", room_id=heard.room_id)
                if found := [m for m in memories if m.id == answer_id]:
                    return found
                await asyncio.sleep(0.02)

    assert [m.content.in_reply_to for m in await answer_stored()] == [heard.id]  # stored as its answer


async def test_ask_is_answered_the_same_way_and_a_long_answer_is_split(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    long = "The ending works. " * 200  # 3600 characters: two follow-ups
    s.brain.plans["Ada"].append(plan(long.strip()))
    ask = await s.fake.invoke_command(s.sam, s.general, s.ada, "ask", options={"question": "does the ending work?"})
    await s.fake.wait_for_response(ask, count=3, timeout=60)
    parts = followups(ask)
    assert len(parts) == 2 and all(len(p) <= 2000 for p in parts)
    assert " ".join(p.strip() for p in parts).split() == long.split()
    assert len(ask.followups) == 2 and ask.followups[0] is ask.original
    turn = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "does the ending work?" in turn


async def test_a_redelivered_chat_is_answered_once(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Once."))
    chat = await s.fake.invoke_command(s.sam, s.general, s.ada, "chat", options={"message": "say it once"})
    await s.fake.wait_for_response(chat, count=2, timeout=60)
    await s.fake.redeliver(chat)
    deferrals = await until(
        lambda: (found := [r for r in s.fake.requests if r.path.startswith(f"/interactions/{chat.id}/")])[1:] and found
    )
    first, second = (r.status or 0 for r in deferrals)
    assert first < 300 and second == 400  # the second deferral refused: already acknowledged
    await asyncio.sleep(0.5)  # what the redelivered command could have set off
    assert followups(chat) == ["Once."] and len(chat.responses) == 2
    assert len(await command_messages(s.runtime("Ada"), s.general)) == 1


async def test_blank_text_gets_a_clear_ephemeral_answer_and_reaches_no_model(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    before = len(s.brain.prompts)
    chat = await s.fake.invoke_command(s.sam, s.general, s.ada, "chat", options={"message": "   "})
    (response,) = await s.fake.wait_for_response(chat)
    assert response.type == 4 and response.payload["data"]["flags"] == 64
    assert response.payload["data"]["content"] == (
        "Nothing to answer: write something after /chat, as in `/chat message:hello`."
    )
    ask = await s.fake.invoke_command(s.sam, s.general, s.ada, "ask", options={"question": ""})
    (response,) = await s.fake.wait_for_response(ask)
    assert "/ask question:hello" in response.payload["data"]["content"]
    await asyncio.sleep(0.3)
    assert len(s.brain.prompts) == before and await command_messages(s.runtime("Ada"), s.general) == []


async def test_silence_and_a_failed_model_close_thinking_with_a_clear_line(scene) -> None:
    s = scene
    assert s.openai is not None
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("", "IGNORE"))
    quiet = await s.fake.invoke_command(s.sam, s.general, s.ada, "chat", options={"message": "hm"})
    edit = (await s.fake.wait_for_response(quiet, count=2, timeout=60))[1]
    assert edit.kind == "edit" and edit.payload["content"] == "Ada has nothing to say to that."
    assert edit.message is quiet.original
    s.openai.script_chat(Fail(400, message="the model is not loaded"))
    failed = await s.fake.invoke_command(s.sam, s.general, s.ada, "ask", options={"question": "still there?"})
    edit = (await s.fake.wait_for_response(failed, count=2, timeout=60))[1]
    assert edit.payload["content"] == "Ada couldn't answer that just now; please try again in a moment."


async def test_a_chat_discord_no_longer_knows_is_answered_in_the_channel(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.interaction_window = 0.0  # every callback comes too late
    s.brain.plans["Ada"].append(plan("Late, but here."))
    chat = await s.fake.invoke_command(s.sam, s.general, s.ada, "chat", options={"message": "anyone?"})
    (answer,) = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert answer.content == "Late, but here." and answer.channel is s.general and chat.responses == []


async def test_chat_outside_channel_ids_is_refused_privately(scene) -> None:
    s = scene
    await s.start({"CHANNEL_IDS": str(s.general.id)}, with_brann=False)
    chat = await s.fake.invoke_command(s.sam, s.lounge, s.ada, "chat", options={"message": "hello"})
    (response,) = await s.fake.wait_for_response(chat)
    assert response.payload["data"]["content"] == "Ada doesn't listen in this channel."
    assert response.payload["data"]["flags"] == 64


async def test_a_chat_left_unanswered_by_a_crash_is_answered_once_after_the_restart(scene) -> None:
    s = scene
    assert s.openai is not None and s.task is None
    await s.start(with_brann=False)
    s.openai.latency = 30.0  # the answer is still being written when the process dies
    chat = await s.fake.invoke_command(s.sam, s.general, s.ada, "chat", options={"message": "still there?"})
    await until(lambda: any("still there?" in str(r.json) for r in s.openai.requests_for("chat")), timeout=60)
    assert s.task is not None
    s.task.cancel()  # a crash: nothing finished or recorded after this point
    await asyncio.gather(s.task, return_exceptions=True)
    s.openai.latency = 0.0
    s.brain.plans["Ada"].append(plan("Yes, back now."))
    await s.start(with_brann=False)
    (answer,) = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    # The interaction's token is never stored: the answer is a plain message in the channel.
    assert answer.content == "Yes, back now." and answer.channel is s.general
    await asyncio.sleep(0.3)  # room for a second answer that must not come
    assert len(s.ada.sent) == 1 and followups(chat) == []
