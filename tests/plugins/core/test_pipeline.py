"""The message pipeline end to end inside one runtime, with scripted models."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import ConfigError, ModelError
from bot.kernel.types import ChannelType, Memory, RoomState
from bot.runtime.components import Action, ActionResult
from bot.runtime.events import ActionCompleted, ActionStarted
from plugins.core._embedding import embeddings

from .harness import HUMAN, OTHER_BOT, plan


async def test_direct_message_gets_a_reply_without_the_small_model(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("Hello, Sam."))
    outcome = await h.say("hi")
    assert outcome.status == "replied"
    assert [s["text"] for s in h.sent] == ["Hello, Sam."] and h.small_calls == 0
    stored = await h.rt.store.get_memories(table="messages", room_id=h.room)
    assert [m.content.text for m in stored] == ["hi"]  # the adapter's callback stores what it sends


async def test_undecided_group_message_asks_the_small_model(harness) -> None:
    h = await harness()
    h.small += [
        "<response><action>IGNORE</action></response>",
        "<response><action>RESPOND</action></response>",
        "<response><action>STOP</action></response>",
    ]
    h.large.append(plan("Sure."))
    assert (await h.say("anyone around?")).status == "ignored"
    assert (await h.say("what do you think?")).status == "replied"
    assert (await h.say("please stop")).status == "stopped"
    assert h.small_calls == 3 and h.large_calls == 1 and [s["text"] for s in h.sent] == ["Sure."]
    decisions = [
        m for m in await h.rt.store.get_memories(table="messages", room_id=h.room) if m.entity_id == h.rt.agent_id
    ]
    assert sorted(d.content.actions[0] for d in decisions) == ["IGNORE", "STOP"]


async def test_asked_to_stay_out_it_stays_out_without_a_model_until_named(harness) -> None:
    h = await harness()
    h.small.append("<response><action>STOP</action></response>")
    assert (await h.say("we'd rather talk among ourselves")).status == "stopped"
    assert await h.room_state() is RoomState.STOPPED
    for chatter in ("so, the plot", "what do you all think?"):
        outcome = await h.say(chatter)
        assert outcome.status == "stopped" and h.small_calls == 1 and h.large_calls == 0
    h.large.append(plan("Back with you."))
    assert (await h.say("Ada, what do you think?")).status == "replied"  # named: invited back
    assert await h.room_state() is None
    h.small.append("<response><action>IGNORE</action></response>")
    assert (await h.say("and the ending?")).status == "ignored" and h.small_calls == 2  # decides again


async def test_follow_changes_behaviour_and_survives_a_restart(harness, tmp_path: Path) -> None:
    h = await harness()
    h.large.append(plan("I'll keep an eye on things.", "REPLY,FOLLOW_ROOM"))
    assert (await h.say("Ada, please follow this channel")).status == "replied"
    assert await h.room_state() is RoomState.FOLLOWED
    h.large.append(plan("Interesting!"))
    assert (await h.say("the weather is nice")).status == "replied"
    assert h.small_calls == 0  # followed rooms skip the small model
    h.large.append(plan("Fine.", "REPLY,UNFOLLOW_ROOM"))
    await h.say("Ada, stop following here")
    assert await h.room_state() is None


async def test_mute_silences_until_addressed_and_unmuted(harness) -> None:
    h = await harness()
    h.large.append(plan("Going quiet.", "REPLY,MUTE_ROOM"))
    await h.say("Ada, be quiet please")
    assert await h.room_state() is RoomState.MUTED
    calls = (h.small_calls, h.large_calls)
    outcome = await h.say("chatting among ourselves")
    assert outcome.status == "muted" and (h.small_calls, h.large_calls) == calls
    h.large.append(plan("I'm back.", "REPLY,UNMUTE_ROOM"))
    assert (await h.say("Ada, you can talk again")).status == "replied"
    assert await h.room_state() is None
    assert [s["text"] for s in h.sent] == ["Going quiet.", "I'm back."]


async def test_a_mute_nobody_asked_for_is_not_done(harness) -> None:
    # A small model names MUTE_ROOM on a message that asks nothing of the kind: not offered, and
    # refused if named anyway, so the room keeps answering.
    h = await harness()
    h.large.append(plan("Noted, blue it is.", "REPLY,MUTE_ROOM"))
    assert (await h.say("Ada, please remember this: my favourite colour is blue")).status == "replied"
    assert await h.room_state() is None
    h.large.append(plan("Blue.", "REPLY"))
    assert (await h.say("Ada, what is my favourite colour?")).status == "replied"
    assert [s["text"] for s in h.sent] == ["Noted, blue it is.", "Blue."]


async def test_malformed_model_output_is_retried_then_silence(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large += ["I think I should reply", "```\nnothing useful\n```", "still prose"]
    assert (await h.say("hi")).status == "unparsed"
    assert h.large_calls == 3 and h.sent == []
    h.large += [
        "Sure! ```xml\n<response><thought>ok</thought><actions>REPLY</actions><text>Fenced.</text></response>\n```"
    ]
    assert (await h.say("again")).status == "replied" and h.sent[-1]["text"] == "Fenced."


async def test_a_model_outage_means_silence_not_a_crash_and_says_so(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(ModelError("openai is unavailable", agent="Ada", provider="openai"))
    outcome = await h.say("hi")
    assert (outcome.status, outcome.reason) == ("model_unreachable", "openai is unavailable") and h.sent == []
    g = await harness(name="Bea")
    g.small.append(ModelError("down"))
    assert (await g.say("unaddressed")).status == "model_unreachable"


async def test_newer_message_supersedes_an_older_reply(harness) -> None:
    h = await harness()
    await h.rt.store.set_participant_state(h.room, h.rt.agent_id, RoomState.FOLLOWED)
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()
        return plan("old answer")

    h.large += [slow, plan("new answer")]
    first = asyncio.create_task(h.say("first"))
    async with asyncio.timeout(60):  # the first is being planned
        while h.large_calls < 1:
            await asyncio.sleep(0.01)
    second = await h.say("second")
    release.set()
    assert (await first).status == "superseded" and second.status == "replied"
    assert [s["text"] for s in h.sent] == ["new answer"]


async def test_a_message_heard_late_does_not_supersede_the_answer_to_one_said_after_it(harness) -> None:
    # Telegram: a character's words reach another through the relay at once, while a person's
    # message said before them comes with the next poll. Newest is as said, not as heard.
    h = await harness()
    await h.rt.store.set_participant_state(h.room, h.rt.agent_id, RoomState.FOLLOWED)
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()
        return plan("answer to the newest")

    h.large += [slow, plan("answer to the older")]
    said = 1_800_000_000_000
    newest = Memory(
        id=str(uuid.uuid4()),
        entity_id=OTHER_BOT,
        room_id=h.room,
        content=Content(text="said second", source="discord"),
        created_at=said + 1000,
    )
    older = Memory(
        id=str(uuid.uuid4()),
        entity_id=HUMAN,
        room_id=h.room,
        content=Content(text="said first", source="discord"),
        created_at=said,
    )
    answering = asyncio.create_task(h.deliver(newest))
    async with asyncio.timeout(60):  # the newest is being planned
        while h.large_calls < 1:
            await asyncio.sleep(0.01)
    late = await h.deliver(older)
    release.set()
    assert (await answering).status == "replied" and late.status == "superseded"
    assert [s["text"] for s in h.sent] == ["answer to the newest"]


async def test_a_direct_address_is_never_superseded(harness) -> None:
    h = await harness()
    await h.rt.store.set_participant_state(h.room, h.rt.agent_id, RoomState.FOLLOWED)
    release = asyncio.Event()

    async def slow(params: dict) -> str:
        await release.wait()
        return plan("answer to the question")

    h.large += [slow, plan("later")]
    first = asyncio.create_task(h.say("Ada, what time is it?"))
    async with asyncio.timeout(60):  # the first is being planned
        while h.large_calls < 1:
            await asyncio.sleep(0.01)
    await h.say("unrelated chatter")
    release.set()
    assert (await first).status == "replied"
    assert sorted(s["text"] for s in h.sent) == ["answer to the question", "later"]


async def test_a_failing_action_does_not_stop_the_chain(harness, caplog) -> None:
    h = await harness(ChannelType.DM)

    async def broken(*args: Any) -> ActionResult:
        raise RuntimeError("action broke")

    h.rt.register_action(Action("EXPLODE", broken))
    events: list[str] = []

    async def record(event: ActionStarted | ActionCompleted) -> None:
        events.append(f"{event.action}:{event.success if isinstance(event, ActionCompleted) else 'start'}")

    h.rt.on(ActionStarted, record)
    h.rt.on(ActionCompleted, record)
    h.large.append(plan("Still here.", "EXPLODE,REPLY"))
    assert (await h.say("hi")).status == "replied"
    assert h.sent[-1]["text"] == "Still here."
    assert events == ["EXPLODE:start", "EXPLODE:False", "REPLY:start", "REPLY:True"]
    assert "action EXPLODE failed" in caplog.text


async def test_ignore_with_text_is_a_reply_and_ignore_alone_is_silence(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large += [plan("", "IGNORE,REPLY"), plan("Actually, hi.", "REPLY,IGNORE")]
    assert (await h.say("one")).status == "ignored"
    assert (await h.say("two")).status == "replied" and h.sent[-1]["text"] == "Actually, hi."


async def test_none_with_text_is_a_reply(harness) -> None:
    """NONE is no action beyond replying: a weak model that writes text and NONE (or IGNORE and
    NONE) still answers with its text."""
    h = await harness(ChannelType.DM)
    h.large += [plan("Hello there.", "NONE"), plan("Still here.", "IGNORE,NONE"), plan("", "NONE")]
    assert (await h.say("one")).status == "replied" and h.sent[-1]["text"] == "Hello there."
    assert (await h.say("two")).status == "replied" and h.sent[-1]["text"] == "Still here."
    assert (await h.say("three")).status != "replied"


async def test_actions_resolve_by_simile_and_spelling(harness) -> None:
    h = await harness()
    h.large.append(plan("Quiet now.", "reply,shut_up"))
    await h.say("Ada hush")
    assert await h.room_state() is RoomState.MUTED


async def test_own_and_duplicate_messages(harness) -> None:
    h = await harness(ChannelType.DM)
    assert (await h.say("echo", entity=h.rt.agent_id)).status == "own"
    h.large += [plan("one"), plan("two")]
    same = str(uuid.uuid4())
    await h.say("hello", id=same)
    await h.say("hello", id=same)
    stored = [m for m in await h.rt.store.get_memories(table="messages", room_id=h.room) if m.entity_id == HUMAN]
    assert len(stored) == 1


async def test_bot_conversations_stop_at_the_loop_guard(harness) -> None:
    h = await harness()
    h.rt.set_setting("MAX_BOT_TURNS", "2")
    await h.rt.store.set_participant_state(h.room, h.rt.agent_id, RoomState.FOLLOWED)
    statuses = []
    for i in range(3):
        h.large.append(plan(f"reply {i}"))
        statuses.append(
            (await h.say(f"bot says {i}", entity=OTHER_BOT, metadata=MemoryMetadata(author_is_bot=True))).status
        )
        # what the adapter would store for the agent's own sent reply
        await h.rt.store.create_memory(
            Memory(entity_id=h.rt.agent_id, room_id=h.room, content=Content(text=f"reply {i}")), "messages"
        )
    assert statuses == ["replied", "loop_guard", "loop_guard"]
    h.large.append(plan("hello human"))
    assert (await h.say("I'm back")).status == "replied"


async def test_the_platform_hears_when_a_reply_is_coming_and_only_then(harness) -> None:
    h = await harness()
    calls: list[str] = []

    async def typing() -> None:
        calls.append("typing")

    h.small.append("<response><action>IGNORE</action></response>")
    await h.say("chatter between others", on_responding=typing)
    assert calls == []
    h.large.append(plan("Yes?"))
    await h.say("Ada?", on_responding=typing)
    assert calls == ["typing"]

    async def broken() -> None:
        raise RuntimeError("typing endpoint down")

    h.large.append(plan("Still here."))
    assert (await h.say("Ada, you there?", on_responding=broken)).status == "replied"


async def test_one_embedding_per_message_serves_storage_and_the_facts_search(harness) -> None:
    h = await harness(ChannelType.DM)
    embedded: list[str] = []

    async def embedding(runtime: Any, params: Any) -> list[float]:
        embedded.append(params["text"] if params else "")
        return [0.5] * 384

    h.rt.register_model("TEXT_EMBEDDING", embedding, "fake")
    h.large.append(
        "<response><thought>t</thought><actions>REPLY</actions><providers>FACTS</providers>"
        "<text>Green tea, I believe.</text></response>"
    )
    embedded.clear()  # the dimension probe at start
    assert (await h.say("what tea do I like?")).status == "replied"
    async with asyncio.timeout(60):
        while not (stored := await h.rt.store.get_memories(table="messages", room_id=h.room))[0].embedding:
            await asyncio.sleep(0.01)
    assert embedded == ["what tea do I like?"]  # stored with it, and searched with it: one call
    assert stored[0].embedding == [0.5] * 384


async def _record_embeddings(h: Any, order: list[str]) -> None:
    async def embedding(runtime: Any, params: Any) -> list[float]:
        if params:  # not the dimension probe at start
            order.append(f"embed {params['text']}")
        return [0.25] * 384

    h.rt.register_model("TEXT_EMBEDDING", embedding, "fake")


async def test_a_reply_nobody_needed_the_vector_for_goes_out_before_the_message_is_embedded(harness) -> None:
    h = await harness(ChannelType.DM)
    order: list[str] = []
    await _record_embeddings(h, order)

    def planned(params: dict) -> str:
        order.append("plan")
        return plan("Hello.")

    h.large.append(planned)
    assert (await h.say("hi there")).status == "replied"
    async with asyncio.timeout(60):
        while not (stored := await h.rt.store.get_memories(table="messages", room_id=h.room))[-1].embedding:
            await asyncio.sleep(0.01)
    assert order == ["plan", "embed hi there"]  # off the reply's path, and still stored with the message
    assert stored[-1].embedding == [0.25] * 384


async def test_a_message_the_model_decides_on_is_embedded_while_it_decides(harness) -> None:
    h = await harness()
    order: list[str] = []
    await _record_embeddings(h, order)

    def decided(params: dict) -> str:
        order.append("decide")
        return "<response><action>IGNORE</action></response>"

    h.small.append(decided)
    assert (await h.say("anyone around?")).status == "ignored"
    assert order == ["embed anyone around?", "decide"]


async def test_a_held_back_embedding_is_never_dropped_by_newer_ones(harness) -> None:
    h = await harness()
    order: list[str] = []
    await _record_embeddings(h, order)
    vectors = embeddings(h.rt)
    for i in range(70):  # more than are kept for the providers
        vectors.hold(f"memory-{i}", f"text {i}")
    await asyncio.sleep(0.05)
    assert order == [f"embed text {i}" for i in range(6)]  # the oldest, pushed out, went on their way
    assert vectors.start("memory-69") is not None  # the rest wait until asked for


async def test_a_bypassed_room_type_is_answered_without_the_small_model_but_a_mute_holds(harness) -> None:
    h = await harness(settings={"SHOULD_RESPOND_BYPASS_TYPES": "group"})
    h.large.append(plan("Happy to help."))
    assert (await h.say("anyone know a good book?", id="b-1")).status == "replied"
    assert h.small_calls == 0 and [s["text"] for s in h.sent] == ["Happy to help."]
    trace = await h.rt.store.get_trace("b-1")
    assert trace is not None and (trace.rule, trace.reason) == (
        "bypass_type",
        "GROUP room (SHOULD_RESPOND_BYPASS_TYPES)",
    )
    await h.rt.store.set_participant_state(h.room, h.rt.agent_id, RoomState.MUTED)
    assert (await h.say("and another?")).status == "muted" and (h.small_calls, h.large_calls) == (0, 1)


async def test_a_bypass_naming_no_platform_stops_the_character_at_set_up(harness) -> None:
    with pytest.raises(ConfigError, match=r"SHOULD_RESPOND_BYPASS_SOURCES names 'slack'"):
        await harness(settings={"SHOULD_RESPOND_BYPASS_SOURCES": "discord, slack"})
