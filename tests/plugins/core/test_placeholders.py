"""A weak model's copy of the template's example answer counts as no answer, wherever it lands;
actions it made up are dropped, and its text is still the reply."""

from __future__ import annotations

import logging

import pytest

from bot.kernel.messages import Status
from bot.kernel.types import ChannelType
from plugins.core._placeholders import Placeholders
from plugins.core._streaming import ReplyWatcher
from plugins.core._templates import DEFAULT_TEMPLATES
from plugins.core._troupe import parse_decision

from .harness import HUMAN, plan

COPIED_PLAN = (
    "<response><thought>what Ada is thinking</thought><actions>FIRST_ACTION,SECOND_ACTION</actions>"
    "<providers>PROVIDER_A,PROVIDER_B</providers><text>the message to send</text></response>"
)
# An elizaOS character's own template, with its own stand-ins.
OVERRIDE = """{{providers}}
Respond using XML format like this:
<response>
    <thought>Your thought here</thought>
    <actions>ACTION1,ACTION2</actions>
    <providers>PROVIDER1,PROVIDER2</providers>
    <text>Your response text here, {{agentName}}</text>
</response>
"""


def of(name: str) -> Placeholders:
    return Placeholders.of(DEFAULT_TEMPLATES[name], {"agentName": "Ada", "currentPlatform": "discord"})


def test_the_stand_ins_come_from_the_template_filled_in_and_single_words_are_answers() -> None:
    handler = of("messageHandlerTemplate")
    for copied in ("the message to send", "  The Message  to send. ", "what Ada is thinking", "FIRST_ACTION"):
        assert handler.copied(copied), copied
    assert handler.copied("first_action, second_action")  # a copied list, landed in the text
    assert not handler.copied("what Bo is thinking") and not handler.copied("REPLY") and not handler.copied("")
    # Example values that are also real answers are not stand-ins; nor is a filled-in tag.
    assert not of("roleExtractionTemplate").copied("ADMIN")
    assert of("roleExtractionTemplate").copied("id of the person")
    assert not of("componentTemplate").copied("email")
    assert not of("shouldRespondTemplate").copied("Ada")
    assert of("shouldRespondTemplate").copied("RESPOND | IGNORE | STOP")
    assert of("reflectionTemplate").copied("one new piece of information")
    assert Placeholders.of("no example answer here", {}).values == frozenset()


def test_a_characters_own_template_is_read_the_same_way() -> None:
    own = Placeholders.of(OVERRIDE, {"agentName": "Ada", "providers": "<response><text>hi</text></response>"})
    assert own.copied("Your response text here, Ada") and own.copied("ACTION1") and own.copied("provider2")
    assert not own.copied("hi")  # what the prompt's other parts hold is not part of the example


