"""SUMMARIZE_CONVERSATION: which window a request means, reading and chunking a room's history,
and what the person is sent (a summary, a long one as a file, or why there is none)."""

from __future__ import annotations

import re
import time

import pytest

from bot.kernel.content import Content
from bot.kernel.errors import ModelError
from bot.kernel.models import ModelType
from bot.kernel.types import ChannelType, Memory, now_ms
from bot.runtime.components import CONVERSATION_SUMMARIES
from plugins.core._summaries import _file_name, chunk_lines
from plugins.core._summary_window import MAX_MESSAGES, Window, parse_window
from plugins.core.actions.summarize_conversation import asks_for_summary

from .harness import HUMAN, OTHER_BOT, plan

NOW = 1_700_000_000_000 - 1_700_000_000_000 % 86_400_000 + 15 * 3_600_000  # 15:00 UTC on some day
MIDNIGHT = NOW - 15 * 3_600_000
CHUNK_PROMPT = "Summarise this stretch of it"
COMBINE_PROMPT = "combine the parts into one summary"


def summary(text: str) -> str:
    return f"<response><summary>{text}</summary></response>"


@pytest.mark.parametrize(
    ("said", "count"),
    [
        ("tl;dr of the last 20 messages?", 20),
        ("summarize the last five messages", 5),
        ("recap 120 msgs please", 120),
        ("catch me up on the last 30", 30),
        ("summarise the last 9000 messages", MAX_MESSAGES),
    ],
)
def test_a_number_of_messages_is_read_from_the_request(said: str, count: int) -> None:
    window = parse_window(said, NOW)
    assert window is not None and window.count == count and window.since_ms is None


@pytest.mark.parametrize(
    ("said", "since", "label"),
    [
        ("what did I miss in the last 2 hours?", NOW - 2 * 3_600_000, "over the last 2 hours"),
        ("tldr past hour", NOW - 3_600_000, "over the last hour"),
        ("recap the last 2h", NOW - 2 * 3_600_000, "over the last 2 hours"),
        ("summary of the past 45 minutes", NOW - 45 * 60_000, "over the last 45 minutes"),
        ("catch me up on the last half hour", NOW - 30 * 60_000, "over the last half hour"),
        ("what happened over the last couple of days", NOW - 2 * 86_400_000, "over the last 2 days"),
        ("sum up the last week", NOW - 7 * 86_400_000, "over the last week"),
        ("catch me up since this morning", MIDNIGHT, "today (since 00:00 UTC)"),
        ("what did I miss today", MIDNIGHT, "today (since 00:00 UTC)"),
        ("recap since yesterday", MIDNIGHT - 86_400_000, "since yesterday (00:00 UTC)"),
        ("summary since 9am", MIDNIGHT + 9 * 3_600_000, "since 09:00 UTC"),
        ("summary since 2:30pm", MIDNIGHT + 14 * 3_600_000 + 30 * 60_000, "since 14:30 UTC"),
        ("summary since 22:00", MIDNIGHT - 2 * 3_600_000, "since 22:00 UTC"),  # later than now: last night
    ],
)
def test_a_time_window_is_read_from_the_request(said: str, since: int, label: str) -> None:
    assert parse_window(said, NOW) == Window(since_ms=since, label=label)


@pytest.mark.parametrize("said", ["tl;dr", "catch me up", "what did I miss?", "summary since 3", "since 25:00 recap"])
def test_a_request_naming_no_window_leaves_it_to_the_default(said: str) -> None:
    assert parse_window(said, NOW) is None


@pytest.mark.parametrize(
    ("said", "asks"),
    [
        ("Ada, catch me up", True),
        ("tl;dr?", True),
        ("can you summarize the thread", True),
        ("a quick summarisation, please", True),
        ("what did I miss", True),
        ("give me a recap", True),
        ("Ada, how are you?", False),
        ("the summit was great", False),
    ],
)
def test_the_action_is_offered_only_when_asked_for_a_summary(said: str, asks: bool) -> None:
    assert asks_for_summary(said) is asks


