"""Prompts built to the model's context window: the estimate, what is cut first, and a refusal
for length answered once with a smaller prompt."""

from __future__ import annotations

import re
from typing import Any

from bot.kernel.answer_lengths import DECISION_TOKENS, EXTRACTION_TOKENS
from bot.kernel.content import Content
from bot.kernel.errors import ModelContextExceeded
from bot.kernel.messages import Status
from bot.kernel.models import ModelType
from bot.kernel.types import ChannelType, Memory
from plugins.core._budget import Cut, Piece, Section, fit_prompt, provider_sections, reply_reserve
from plugins.core._prompts import render
from plugins.core._tokens import estimate_tokens

from .harness import HUMAN, plan
from .test_data_actions import FakeMessenger, channels, target

TEMPLATE = "<context>\n{{providers}}\n</context>\n<rules>Answer briefly.</rules>"
EXAMPLES = [
    [{"name": "{{name1}}", "content": {"text": "Tell me about comets."}}, {"name": "Ada", "content": {"text": "Ice."}}],
    [{"name": "{{name1}}", "content": {"text": "And engines?"}}, {"name": "Ada", "content": {"text": "They compute."}}],
]


def test_the_estimate_errs_high_on_prose_and_counts_digits_one_by_one() -> None:
    prose = "The quick brown fox jumps over the lazy dog, and then it naps in the warm afternoon sun."
    assert estimate_tokens(prose) >= len(prose) / 4  # GPT's and Llama's tokenizers: about 4 characters each
    assert estimate_tokens("") == 0
    assert estimate_tokens("2026-12-07") == 10
    assert estimate_tokens("日本語") == 3
    assert estimate_tokens("a\nb") == 3


def conversation(count: int) -> Section:
    return Section([Piece(f"10:{n:02d} Sam: line {n}", Cut.OLD_MESSAGE) for n in range(count)], "# Conversation")


def slots(*sections: Section) -> dict[str, list[Section]]:
    return {"providers": list(sections)}


def test_without_a_budget_nothing_is_cut() -> None:
    parts = slots(Section.of("# About Ada"), conversation(3))
    prompt = fit_prompt(TEMPLATE, {}, parts, None)
    assert prompt == render(
        TEMPLATE,
        {"providers": "# About Ada\n\n# Conversation\n" + "\n".join(f"10:{n:02d} Sam: line {n}" for n in range(3))},
    )


def test_old_messages_go_first_oldest_first_then_examples_long_sections_and_descriptions() -> None:
    core = Section.of("# About Ada\nAda designs analytical engines.")
    examples = Section.of("# Examples\n" + "Sam: tell me a long story about engines\n" * 20, Cut.EXAMPLES)
    knowledge = Section.of("# Knowledge\n" + "engines compute numbers\n" * 30, Cut.LONG_SECTION)
    received = Section([Piece("Sam: and now?", Cut.NEWEST_MESSAGE)], "# Received Message")
    described = Section.of("# Available Actions\nREPLY: say something back", Cut.DESCRIPTIONS)
    parts = slots(described, core, knowledge, examples, conversation(20), received)
    full = estimate_tokens(fit_prompt(TEMPLATE, {}, parts, None))

    fewer_lines = fit_prompt(TEMPLATE, {}, parts, full - 30)
    assert "line 0\n" not in fewer_lines and "line 19" in fewer_lines  # the oldest gone, the newest kept
    assert "# Examples" in fewer_lines and "# Knowledge" in fewer_lines

    no_examples = fit_prompt(TEMPLATE, {}, parts, full - 300)
    assert "Sam: line" not in no_examples and "# Examples" not in no_examples and "# Knowledge" in no_examples

    no_knowledge = fit_prompt(TEMPLATE, {}, parts, full - 500)
    assert "# Knowledge" not in no_knowledge and "# Available Actions" in no_knowledge

    bare = fit_prompt(TEMPLATE, {}, parts, 40)
    assert "# Available Actions" not in bare
    assert "Ada designs analytical engines." in bare and "Sam: and now?" in bare and "Answer briefly." in bare
    assert parts["providers"][2].pieces[0].text.startswith("# Knowledge")  # the caller's sections are left as they were


def test_a_very_long_newest_message_is_shortened_with_a_note() -> None:
    long_line = "Sam: " + " ".join(f"word{n}" for n in range(3000))
    received = Section([Piece(long_line, Cut.NEWEST_MESSAGE)], "# Received Message")
    prompt = fit_prompt(TEMPLATE, {}, slots(Section.of("# About Ada"), conversation(5), received), 1000)
    assert estimate_tokens(prompt) <= 1000
    assert "Sam: word0 word1" in prompt and "word2999" not in prompt
    assert re.search(r"\[… \d+ more characters of this message were cut to fit the model's context\]", prompt)
    assert "Sam: line" not in prompt  # the old lines went before the newest was shortened


