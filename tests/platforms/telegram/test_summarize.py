"""/summarize [N] on Telegram: the last N messages of the room or forum topic it is asked in,
summarised and answered there."""

from __future__ import annotations

import asyncio
import time

from platforms.telegram._mapping import room_id

from ...fakes.openai_server import Fail
from .scene import plan


async def _chat(s, chat, lines: list[str], topic: int | None = None) -> None:
    """Sam and Cleo say ``lines`` in turn, all at once (Telegram dates them to the same second:
    the order they are stored in must still be the order they were said in); Ada stores each."""
    rt = s.runtime("Ada")
    room = room_id(rt.agent_id, chat.id, topic)
    for i, text in enumerate(lines):
        await s.fake.user_says(s.sam if i % 2 == 0 else s.cleo, chat, text, topic=topic)

    async def heard() -> bool:
        said = {m.content.text for m in await rt.store.get_memories(table="messages", room_id=room)}
        return set(lines) <= said

    async with asyncio.timeout(60):
        while not await heard():
            await asyncio.sleep(0.01)


async def test_summarize_answers_in_the_topic_with_its_last_n_messages(scene) -> None:
    s = scene
    forum = s.fake.add_group("Guild", members=[s.sam, s.ada], forum=True)
    plot, lore = s.fake.add_topic(forum, "Plot"), s.fake.add_topic(forum, "Lore")
    await s.start(with_brann=False)
    await _chat(s, forum, [f"plot point {i}" for i in range(8)], plot)
    await _chat(s, forum, ["the dragon is old"], lore)
    s.brain.summaries.append("- Sam and Cleo went over the plot.")
    await s.fake.user_says(s.sam, forum, "/summarize 5", topic=plot)
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["thread_id"] == plot
    assert sent[0]["text"] == (
        "Summary of the conversation over the last 5 messages (5 messages):\n\n- Sam and Cleo went over the plot."
    )
    prompt = next(p for p in s.brain.prompts if "to sum up the conversation in" in p)
    assert [f"plot point {i}" in prompt for i in range(8)] == [False] * 3 + [True] * 5
    assert "Sam: plot point 4" in prompt and "Cleo: plot point 7" in prompt and "dragon" not in prompt
    assert not any("Write the next turn" in p for p in s.brain.prompts)  # no plan: the command is the request


async def test_summarize_without_history_or_with_a_bad_number_says_so(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await s.fake.user_says(s.sam, s.group, "/summarize@ada_bot")
    await s.fake.user_says(s.sam, s.group, "/summarize lots")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert {m["text"] for m in sent} == {
        "Nothing to summarise: no messages over the last 50 messages.",
        "Use /summarize, or /summarize N for the last N messages (1 to 500; 50 when left out).",
    }
    assert not any("to sum up the conversation" in p for p in s.brain.prompts)


async def test_a_model_failure_on_summarize_is_a_plain_answer(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await _chat(s, s.group, ["one", "two"])
    s.openai.script_chat(Fail(400, message="the model is not loaded"))
    await s.fake.user_says(s.sam, s.group, "/summarize")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["text"] == (
        "I couldn't summarise the conversation: the model did not answer. Please try again in a moment."
    )


async def test_a_long_summary_is_a_markdown_document_captioned_with_what_it_covers(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    await _chat(s, s.group, ["one", "two", "three"])
    bullets = "\n".join(f"- point {i}: " + "lengthy " * 27 for i in range(20))  # about 4,600 characters, 580 words
    s.brain.summaries += [bullets, bullets]
    name = f"summary-writers-room-{time.strftime('%Y-%m-%d', time.gmtime())}.md"
    await s.fake.user_says(s.sam, s.group, "/summarize 3")
    [document] = await s.fake.wait_for_sent(s.ada, 1)
    covers = "Summary of the conversation over the last 3 messages (3 messages)"
    assert document["kind"] == "document" and document["filename"] == name
    assert document["text"] == f"{covers}: it is long, so here it is as a file, {name}."  # the caption
    assert document["document"].decode() == f"{covers}:\n\n{bullets.strip()}\n"

    s.brain.plans["Ada"].append(plan("", "SUMMARIZE_CONVERSATION"))
    await s.fake.user_says(s.sam, s.group, "@ada_bot tl;dr of the last 3 messages")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert sent[1]["kind"] == "document" and sent[1]["filename"] == name
    assert sent[1]["text"].endswith(f"it is long, so here it is as a file, {name}.")
    assert b"- point 19" in sent[1]["document"]
    rt = s.runtime("Ada")

    async def stored_with_the_file() -> bool:  # the action's answer is remembered (the command's is not)
        stored = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, s.group.id))
        return any(a.title == name for m in stored for a in m.content.attachments or ())

    async with asyncio.timeout(60):
        while not await stored_with_the_file():
            await asyncio.sleep(0.02)
