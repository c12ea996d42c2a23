"""Memory retention: old conversation becomes summaries the agent can still find, on schedule,
without ever losing a message to a model failure; facts and relationships are never touched."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import load_character
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import ModelUnavailable, PluginLoadError
from bot.kernel.messages import Status
from bot.kernel.models import ModelType
from bot.kernel.record_metadata import RelationshipMetadata, TaskMetadata
from bot.kernel.traces import MessageTrace
from bot.kernel.types import ChannelType, Claim, Entity, Handling, Memory, Room, now_ms
from bot.runtime.agent import AgentRuntime
from bot.store import Database
from plugins.core._retention import SUMMARIES, TASK_NAME, RetentionSettings, run_retention

from .harness import HUMAN

DAY = 86_400_000
HOUR = 3_600_000
START = 1_700_000_000_000
SAM = "00000000-0000-0000-0000-0000000000a1"
ROOM = "00000000-0000-0000-0000-00000000c001"
QUIET = "00000000-0000-0000-0000-00000000c002"


def embed(text: str) -> list[float]:
    """A bag-of-words vector: texts sharing words are similar."""
    vector = [0.0] * 384
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.strip(".,?!").encode()).hexdigest(), 16) % 384] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@dataclass
class Agent:
    rt: AgentRuntime
    now: list[int]
    summaries: list[Any] = field(default_factory=list)  # scripted small-model answers; default: a summary
    prompts: list[str] = field(default_factory=list)

    async def post(self, text: str, *, at: int, entity: str = SAM, room: str = ROOM) -> str:
        memory = Memory(id=str(uuid.uuid4()), entity_id=entity, room_id=room, content=Content(text=text), created_at=at)
        return await self.rt.store.create_memory(memory, "messages", unique=False)

    async def texts(self, room: str = ROOM) -> list[str]:
        return [
            m.content.text or "" for m in reversed(await self.rt.store.get_memories(table="messages", room_id=room))
        ]


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    runtimes: list[AgentRuntime] = []
    async with Database(tmp_path / "t.db") as db:

        async def make(*, embeddings: bool = False, **settings: Any) -> Agent:
            path = tmp_path / "ada.json"
            # A long tick: the background loop checks once at start; the tests drive every run.
            path.write_text(json.dumps({"name": "Ada", "bio": "x", "settings": {"TASK_TICK_S": 3600, **settings}}))
            char = load_character(path, environ={}).raise_for_problems()
            now = [START]
            rt = AgentRuntime(char, db.for_agent(char.agent_id), environ={}, clock=lambda: now[0])
            a = Agent(rt, now)

            async def small(runtime: AgentRuntime, params: dict) -> Any:
                a.prompts.append(params["prompt"])
                item = (
                    a.summaries.pop(0)
                    if a.summaries
                    else "<response><summary>Sam talked about the weather and a trip to Lisbon.</summary></response>"
                )
                if isinstance(item, BaseException):
                    raise item
                return item

            async def embedding(runtime: AgentRuntime, params: Any) -> list[float]:
                return embed(params["text"] if params else "probe")

            rt.register_model(ModelType.TEXT_SMALL, small, "script")
            if embeddings:
                rt.register_model(ModelType.TEXT_EMBEDDING, embedding, "fake")
            await rt.start()
            runtimes.append(rt)
            await rt.store.create_entities([Entity(SAM, rt.agent_id, names=["Sam"])])
            await rt.store.create_rooms(
                [
                    Room(ROOM, source="discord", type=ChannelType.GROUP, name="general"),
                    Room(QUIET, source="discord", type=ChannelType.DM, name="dm"),
                ]
            )
            for room in (ROOM, QUIET):
                await rt.store.add_participants([SAM, rt.agent_id], room)
            return a

        yield make
        for rt in runtimes:
            await rt.close()


# -- scheduling ------------------------------------------------------------------------------------


async def test_every_agent_gets_one_hourly_retention_task(agent, tmp_path: Path) -> None:
    a = await agent()
    [task] = await a.rt.store.get_tasks_by_name(TASK_NAME)
    assert task.tags == ["queue", "repeat"]
    assert task.metadata == TaskMetadata(update_interval=HOUR, updated_at=START)  # first run one hour from now
    assert TASK_NAME in a.rt.task_workers
    await a.rt.close()
    again = await agent(MEMORY_RETENTION_INTERVAL_MINUTES=15)  # the same agent, started again
    [task] = await again.rt.store.get_tasks_by_name(TASK_NAME)
    assert task.metadata.update_interval == 15 * 60_000


async def test_the_task_runs_when_due_and_compacts(agent) -> None:
    a = await agent(MEMORY_ROOM_CAP=10)
    for i in range(15):
        await a.post(f"message {i}", at=START - DAY + i)
    assert await a.rt.run_due_tasks() == 0  # not due yet
    a.now[0] += HOUR
    assert await a.rt.run_due_tasks() == 1
    assert len(await a.texts()) == 9


async def test_retention_off_schedules_nothing(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=0, MEMORY_ROOM_CAP=0, MEMORY_SUMMARY_CAP=0, MEMORY_LOG_DAYS=0)
    assert await a.rt.store.get_tasks_by_name(TASK_NAME) == []
    assert TASK_NAME not in a.rt.task_workers


async def test_a_bad_setting_stops_the_agent_with_a_clear_error(agent) -> None:
    with pytest.raises(PluginLoadError, match=r"MEMORY_ROOM_CAP must be a whole number from 0 to \d+, not 'lots'"):
        await agent(MEMORY_ROOM_CAP="lots")


async def test_the_log_of_model_calls_is_kept_memory_log_days(agent) -> None:
    a = await agent(MEMORY_LOG_DAYS=2)
    a.rt.store.queue_log({"duration": 5}, a.rt.agent_id, a.rt.agent_id, "useModel:TEXT_SMALL")
    assert len(await a.rt.store.get_logs()) == 1
    a.now[0] = now_ms() + DAY
    assert (await run_retention(a.rt)).logs == 0
    a.now[0] = now_ms() + 3 * DAY
    assert (await run_retention(a.rt)).logs == 1
    assert await a.rt.store.get_logs() == []


async def test_message_traces_are_kept_memory_log_days(agent) -> None:
    a = await agent(MEMORY_LOG_DAYS=2)
    me = a.rt.agent_id
    trace = MessageTrace(
        message_id="m1", agent_id=me, room_id=me, entity_id=me, status=Status.IGNORED, ended_at=now_ms()
    )
    assert await a.rt.store.record_trace(trace) is True
    a.now[0] = now_ms() + DAY
    assert (await run_retention(a.rt)).traces == 0
    a.now[0] = now_ms() + 3 * DAY
    assert (await run_retention(a.rt)).traces == 1
    assert await a.rt.store.get_trace("m1") is None


async def test_log_days_alone_keeps_retention_on_and_zero_keeps_logs(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=0, MEMORY_ROOM_CAP=0, MEMORY_SUMMARY_CAP=0)
    assert len(await a.rt.store.get_tasks_by_name(TASK_NAME)) == 1  # the logs still need it
    a.rt.store.queue_log({"duration": 5}, a.rt.agent_id, a.rt.agent_id, "useModel:TEXT_SMALL")
    a.now[0] = now_ms() + 3650 * DAY
    assert (await run_retention(a.rt, RetentionSettings(log_days=0))).logs == 0
    assert len(await a.rt.store.get_logs()) == 1


async def test_claims_of_messages_answered_past_keeping_go_with_the_hourly_run_not_only_at_a_restart(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=0, MEMORY_ROOM_CAP=0, MEMORY_SUMMARY_CAP=0, MEMORY_LOG_DAYS=0)
    store = a.rt.store
    for message, at in (("old", START - 3 * DAY), ("recent", START - HOUR)):
        assert await store.claim_message(message, ROOM, at) is Claim.NEW
        await store.mark_message(message, Handling.DONE, "replied")
    assert (await run_retention(a.rt)).claims == 1
    assert await store.get_message_handling("old") is None
    assert await store.get_message_handling("recent") is not None  # a redelivery is still a duplicate


async def test_cached_values_past_their_time_go_with_the_hourly_run(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=0, MEMORY_ROOM_CAP=0, MEMORY_SUMMARY_CAP=0, MEMORY_LOG_DAYS=0)
    store = a.rt.store
    assert await store.set_cache("link:gone", {"text": "old page"}, expires_at=now_ms() - 1000)
    assert await store.set_cache("link:fresh", {"text": "new page"}, expires_at=now_ms() + HOUR)
    assert await store.set_cache("cadence", {"kept": True})  # no time limit
    assert (await run_retention(a.rt)).cache == 1
    assert await store.get_cache("link:fresh") == {"text": "new page"} and await store.get_cache("cadence")
    assert (await run_retention(a.rt)).cache == 0


# -- compaction ------------------------------------------------------------------------------------


async def test_a_room_over_its_cap_keeps_its_newest_messages_and_a_summary_of_the_rest(agent) -> None:
    a = await agent(MEMORY_ROOM_CAP=10, MEMORY_MAX_AGE_DAYS=0)
    for i in range(25):
        await a.post(f"message {i}", at=START - HOUR + i, entity=SAM if i % 2 else a.rt.agent_id)
    await a.post("hello in private", at=START - HOUR, room=QUIET)

    report = await run_retention(a.rt)
    assert (report.compacted, report.summaries, report.failed) == (16, 1, False)  # down to 90% of the cap
    assert await a.texts() == [f"message {i}" for i in range(16, 25)]
    assert await a.texts(QUIET) == ["hello in private"]  # under its cap: untouched
    [prompt] = a.prompts
    assert "Sam: message 1" in prompt and "Ada: message 0" in prompt and "message 15" in prompt
    assert "message 16" not in prompt and "the room 'general'" in prompt

    [summary] = await a.rt.store.get_memories(table=SUMMARIES)
    assert summary.content.text == "Sam talked about the weather and a trip to Lisbon."
    assert summary.room_id == ROOM and summary.entity_id == a.rt.agent_id
    assert summary.created_at == START - HOUR + 15
    assert summary.metadata.to_json() == {
        "type": "custom",
        "kind": "conversation_summary",
        "start": START - HOUR,
        "end": START - HOUR + 15,
        "messageCount": 16,
        "entityIds": sorted([SAM, a.rt.agent_id]),
        "level": 1,
    }
    assert (await run_retention(a.rt)).compacted == 0  # nothing left to do


async def test_old_messages_go_by_age_in_batches(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=30, MEMORY_ROOM_CAP=0)
    for i in range(60):
        await a.post(f"old {i}", at=START - 40 * DAY + i)
    await a.post("recent", at=START - 10 * DAY)
    await a.post("old and quiet", at=START - 31 * DAY, room=QUIET)
    report = await run_retention(a.rt)
    assert (report.compacted, report.summaries) == (61, 3)  # 50 + 10 in the room, 1 in the DM
    assert await a.texts() == ["recent"]
    assert await a.texts(QUIET) == []
    summaries = await a.rt.store.get_memories(table=SUMMARIES)
    assert sorted(s.metadata.extra["messageCount"] for s in summaries) == [1, 10, 50]
    assert "a private conversation" in a.prompts[-1] or "a private conversation" in a.prompts[0]


async def test_a_model_failure_never_deletes_messages(agent) -> None:
    a = await agent(MEMORY_ROOM_CAP=10)
    for i in range(20):
        await a.post(f"message {i}", at=START - HOUR + i)
    a.summaries += [
        ModelUnavailable("down", provider="script", model_type="TEXT_SMALL"),
        "<response><thought>hmm</thought></response>",
    ]
    assert (await run_retention(a.rt)).failed is True
    assert (await run_retention(a.rt)).failed is True  # an answer without a summary is a failure too
    assert len(await a.texts()) == 20
    assert await a.rt.store.get_memories(table=SUMMARIES) == []
    report = await run_retention(a.rt)  # the next run, with the model back
    assert (report.failed, report.compacted) == (False, 11)


async def test_a_batch_the_model_gives_no_summary_for_does_not_hold_up_the_other_rooms(agent) -> None:
    a = await agent(MEMORY_ROOM_CAP=0, MEMORY_MAX_AGE_DAYS=30)
    for i in range(5):
        await a.post(f"old {i}", at=START - 40 * DAY + i)  # the room with the most due goes first
    await a.post("old and quiet", at=START - 40 * DAY, room=QUIET)
    a.summaries.append("<response><thought>I won't</thought></response>")
    report = await run_retention(a.rt)
    assert (report.failed, report.compacted, report.summaries) == (True, 1, 1)
    assert len(await a.texts()) == 5  # kept for the next run
    assert await a.texts(QUIET) == []  # compacted all the same
    assert len(a.prompts) == 2  # one try per room and run: not again in the same run


async def test_facts_and_relationships_are_never_compacted(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=1)
    store = a.rt.store
    await store.create_memory(Memory(SAM, ROOM, Content(text="Sam likes tea"), created_at=START - 400 * DAY), "facts")
    await store.create_relationship(SAM, a.rt.agent_id, metadata=RelationshipMetadata(interactions=3))
    await a.post("an old message", at=START - 2 * DAY)
    assert (await run_retention(a.rt)).compacted == 1
    assert [f.content.text for f in await store.get_memories(table="facts")] == ["Sam likes tea"]
    assert len(await store.get_relationships(SAM)) == 1


async def test_messages_without_text_go_without_a_summary(agent) -> None:
    a = await agent(MEMORY_MAX_AGE_DAYS=1)
    silence = Memory(a.rt.agent_id, ROOM, Content(actions=("IGNORE",)), created_at=START - 2 * DAY)
    await a.rt.store.create_memory(silence, "messages", unique=False)
    report = await run_retention(a.rt)
    assert (report.compacted, report.summaries, a.prompts) == (1, 0, [])


async def test_summaries_over_their_cap_are_merged(agent) -> None:
    a = await agent(MEMORY_SUMMARY_CAP=2)
    store = a.rt.store
    for i in range(6):
        await store.create_memory(
            Memory(
                a.rt.agent_id,
                ROOM,
                Content(text=f"summary {i}"),
                created_at=START - DAY + i,
                metadata=MemoryMetadata.from_json(
                    {
                        "start": START - DAY + i,
                        "end": START - DAY + i,
                        "messageCount": 10,
                        "entityIds": [f"e{i}"],
                        "level": 1,
                    }
                ),
            ),
            SUMMARIES,
        )
    a.summaries.append("<response><summary>Months of talk, merged.</summary></response>")
    report = await run_retention(a.rt, RetentionSettings(max_age_days=0, room_cap=0, summary_cap=2))
    assert report.merged == 5
    texts = [s.content.text for s in await store.get_memories(table=SUMMARIES)]
    assert texts == ["summary 5", "Months of talk, merged."]
    merged = (await store.get_memories(table=SUMMARIES))[1]
    assert merged.metadata.extra["messageCount"] == 50 and merged.metadata.extra["level"] == 2
    assert merged.metadata.entity_ids == ("e0", "e1", "e2", "e3", "e4")
    assert "summary 0" in a.prompts[0] and "summary 5" not in a.prompts[0]


async def test_a_summary_is_found_by_facts_later(agent) -> None:
    a = await agent(embeddings=True, MEMORY_ROOM_CAP=10)
    for i in range(20):
        await a.post(f"chat {i}", at=START - HOUR + i)
    await run_retention(a.rt)
    [summary] = await a.rt.store.get_memories(table=SUMMARIES)
    assert summary.embedding is not None
    question = Memory(
        id=str(uuid.uuid4()),
        entity_id=SAM,
        room_id=ROOM,
        created_at=START,
        content=Content(text="remember my trip to Lisbon?"),
    )
    state = await a.rt.compose_state(question, ["FACTS"], only_include=True)
    assert "# Earlier Conversation Here" in state.text
    assert "trip to Lisbon" in state.values["summaries"]
    assert state.providers["FACTS"].data["summaries"][0].id == summary.id


# -- forgetting while running ----------------------------------------------------------------------


async def test_someone_forgotten_while_the_agent_runs_is_remembered_afresh(harness) -> None:
    h = await harness(ChannelType.DM)
    await h.say("hello there")
    await h.rt.store.forget_entity(HUMAN)
    assert await h.rt.store.get_entity(HUMAN) is None
    # The platform wrote this person once this run and will not again: the pipeline does.
    outcome = await h.say("it's me again", metadata=MemoryMetadata(entity_name="Sam", entity_user_name="sam42"))
    assert outcome.status == "replied"
    entity = await h.rt.store.get_entity(HUMAN)
    assert entity is not None and entity.names == ["Sam", "sam42"]
    assert await h.rt.store.is_room_participant(h.room, HUMAN)
    assert [m.content.text for m in await h.rt.store.get_memories(table="messages", entity_id=HUMAN)] == [
        "it's me again"
    ]

    await h.rt.store.forget_room(h.room)
    await h.say("and again")
    room = await h.rt.store.get_room(h.room)
    assert room is not None and room.source == "discord"
    assert await h.rt.store.is_room_participant(h.room, h.rt.agent_id)
    assert "and again" in [m.content.text for m in await h.rt.store.get_memories(table="messages")]