def test_chunks_keep_every_line_once_and_in_order_within_the_budget() -> None:
    lines = [f"line {i:03d} " + "x" * 40 for i in range(100)]
    chunks = chunk_lines(lines, 500)
    assert [line for chunk in chunks for line in chunk] == lines
    assert all(sum(len(line) + 1 for line in chunk) <= 501 for chunk in chunks)
    assert len(chunks) == 10
    # Combining summaries: never one to a group, so each round makes fewer.
    assert all(len(group) >= 2 for group in chunk_lines(["y" * 600] * 5, 500, at_least=2))


async def _store_history(
    h,
    count: int,
    *,
    start: int,
    step_ms: int = 1000,
    text: str = "chatter",
    people: tuple[str, ...] = (HUMAN, OTHER_BOT),
    tag: str = "m",
) -> list[str]:
    """``count`` messages in the harness room, ``people`` taking turns (Sam and Brann), each with a
    marker (``<m0000>``)."""
    markers = [f"<{tag}{i:04d}>" for i in range(count)]
    memories = [
        Memory(
            entity_id=people[i % len(people)],
            agent_id=h.rt.agent_id,
            room_id=h.room,
            content=Content(text=f"{markers[i]} {text} number {i}", source="discord"),
            created_at=start + i * step_ms,
        )
        for i in range(count)
    ]
    await h.rt.store.create_memories(memories, "messages")
    return markers


async def test_keywords_offer_it_and_the_plan_runs_it(harness) -> None:
    h = await harness()
    await _store_history(h, 6, start=now_ms() - 60_000)
    h.large.append(plan("Sure.", "REPLY,SUMMARIZE_CONVERSATION"))
    h.small.append(summary("- Sam and Brann chatted about numbers."))
    await h.say("Ada, catch me up on the last 6 messages")
    assert "SUMMARIZE_CONVERSATION" in h.prompts[0]  # offered to the planner
    assert [c["text"] for c in h.sent] == [
        "Sure.",
        "Summary of the conversation over the last 6 messages (6 messages):\n\n- Sam and Brann chatted about numbers.",
    ]
    assert h.sent[1]["actions"] == ["SUMMARIZE_CONVERSATION_RESPONSE"]
    assert h.small_calls == 1
    h.large.append(plan("Fine, thanks."))
    await h.say("Ada, how are you?")
    assert "SUMMARIZE_CONVERSATION" not in h.prompts[-1]


async def test_a_long_history_is_summarised_in_chunks_each_message_in_exactly_one(harness) -> None:
    h = await harness(settings={"SUMMARY_CHUNK_TOKENS": "1000"})  # about 4,000 characters a chunk
    markers = await _store_history(h, 300, start=now_ms() - 3_600_000, text="about the plot and the villain")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.extend([lambda params: summary("- all" if COMBINE_PROMPT in params["prompt"] else "- part")] * 20)
    await h.say("Ada, tl;dr of the last 300 messages")
    chunk_prompts = [p for p in h.prompts if CHUNK_PROMPT in p]
    combine_prompts = [p for p in h.prompts if COMBINE_PROMPT in p]
    # 300 lines of about 60 characters in chunks of at most 4,000: five chunks, then one combination.
    assert len(chunk_prompts) == 5 and len(combine_prompts) == 1
    assert h.small_calls == 5 + 1 + 1  # and the reflection, which 300 new messages in the room call for
    for marker in markers:
        assert sum(p.count(marker) for p in chunk_prompts) == 1, marker
    # Oldest first, across the chunks too.
    order = [int(found) for p in chunk_prompts for found in re.findall(r"<m(\d{4})>", p)]
    assert order == sorted(order)
    assert "Ada, tl;dr" not in "".join(re.findall(r"<conversation>.*?</conversation>", "".join(chunk_prompts), re.S))
    assert h.sent[-1]["text"].endswith("(300 messages):\n\n- all")


