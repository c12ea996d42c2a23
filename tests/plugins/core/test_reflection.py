"""REFLECTION: when it runs, what it stores, what it refuses."""

from __future__ import annotations

import pytest

from bot.kernel.errors import ModelError, StoreError
from bot.kernel.types import ChannelType
from bot.runtime.components import Provider, ProviderResult

from .harness import HUMAN, OTHER_BOT, plan


def reflection(*facts: tuple[str, str, str], rels: str = "") -> str:
    items = "".join(
        f"<fact><claim>{c}</claim><type>fact</type><in_bio>{b}</in_bio><already_known>{k}</already_known></fact>"
        for c, b, k in facts
    )
    return f"<response><thought>noted</thought><facts>{items}</facts><relationships>{rels}</relationships></response>"


async def test_reflection_waits_for_enough_new_messages_then_learns(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 8})  # runs after > 2 new messages
    h.large += [plan("ok"), plan("ok"), plan("ok")]
    rel = f"<relationship><sourceEntityId>Sam</sourceEntityId><targetEntityId>{OTHER_BOT}</targetEntityId><tags>friends, dm_interaction</tags></relationship>"
    h.small.append(
        reflection(
            ("Sam likes coffee", "false", "false"),
            ("Ada is a test", "true", "false"),
            ("Sam lives in Oslo", "false", "true"),
            rels=rel,
        )
    )
    await h.say("I love coffee")
    await h.say("with Brann")
    assert h.small_calls == 0  # two new messages: not yet
    await h.say("every morning")
    assert h.small_calls == 1
    facts = await h.rt.store.get_memories(table="facts")
    assert [f.content.text for f in facts] == ["Sam likes coffee"]
    rels = await h.rt.store.get_relationships(HUMAN)
    assert [(r.target_entity_id, sorted(r.tags), r.metadata.interactions) for r in rels] == [
        (OTHER_BOT, ["dm_interaction", "friends"], 1)
    ]


async def test_reflection_skips_known_facts_and_made_up_ids(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 4})
    bogus = "<relationship><sourceEntityId>11111111-1111-0111-8111-111111111111</sourceEntityId><targetEntityId>Sam</targetEntityId><tags>x</tags></relationship>"
    h.small += [
        reflection(("Sam likes tea", "false", "false")),
        reflection(("sam likes tea", "false", "false"), rels=bogus),
    ]
    for i in range(4):  # runs after the 2nd and the 4th: more than 4/4 new messages each time
        h.large.append(plan("ok"))
        await h.say(f"message {i}")
    assert h.small_calls == 2
    assert [f.content.text for f in await h.rt.store.get_memories(table="facts")] == ["Sam likes tea"]
    assert await h.rt.store.get_relationships(HUMAN) == []


async def test_reflection_does_not_run_when_the_agent_stayed_silent(harness) -> None:
    h = await harness(settings={"conversationLength": 4})
    h.small += ["<response><action>IGNORE</action></response>"] * 6
    for i in range(6):
        await h.say(f"chatter {i}")
    assert h.small_calls == 6  # only the should-respond decisions
    assert await h.rt.store.get_memories(table="facts") == []


async def test_facts_are_stored_under_who_they_are_about_and_whose_message_taught_them(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 4})
    h.small.append(
        "<response><thought>ok</thought><facts>"
        "<fact><claim>Brann fixes engines</claim><type>fact</type><about>Brann</about>"
        "<in_bio>false</in_bio><already_known>false</already_known></fact>"
        "<fact><claim>The fair opens Friday</claim><type>fact</type><about></about>"
        "<in_bio>false</in_bio><already_known>false</already_known></fact>"
        f"</facts><relationships><relationship><sourceEntityId>{HUMAN}</sourceEntityId>"
        f"<targetEntityId>{OTHER_BOT}</targetEntityId><tags>dm_interaction</tags></relationship>"
        "</relationships></response>"
    )
    for i in range(2):
        h.large.append(plan("ok"))
        await h.say(f"news {i}")
    facts = {f.content.text: f for f in await h.rt.store.get_memories(table="facts")}
    assert facts["Brann fixes engines"].entity_id == OTHER_BOT
    assert facts["Brann fixes engines"].metadata.to_json() == {"entityIds": [OTHER_BOT], "sourceEntityId": HUMAN}
    assert facts["The fair opens Friday"].entity_id == HUMAN  # about no one in particular: the sender's
    [rel] = await h.rt.store.get_relationships(HUMAN)
    assert rel.metadata.interactions == 1 and isinstance(rel.metadata.last_interaction_at, int)


@pytest.mark.parametrize("answer", [reflection(), "I would rather not say."], ids=["parsed", "unparsable"])
async def test_a_reflection_counts_for_the_cadence_whether_or_not_its_answer_parses(harness, answer: str) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 8})  # runs after > 2 new messages
    h.small += [answer] * 12
    for i in range(12):
        h.large.append(plan("ok"))
        await h.say(f"message {i}")
    assert h.small_calls == 4  # once every third message, not on every message


async def test_a_model_outage_defers_reflection_with_a_growing_back_off_not_on_every_message(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 8})  # due after > 2 new messages
    now = [1_000_000_000]
    h.rt.clock = lambda: now[0]
    h.small += [ModelError("the provider is down")] * 2 + [reflection(("Sam likes tea", "false", "false"))]

    async def say(count: int) -> None:
        for i in range(count):
            h.large.append(plan("ok"))
            await h.say(f"message {i}")

    await say(3)
    assert h.small_calls == 1  # due, and the model is down
    await say(3)
    assert h.small_calls == 1  # no retry on every message while it is down
    now[0] += 60_000
    await say(1)
    assert h.small_calls == 2  # the back-off is over: the conversation is still due; down again
    now[0] += 60_000
    await say(1)
    assert h.small_calls == 2  # the back-off doubled
    now[0] += 60_000
    await say(1)
    assert h.small_calls == 3  # back: the reflection learns what was said meanwhile
    assert [f.content.text for f in await h.rt.store.get_memories(table="facts")] == ["Sam likes tea"]
    await say(2)
    assert h.small_calls == 3  # and the usual cadence resumes
    await say(1)
    assert h.small_calls == 4


async def test_a_reflection_whose_facts_could_not_be_stored_still_counts_for_the_cadence(harness, monkeypatch) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 8})
    h.small += [reflection(("Sam likes tea", "false", "false"))] * 12
    store_class = type(h.rt.store)
    create_memory = store_class.create_memory

    async def failing(self, memory, table, **kwargs):
        if table == "facts":
            raise StoreError("database is locked")
        return await create_memory(self, memory, table, **kwargs)

    monkeypatch.setattr(store_class, "create_memory", failing)
    for i in range(12):
        h.large.append(plan("ok"))
        await h.say(f"message {i}")
    assert h.small_calls == 4
    assert await h.rt.store.get_memories(table="facts") == []


async def test_a_reflection_reads_the_conversation_again_but_not_every_other_provider(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 4})  # reflects after the second message
    runs: list[str] = []

    async def counted(runtime, message, state) -> ProviderResult:
        runs.append(message.content.text)
        return ProviderResult(text="# Weather\nsunny")

    h.rt.register_provider(Provider(name="WEATHER", get=counted))
    h.small.append(reflection(("Sam likes tea", "false", "false")))
    for text in ("first", "second"):
        h.large.append(plan("ok"))
        await h.say(text)
    assert h.small_calls == 1
    assert runs == ["first", "second"]  # once per plan; the reflection did not run it again
    assert "Sam: second" in h.prompts[-1]  # the conversation as it is now
