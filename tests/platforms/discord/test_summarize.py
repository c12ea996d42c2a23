"""/summarize [messages] on Discord: the channel's last messages summarised and answered in that
channel, after a deferral."""

from __future__ import annotations

import asyncio
import time

from platforms.discord._mapping import discord_id

from ...fakes.openai_server import Fail


async def _chat(s, channel, lines: list[str]) -> None:
    """Sam and Cleo say ``lines`` in turn; Ada hears (and lets pass) each, stored in the room."""
    rt = s.runtime("Ada")
    room = discord_id(rt.agent_id, channel.id)
    for i, text in enumerate(lines):
        await s.fake.user_says(s.sam if i % 2 == 0 else s.cleo, channel, text)

    async def heard() -> bool:
        said = {m.content.text for m in await rt.store.get_memories(table="messages", room_id=room)}
        return set(lines) <= said

    async with asyncio.timeout(60):
        while not await heard():
            await asyncio.sleep(0.02)


def _texts(responses) -> list[str]:
    return [r.payload.get("content") for r in responses if r.kind == "followup"]


async def test_summarize_answers_in_the_channel_with_its_last_messages(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await _chat(s, s.general, [f"scene {i} needs work" for i in range(6)])
    await _chat(s, s.lounge, ["lunch anyone?"])
    s.brain.summaries.append("- Sam and Cleo reviewed the scenes.")
    interaction = await s.fake.invoke_command(s.cleo, s.general, s.ada, "summarize", options={"messages": 4})
    responses = await s.fake.wait_for_response(interaction, count=2)
    assert responses[0].kind == "callback" and responses[0].type == 5  # deferred at once: the model is slow
    assert _texts(responses) == [
        "Summary of the conversation over the last 4 messages (4 messages):\n\n- Sam and Cleo reviewed the scenes."
    ]
    assert interaction.channel is s.general and interaction.followups[0].channel is s.general
    prompt = next(p for p in s.brain.prompts if "to sum up the conversation in" in p)
    assert "#general" in prompt and "lunch" not in prompt
    assert [f"scene {i} needs work" in prompt for i in range(6)] == [False] * 2 + [True] * 4
    assert "Sam: scene 4 needs work" in prompt and "cleo: scene 5 needs work" in prompt


async def test_summarize_defaults_to_50_and_says_when_there_is_nothing(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    interaction = await s.fake.invoke_command(s.sam, s.lounge, s.ada, "summarize")
    responses = await s.fake.wait_for_response(interaction, count=2)
    assert _texts(responses) == ["Nothing to summarise: no messages over the last 50 messages."]


async def test_a_long_summary_is_a_line_and_a_markdown_file_and_a_model_failure_plain(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await _chat(s, s.general, ["one", "two", "three"])
    bullets = "\n".join(f"- point {i}: " + "lengthy " * 27 for i in range(20))  # about 4,600 characters, 580 words
    s.brain.summaries.append(bullets)
    interaction = await s.fake.invoke_command(s.sam, s.general, s.ada, "summarize")
    [followup] = [r for r in await s.fake.wait_for_response(interaction, count=2) if r.kind == "followup"]
    name = f"summary-general-{time.strftime('%Y-%m-%d', time.gmtime())}.md"
    covers = "Summary of the conversation over the last 50 messages (3 messages)"
    assert followup.payload.get("content") == f"{covers}: it is long, so here it is as a file, {name}."
    [file] = followup.files
    assert file.filename == name and file.data.decode() == f"{covers}:\n\n{bullets.strip()}\n"
    assert [a.filename for a in followup.message.attachments] == [name]
    s.openai.script_chat(Fail(400, message="the model is not loaded"))
    failed = await s.fake.invoke_command(s.sam, s.general, s.ada, "summarize")
    assert _texts(await s.fake.wait_for_response(failed, count=2)) == [
        "I couldn't summarise the conversation: the model did not answer. Please try again in a moment."
    ]
