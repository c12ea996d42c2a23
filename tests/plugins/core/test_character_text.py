"""The CHARACTER provider text: bio, lore, examples and styles, sampled as elizaOS samples them."""

import random
import re
from typing import Any

from bot.config.character import Character
from plugins.core._character_text import character_context

BIO = [f"Bio line {i:02d}." for i in range(15)]
TOPICS = [f"topic-{c}" for c in "abcdefgh"]


def conversation(i: int) -> list[dict[str, Any]]:
    return [
        {"name": "{{name1}}", "content": {"text": f"conv{i} hello Ada, I am {{{{name1}}}} and this is {{{{user2}}}}"}},
        {"name": "Ada", "content": {"text": f"conv{i} hi {{{{name1}}}}", "actions": ["REPLY", "FOLLOW_ROOM"]}},
        {"name": "{{user2}}", "content": {"text": f"conv{i} hey {{{{user}}}}"}},
    ]


def make(**overrides: Any) -> Character:
    data: dict[str, Any] = {
        "name": "Ada",
        "bio": BIO,
        "topics": TOPICS,
        "adjectives": ["wry", "patient", "curious"],
        "style": {"all": ["ALL-1", "ALL-2"], "chat": ["CHAT-1"], "post": ["POST-1"]},
        "messageExamples": [conversation(i) for i in range(7)],
        "postExamples": [f"post {i}" for i in range(60)],
        "system": "You are Ada.",
        **overrides,
    }
    return Character.model_validate(data)


def test_seeded_output_is_byte_identical() -> None:
    c = make(lore=["l1", "l2"])
    for is_post in (False, True):
        first = character_context(c, rng=random.Random(99), is_post=is_post)
        again = character_context(c, rng=random.Random(99), is_post=is_post)
        assert first.text == again.text and first.values == again.values
    assert character_context(c, rng=random.Random(1)).text != character_context(c, rng=random.Random(2)).text


def test_bio_is_ten_of_fifteen_lines_under_the_about_header() -> None:
    ctx = character_context(make(), rng=random.Random(5))
    assert ctx.text.startswith("# About Ada\n")
    shown = re.findall(r"Bio line \d\d\.", ctx.text)
    assert len(shown) == 10 and len(set(shown)) == 10
    assert ctx.values["bio"] == "# About Ada\n" + " ".join(shown) + "\n"


def test_bio_does_not_mutate_the_character() -> None:
    c = make()
    character_context(c, rng=random.Random(5))
    assert c.bio == BIO


def test_one_current_topic_and_five_other_distinct_topics() -> None:
    for seed in range(20):
        ctx = character_context(make(), rng=random.Random(seed))
        current = re.findall(r"Ada is currently interested in (\S+)", ctx.text)
        also = re.search(r"Ada is also interested in (.+)", ctx.text)
        assert len(current) == 1 and also
        others = re.split(r", | and ", also.group(1))
        assert len(others) == 5 and len(set(others)) == 5
        assert current[0] not in others and set(others) <= set(TOPICS)
        assert ctx.values["topic"] == current[0]


def test_other_topics_are_listed_with_commas_and_a_final_and() -> None:
    ctx = character_context(make(topics=["x", "y", "z"]), rng=random.Random(0))
    assert re.search(r"Ada is also interested in [xyz] and [xyz]$", ctx.values["topics"])
    single = character_context(make(topics=["only"]), rng=random.Random(0))
    assert single.values["topic"] == "only" and single.values["topics"] == ""


def test_one_adjective_sentence() -> None:
    ctx = character_context(make(), rng=random.Random(3))
    assert ctx.values["adjective"] in {"wry", "patient", "curious"}
    assert f"\n\nAda is {ctx.values['adjective']}\n\n" in ctx.text


def test_chat_context_has_all_and_chat_directions_in_file_order_not_post() -> None:
    ctx = character_context(make(), rng=random.Random(1))
    assert "# Message Directions for Ada\nALL-1\nALL-2\nCHAT-1\n" in ctx.text
    assert "POST-1" not in ctx.text and "# Example Posts" not in ctx.text
    assert ctx.values["directions"] == ctx.values["messageDirections"] and ctx.values["postDirections"] == ""


def test_post_context_has_all_and_post_directions_not_chat() -> None:
    ctx = character_context(make(), rng=random.Random(1), is_post=True)
    assert "# Post Directions for Ada\nALL-1\nALL-2\nPOST-1\n" in ctx.text
    assert "CHAT-1" not in ctx.text and "# Example Conversations" not in ctx.text
    assert ctx.values["directions"] == ctx.values["postDirections"] and ctx.values["messageDirections"] == ""