async def test_a_small_model_window_makes_the_chunks_smaller(harness) -> None:
    h = await harness()
    prompts: list[str] = []
    bounds: set[int] = set()

    async def small(runtime: object, params: dict) -> str:
        prompts.append(params["prompt"])
        bounds.add(params["max_tokens"])
        return summary("- all" if COMBINE_PROMPT in params["prompt"] else "- part")

    # 2,048 tokens: 512 for the reply, the system prompt, and about 1,400 for a chunk and its template.
    h.rt.register_model(ModelType.TEXT_SMALL, small, "window", 100, context_length=lambda: 2048)
    await _store_history(h, 120, start=now_ms() - 3_600_000, text="about the plot and the villain")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    await h.say("Ada, tl;dr of the last 120 messages")
    chunks = [p for p in prompts if CHUNK_PROMPT in p]
    assert len(chunks) > 1  # the default of 3,000 tokens would have taken all 120 lines in one
    assert all(len(p) // 4 + 512 <= 2048 for p in chunks)  # as a typical tokenizer counts them
    assert max(bounds) <= 512  # the answer asks no more than the room the chunks left it


async def test_by_default_it_covers_what_was_said_since_the_asker_last_wrote(harness) -> None:
    h = await harness()
    start = now_ms() - 600_000
    await _store_history(h, 4, start=start)  # <m0000> and <m0002> are Sam's
    brann = Memory(
        entity_id=OTHER_BOT,
        agent_id=h.rt.agent_id,
        room_id=h.room,
        content=Content(text="<late> one more thing"),
        created_at=start + 10_000,
    )
    await h.rt.store.create_memory(brann, "messages")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.append(summary("- Brann added two things."))
    await h.say("Ada, what did I miss?")
    prompt = next(p for p in h.prompts if CHUNK_PROMPT in p)
    assert "<m0003>" in prompt and "<late>" in prompt and "<m0002>" not in prompt
    assert h.sent[-1]["text"].startswith("Summary of the conversation since you last wrote here (2 messages)")


async def test_nothing_to_summarise_is_said_without_a_model_call(harness) -> None:
    h = await harness()
    await _store_history(h, 3, start=now_ms() - 5 * 3_600_000)  # all older than the window
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    await h.say("Ada, recap the last 2 hours")
    assert h.small_calls == 0
    assert h.sent[-1]["text"] == "Nothing to summarise: no messages over the last 2 hours."


async def test_a_model_failure_is_a_clear_answer_not_a_traceback(harness) -> None:
    h = await harness()
    await _store_history(h, 10, start=now_ms() - 60_000)
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.append(ModelError("the model server refused the connection"))
    outcome = await h.say("Ada, tl;dr")
    assert h.sent[-1]["text"] == (
        "I couldn't summarise the conversation: the model did not answer. Please try again in a moment."
    )
    assert outcome.actions == ("SUMMARIZE_CONVERSATION",)
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.append("<response><thought>hm</thought></response>")  # an answer with no summary in it
    await h.say("Ada, tl;dr")
    assert h.sent[-1]["text"] == (
        "I couldn't summarise the conversation: the model gave no summary. Please try again in a moment."
    )


async def test_a_long_summary_is_a_line_on_what_it_covers_and_the_whole_as_a_markdown_file(harness) -> None:
    h = await harness()
    await _store_history(h, 10, start=now_ms() - 60_000)
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    bullets = "\n".join(f"- point {i}: " + "word " * 30 for i in range(40))  # about 6,500 characters
    h.small.append(summary(bullets))
    outcome = await h.say("Ada, tl;dr of the last 10 messages")
    [sent] = h.sent
    day = time.strftime("%Y-%m-%d", time.gmtime(now_ms() / 1000))
    assert sent["text"] == (
        "Summary of the conversation over the last 10 messages (10 messages): it is long, so here it is as a "
        f"file, summary-general-{day}.md."
    )
    [file] = sent["files"]
    assert (file.filename, file.content_type) == (f"summary-general-{day}.md", "text/markdown")
    assert (
        file.data.decode()
        == f"Summary of the conversation over the last 10 messages (10 messages):\n\n{bullets.strip()}\n"
    )
    assert outcome.actions == ("SUMMARIZE_CONVERSATION",)


def test_a_summary_file_is_named_after_its_room_and_day_or_the_day_alone() -> None:
    at = 1_764_000_000_000  # 2025-11-24 16:00 UTC
    assert _file_name("#Plot & Lore: ideas!", at) == "summary-plot-lore-ideas-2025-11-24.md"
    assert _file_name("this conversation", at) == "summary-2025-11-24.md"
    assert _file_name("#日本", at) == "summary-2025-11-24.md"


async def test_the_service_summarises_the_last_n_messages_of_a_room(harness) -> None:
    h = await harness()
    markers = await _store_history(h, 60, start=now_ms() - 60_000)
    h.small.append(summary("- lots of chatter"))
    service = h.rt.get_service(CONVERSATION_SUMMARIES)
    assert service is not None
    result = await service.summarize_room(h.room, 20)
    prompt = h.prompts[-1]
    assert all(m in prompt for m in markers[-20:]) and markers[-21] not in prompt
    assert result.messages == 20 and not result.failed and not result.long
    assert result.text.startswith("Summary of the conversation over the last 20 messages (20 messages)")
    empty = await service.summarize_room(h.rt.unique_id("discord:room-nobody"), 50)
    assert empty.text == "Nothing to summarise: no messages over the last 50 messages."


async def test_since_the_asker_last_wrote_long_ago_is_the_last_500_not_the_default_50(harness) -> None:
    h = await harness()
    start = now_ms() - 3_600_000
    said = Memory(
        entity_id=HUMAN,
        agent_id=h.rt.agent_id,
        room_id=h.room,
        content=Content(text="<gone> back later"),
        created_at=start - 1000,
    )
    await h.rt.store.create_memory(said, "messages")
    markers = await _store_history(h, 1040, start=start)
    await h.rt.store.delete_many_memories(
        [m.id for m in await h.rt.store.get_memories(table="messages", room_id=h.room, entity_id=HUMAN, start=start)]
    )  # only Brann spoke after Sam left: 520 messages
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.extend([lambda params: summary("- Brann went on.")] * 10)
    await h.say("Ada, catch me up")
    conversation = "".join(p for p in h.prompts if CHUNK_PROMPT in p)
    assert "<gone>" not in conversation
    assert [m in conversation for m in markers[1::2]] == [False] * 20 + [True] * 500
    assert h.sent[-1]["text"].startswith("Summary of the conversation since you last wrote here (500 messages)")


async def test_in_a_private_chat_where_the_asker_wrote_every_message_it_covers_the_whole_chat(harness) -> None:
    h = await harness(ChannelType.DM)
    markers = await _store_history(h, 40, start=now_ms() - 3_600_000, step_ms=60_000, people=(HUMAN,), tag="n")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.append(summary("- Sam noted forty things."))
    await h.say("Ada, tl;dr of our chat")
    conversation = "".join(p for p in h.prompts if CHUNK_PROMPT in p)
    assert [m in conversation for m in markers] == [True] * 40
    assert h.sent[-1]["text"] == "Summary of the conversation between us (40 messages):\n\n- Sam noted forty things."


async def test_a_private_conversation_goes_back_to_its_last_long_pause_not_before(harness) -> None:
    h = await harness(ChannelType.DM)
    start = now_ms() - 10 * 3_600_000
    yesterday = await _store_history(h, 10, start=start, people=(HUMAN,), tag="y")
    # Four hours later, a session of 140 messages, Sam and Ada taking turns: more than the default 50.
    later = start + 4 * 3_600_000
    session = await _store_history(h, 140, start=later, step_ms=60_000, people=(HUMAN, h.rt.agent_id), tag="s")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.extend([lambda params: summary("- a long session.")] * 10)
    await h.say("Ada, catch me up")
    conversation = "".join(p for p in h.prompts if CHUNK_PROMPT in p)
    assert all(m in conversation for m in session) and not any(m in conversation for m in yesterday)
    assert h.sent[-1]["text"].startswith("Summary of the conversation between us (140 messages)")


async def test_a_room_where_only_the_asker_and_the_agent_talk_is_a_private_conversation_too(harness) -> None:
    h = await harness()  # a group room, but nobody else wrote lately
    markers = await _store_history(h, 30, start=now_ms() - 3_600_000, people=(HUMAN,), tag="n")
    h.large.append(plan("", "SUMMARIZE_CONVERSATION"))
    h.small.append(summary("- notes."))
    await h.say("Ada, tl;dr")
    conversation = "".join(p for p in h.prompts if CHUNK_PROMPT in p)
    assert all(m in conversation for m in markers)
    assert h.sent[-1]["text"].startswith("Summary of the conversation between us (30 messages)")