async def test_the_sections_of_a_state_join_as_its_providers_text(harness) -> None:
    h = await harness(ChannelType.DM, messageExamples=EXAMPLES)
    for text in ("hello", "", "and again"):  # the first: no conversation before it; then one without text
        message = Memory(entity_id=HUMAN, room_id=h.room, content=Content(text=text, source="discord"))
        await h.rt.store.create_memory(message, "messages")
        state = await h.rt.compose_state(message, ["ACTIONS"])
        assert fit_prompt(TEMPLATE, {}, {"providers": provider_sections(state)}, None) == render(TEMPLATE, state.values)


async def test_the_plan_prompt_cuts_old_lines_before_the_example_conversations(harness) -> None:
    h = await harness(ChannelType.DM, messageExamples=EXAMPLES)
    prompts: list[str] = []
    window: list[int | None] = [None]

    async def large(runtime: Any, params: dict[str, Any]) -> str:
        prompts.append(params["prompt"])
        return plan("ok")

    h.rt.register_model(ModelType.TEXT_LARGE, large, "window", 100, context_length=lambda: window[0])
    for n in range(30):
        await h.say(f"line number {n} of what Sam had to say about engines")
    full = estimate_tokens(prompts[-1])
    system = estimate_tokens(h.rt.character.system or "")
    # A window with room for all but about 100 tokens of the prompt, once the reply has its share.
    window[0] = next(w for w in range(full, 4 * full) if w - reply_reserve(1024, w) - system - 64 >= full - 100)
    await h.say("and the newest line")
    cut = prompts[-1]
    assert "line number 0 " not in cut and "line number 29 " in cut  # the oldest lines went
    assert "Tell me about comets." in cut and "They compute." in cut  # the examples stayed
    assert "# Received Message\nSam: and the newest line" in cut
    assert estimate_tokens(cut) < full


async def test_a_refusal_for_length_is_answered_once_with_a_smaller_prompt(harness) -> None:
    h = await harness(ChannelType.DM)
    for n in range(10):
        await h.say(f"line number {n}")
    h.large.append(ModelContextExceeded("too long", limit=None))
    h.large.append(plan("Short enough."))
    before = h.large_calls
    outcome = await h.say("one more")
    assert outcome.status is Status.REPLIED and h.sent[-1]["text"] == "Short enough."
    assert h.large_calls - before == 2
    first, second = h.prompts[-2], h.prompts[-1]
    assert estimate_tokens(second) < estimate_tokens(first)
    assert "line number 0" in first and "line number 0" not in second  # old lines went
    assert "Sam: one more" in second  # the newest message stays

    h.large.extend([ModelContextExceeded("too long", limit=None), ModelContextExceeded("still", limit=None)])
    before = h.large_calls
    outcome = await h.say("and another")
    assert outcome.status is Status.MODEL_UNREACHABLE and h.large_calls - before == 2  # once, not for ever


async def test_the_decision_whether_to_answer_is_built_to_the_small_models_window(harness) -> None:
    h = await harness(ChannelType.GROUP)
    prompts: list[str] = []
    bounds: set[int] = set()

    async def small(runtime: Any, params: dict[str, Any]) -> str:
        prompts.append(params["prompt"])
        bounds.add(params["max_tokens"])
        return "<response><action>IGNORE</action></response>"

    h.rt.register_model(ModelType.TEXT_SMALL, small, "window", 100, context_length=lambda: 2048)
    for n in range(40):
        await h.say(f"line number {n}: " + "the weather is fine and the sea is calm today " * 5)
    assert bounds == {DECISION_TOKENS} and all(estimate_tokens(p) <= 2048 - DECISION_TOKENS - 64 for p in prompts)
    last = prompts[-1]
    assert "line number 39:" in last and "line number 8:" not in last  # the oldest of the window went first


async def test_an_extraction_is_built_to_the_small_models_window(harness) -> None:
    """SEND_MESSAGE's target extraction carries the conversation: on a small window its oldest
    lines give way and the request stays whole."""
    h = await harness(ChannelType.DM)
    h.rt.register_service("discord", FakeMessenger())
    await channels(h)
    for n in range(30):
        h.large.append(plan(f"Noted {n}."))
        await h.say(f"line number {n}: " + "the weather is fine and the sea is calm today " * 5)
    extractions: list[str] = []

    async def small(runtime: Any, params: dict[str, Any]) -> str:
        if "send a message to a person or a channel" not in params["prompt"]:
            return "<response><action>RESPOND</action></response>"
        extractions.append(params["prompt"])
        return target("room", "#announcements", "The meeting moved to 3pm.")

    h.rt.register_model(ModelType.TEXT_SMALL, small, "window", 100, context_length=lambda: 2048)
    h.large.append(plan("On it.", "REPLY,SEND_MESSAGE"))
    await h.say("Ada, tell #announcements that the meeting moved to 3pm")
    (prompt,) = extractions
    assert estimate_tokens(prompt) <= 2048 - reply_reserve(EXTRACTION_TOKENS, 2048) - 64
    assert "tell #announcements that the meeting moved to 3pm" in prompt
    assert "line number 29:" in prompt and "line number 0:" not in prompt  # the oldest lines went first
    assert h.sent[-1]["text"] == "Message sent to #announcements on discord."