def test_post_context_shows_at_most_fifty_posts() -> None:
    ctx = character_context(make(), rng=random.Random(1), is_post=True)
    assert ctx.values["examples"].startswith("# Example Posts for Ada\n")
    assert len(re.findall(r"^post \d+$", ctx.text, re.M)) == 50
    assert ctx.values["characterPostExamples"] == ctx.values["examples"]


def test_empty_style_omits_the_directions_section() -> None:
    ctx = character_context(make(style={}), rng=random.Random(1))
    assert "Directions" not in ctx.text and ctx.values["directions"] == ""


def test_five_of_seven_conversations_are_rendered() -> None:
    ctx = character_context(make(), rng=random.Random(8))
    assert ctx.values["examples"].startswith("# Example Conversations for Ada\n")
    shown = set(re.findall(r"conv(\d) hello", ctx.text))
    assert len(shown) == 5
    assert ctx.values["characterMessageExamples"] == ctx.values["examples"]


def test_example_messages_show_speaker_text_and_actions() -> None:
    ctx = character_context(make(messageExamples=[conversation(0)]), rng=random.Random(8))
    assert re.search(r"^Ada: conv0 hi [0-9a-z]{6} \(actions: REPLY, FOLLOW_ROOM\)$", ctx.text, re.M)


def test_placeholders_become_names_consistent_within_a_conversation() -> None:
    ctx = character_context(make(), rng=random.Random(11))
    assert "{{" not in ctx.text
    blocks = ctx.values["examples"].split("\n", 1)[1].strip().split("\n\n")
    assert len(blocks) == 5
    first_names = []
    for block in blocks:
        first, agent, second = block.split("\n")
        m1 = re.fullmatch(r"([0-9a-z]{6}): conv\d hello Ada, I am ([0-9a-z]{6}) and this is ([0-9a-z]{6})", first)
        m2 = re.fullmatch(r"Ada: conv\d hi ([0-9a-z]{6}) \(actions: REPLY, FOLLOW_ROOM\)", agent)
        m3 = re.fullmatch(r"([0-9a-z]{6}): conv\d hey ([0-9a-z]{6})", second)
        assert m1 and m2 and m3
        name1, user2 = m1.group(1), m1.group(3)
        assert m1.group(2) == m2.group(1) == m3.group(2) == name1  # {{name1}} and {{user}} are participant 1
        assert m3.group(1) == user2 != name1
        first_names.append(name1)
    assert len(set(first_names)) == 5  # fresh names for each conversation


def test_system_is_a_value_not_part_of_the_text() -> None:
    # Every model call sends it as the system message: a copy in the prompt would be sent twice.
    ctx = character_context(make(), rng=random.Random(1))
    assert "You are Ada." not in ctx.text and ctx.values["system"] == "You are Ada."


def test_minimal_character_gives_only_the_bio() -> None:
    ctx = character_context(Character.model_validate({"name": "Min", "bio": "Just me."}), rng=random.Random(0))
    assert ctx.text == "# About Min\nJust me.\n"
    assert ctx.values["agentName"] == "Min"
    assert all(
        ctx.values[k] == "" for k in ("topic", "topics", "adjective", "examples", "directions", "system", "lore")
    )


def test_lore_is_an_optional_section_of_at_most_ten_lines() -> None:
    ctx = character_context(make(lore=[f"lore {i}" for i in range(12)]), rng=random.Random(4))
    assert "# Lore of Ada\n" in ctx.text
    assert len(re.findall(r"^lore \d+$", ctx.text, re.M)) == 10
    assert "# Lore of" not in character_context(make(), rng=random.Random(4)).text


def test_values_have_the_upstream_keys() -> None:
    ctx = character_context(make(), rng=random.Random(0))
    assert set(ctx.values) == {
        "agentName",
        "bio",
        "system",
        "topic",
        "topics",
        "adjective",
        "messageDirections",
        "postDirections",
        "directions",
        "examples",
        "characterPostExamples",
        "characterMessageExamples",
        "lore",
    }


def test_text_never_contains_a_secret() -> None:
    c = make(
        settings={"secrets": {"OPENAI_API_KEY": "sk-very-secret-1"}, "model": "gpt-4"},
        secrets={"DISCORD_API_TOKEN": "discord-secret-2"},
        templates={"messageHandlerTemplate": "template-text-3"},
    )
    for seed in range(5):
        for is_post in (False, True):
            ctx = character_context(c, rng=random.Random(seed), is_post=is_post)
            blob = ctx.text + "".join(ctx.values.values())
            for secret in (
                "sk-very-secret-1",
                "discord-secret-2",
                "OPENAI_API_KEY",
                "DISCORD_API_TOKEN",
                "template-text-3",
            ):
                assert secret not in blob