def test_without_takes_the_copies_out_and_nothing_is_left_of_a_pure_copy(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    handler = of("messageHandlerTemplate")
    assert (
        handler.without({"thought": "what Ada is thinking", "actions": ["FIRST_ACTION"]}, agent="Ada", kind="plan")
        is None
    )
    kept = handler.without(
        {"thought": "hm", "actions": ["REPLY", "SECOND_ACTION"], "text": "Hi Sam", "providers": ["PROVIDER_A"]},
        agent="Ada",
        kind="plan",
    )
    assert kept == {"thought": "hm", "actions": ["REPLY"], "text": "Hi Sam", "providers": []}
    assert "Ada: plan: the model copied the template's example ('SECOND_ACTION', 'PROVIDER_A')" in caplog.text
    assert handler.without(None, agent="Ada", kind="plan") is None


def test_a_streamed_reply_is_held_back_while_it_may_be_a_stand_in() -> None:
    placeholders = of("messageHandlerTemplate")

    def streamed(raw: str) -> list[str]:
        seen: list[str] = []
        watcher = ReplyWatcher(seen.append, placeholders)
        for i in range(0, len(raw), 3):
            watcher.feed(raw[i : i + 3])
        return seen

    assert streamed(plan("the message to send")) == []
    seen = streamed(plan("the message is: hello"))
    assert seen[-1] == "the message is: hello"
    assert not any(s.strip() in ("the", "the message") for s in seen)  # held while it could be the copy


async def test_a_plan_of_placeholders_is_asked_again_and_never_sent(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large += [COPIED_PLAN, plan("the message to send"), plan("Hello Sam!", "REPLY,FIRST_ACTION")]
    outcome = await h.say("hi")
    assert (outcome.status, outcome.actions) == (Status.REPLIED, ("REPLY",))
    assert [s["text"] for s in h.sent] == ["Hello Sam!"]
    assert h.large_calls == 3

    h.large += [COPIED_PLAN, plan("The message to send."), plan("", "REPLY")]
    assert (await h.say("again")).status is Status.UNPARSED
    assert len(h.sent) == 1
    stored = [str(m.content) for m in await h.rt.store.get_memories(table="messages")]
    assert not any("message to send" in m.lower() for m in stored)


async def test_a_plan_with_text_and_only_unknown_actions_replies_with_its_text(
    harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    h = await harness(ChannelType.DM)
    h.large.append(plan("Here you go.", "SING_A_SONG,DANCE"))
    outcome = await h.say("hi")
    assert (outcome.status, outcome.actions) == (Status.REPLIED, ("REPLY",))
    assert [s["text"] for s in h.sent] == ["Here you go."]
    assert "Ada: the model asked for unknown actions 'SING_A_SONG', 'DANCE'; doing REPLY" in caplog.text

    # Unknown actions and nothing to say: asked again, as an answer that did not parse.
    h.large += [plan("", "SING_A_SONG")] * 3
    assert (await h.say("and?")).status is Status.UNPARSED
    assert len(h.sent) == 1


async def test_a_characters_own_template_has_its_own_stand_ins_caught(harness) -> None:
    h = await harness(ChannelType.DM, templates={"messageHandlerTemplate": OVERRIDE})
    copied = "<response><thought>Your thought here</thought><actions>ACTION1</actions><text>Your response text here, Ada</text></response>"
    h.large += [copied, plan("A real answer.")]
    await h.say("hi")
    assert [s["text"] for s in h.sent] == ["A real answer."]


async def test_a_copied_decision_is_no_decision(harness) -> None:
    h = await harness()  # a group room: the small model decides
    h.small.append(
        "<response><name>Ada</name><reasoning>one or two sentences on why</reasoning><action>RESPOND | IGNORE | STOP</action></response>"
    )
    assert (await h.say("nice weather")).status is Status.IGNORED
    assert h.large_calls == 0
    # The troupe's decision reads only the characters' names: its stand-ins pick nobody.
    copied = (
        "<response><reasoning>one or two sentences on why</reasoning><answer>the names that answer, in order, "
        "separated by commas; empty for nobody</answer><stop>the names asked to stay out</stop></response>"
    )
    assert parse_decision(copied, ["Ada", "Cleo"]) == ([], [])


async def test_a_copied_fact_is_never_stored(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 4})
    example = "<type>fact|opinion|status</type><about>id of the person</about><in_bio>false</in_bio>"
    facts = "".join(
        f"<fact><claim>{claim}</claim>{example}</fact>" for claim in ("one new piece of information", "Sam keeps bees")
    )
    copied_relationship = (
        "<relationship><sourceEntityId>id of the initiator</sourceEntityId>"
        "<targetEntityId>id of the other</targetEntityId><tags>group_interaction</tags></relationship>"
    )
    h.small.append(
        f"<response><thought>how the conversation is going</thought><facts>{facts}</facts>"
        f"<relationships>{copied_relationship}</relationships></response>"
    )
    for i in range(2):
        h.large.append(plan("ok"))
        await h.say(f"message {i}")
    assert h.small_calls == 1
    facts = await h.rt.store.get_memories(table="facts")
    assert [(f.content.text, f.content.type, f.entity_id) for f in facts] == [("Sam keeps bees", "fact", HUMAN)]
    assert await h.rt.store.get_relationships(HUMAN) == []
