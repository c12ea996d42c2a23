"""Message traces: how each message ended, and why (``troupe why``).

Behaviour every backend must show (the contract)."""

from __future__ import annotations

import pytest

from bot.kernel.messages import Status
from bot.kernel.traces import ActionRun, MessageTrace, ModelCall, ToolCallRun, ToolRunState, TraceQuery
from bot.store import Store

from ..conftest import BR, BU, R2, A, B, R, U, V


def _trace(message_id: str, ended_at: int, **changes: object) -> MessageTrace:
    fields: dict[str, object] = {
        "message_id": message_id,
        "agent_id": A,
        "room_id": R,
        "entity_id": U,
        "status": Status.IGNORED,
        "ended_at": ended_at,
        **changes,
    }
    return MessageTrace(**fields)  # type: ignore[arg-type]


async def test_a_trace_is_kept_whole(store: Store) -> None:
    trace = _trace(
        "m1",
        1_000,
        status=Status.REPLIED,
        reason="named",
        agent_name="Ada",
        entity_name="Uma",
        platform="telegram",
        said_at=990,
        duration_ms=10,
        rule="named",
        decision="troupe: respond (picked Ada)",
        model_calls=(
            ModelCall("TEXT_LARGE", "openai", 8.5, model="gpt-4o", prompt_tokens=900, completion_tokens=40),
            ModelCall("TEXT_SMALL", "openai", 1.0, False, "Timeout"),
        ),
        tool_calls=(
            ToolCallRun("w__weather", '{"city": "Oslo"}', 3.5, ToolRunState.OK, "sunny"),
            ToolCallRun("w__fail", "{}", 1.0, ToolRunState.FAILED, "on fire"),
            ToolCallRun("w__delete", '{"path": "/a"}', 0.0, ToolRunState.WAITING, ""),
        ),
        actions=(ActionRun("REPLY", True), ActionRun("MUTE_ROOM", False)),
        reply_ids=("r1", "r2"),
    )
    assert await store.record_trace(trace) is True
    assert await store.get_trace("m1") == trace
    assert await store.get_trace("m2") is None


async def test_traces_are_listed_newest_first_filtered_and_limited(store: Store) -> None:
    await store.record_trace(_trace("m1", 1_000))
    await store.record_trace(_trace("m2", 3_000, room_id=R2, status=Status.REPLIED))
    await store.record_trace(_trace("m3", 2_000, entity_id=V, status=Status.MUTED))
    assert [t.message_id for t in await store.get_traces()] == ["m2", "m3", "m1"]
    assert [t.message_id for t in await store.get_traces(limit=2)] == ["m2", "m3"]
    assert [t.message_id for t in await store.get_traces(room_id=R)] == ["m3", "m1"]
    assert [t.message_id for t in await store.get_traces(entity_id=V)] == ["m3"]
    assert [t.message_id for t in await store.get_traces(status=Status.REPLIED)] == ["m2"]
    with pytest.raises(ValueError, match="limit"):
        await store.get_traces(limit=-1)


async def test_find_traces_filters_by_any_of_several_and_pages_newest_first(store: Store) -> None:
    await store.record_trace(_trace("m1", 1_000))
    await store.record_trace(_trace("m2", 3_000, room_id=R2, status=Status.REPLIED))
    await store.record_trace(_trace("m3", 2_000, entity_id=V, status=Status.MUTED))
    await store.record_trace(_trace("m4", 2_000, status=Status.ERROR, error="RuntimeError"))

    async def ids(query: TraceQuery, limit: int = 20) -> list[str]:
        return [t.message_id for t in await store.find_traces(query, limit=limit)]

    assert await ids(TraceQuery()) == ["m2", "m4", "m3", "m1"]  # the same ms: by message id, descending
    assert await ids(TraceQuery(message_ids=("m1", "m3", "nope"))) == ["m3", "m1"]
    assert await ids(TraceQuery(room_ids=(R, R2), entity_ids=(U,))) == ["m2", "m4", "m1"]
    assert await ids(TraceQuery(statuses=(Status.MUTED, Status.ERROR))) == ["m4", "m3"]
    assert await ids(TraceQuery(entity_ids=(V,), statuses=(Status.REPLIED,))) == []
    assert await ids(TraceQuery(room_ids=())) == []  # an empty choice matches nothing
    # Pages: each starts after the last trace of the one before, by (ended_at, message_id).
    assert await ids(TraceQuery(), limit=2) == ["m2", "m4"]
    assert await ids(TraceQuery(before=(2_000, "m4")), limit=2) == ["m3", "m1"]
    assert await ids(TraceQuery(before=(2_000, "m3"))) == ["m1"]
    assert await ids(TraceQuery(before=(1_000, "m1"))) == []
    with pytest.raises(ValueError, match="limit"):
        await store.find_traces(TraceQuery(), limit=-1)


async def test_a_duplicate_keeps_the_first_trace_and_a_retry_replaces_it(store: Store) -> None:
    await store.record_trace(_trace("m1", 1_000, status=Status.REPLIED, reason="named"))
    await store.record_trace(_trace("m1", 2_000, status=Status.DUPLICATE))
    kept = await store.get_trace("m1")
    assert kept is not None and (kept.status, kept.reason, kept.ended_at) == (Status.REPLIED, "named", 1_000)
    await store.record_trace(_trace("m1", 3_000, status=Status.ERROR, error="RuntimeError"))
    again = await store.get_trace("m1")
    assert again is not None and (again.status, again.error, again.ended_at) == (Status.ERROR, "RuntimeError", 3_000)


async def test_traces_are_each_agents_own(store: Store, store_b: Store) -> None:
    await store.record_trace(_trace("m1", 1_000))
    await store_b.record_trace(_trace("m1", 2_000, agent_id=B, room_id=BR, entity_id=BU, status=Status.REPLIED))
    mine = await store.get_trace("m1")
    theirs = await store_b.get_trace("m1")
    assert mine is not None and mine.status is Status.IGNORED
    assert theirs is not None and theirs.status is Status.REPLIED
    assert [t.agent_id for t in await store.get_traces()] == [A]
    with pytest.raises(ValueError, match="cannot be recorded"):
        await store.record_trace(_trace("m2", 1_000, agent_id=B))


async def test_a_trace_of_an_unknown_room_is_not_written(store: Store) -> None:
    assert await store.record_trace(_trace("m1", 1_000, room_id="no-such-room")) is False
    assert await store.get_traces() == []


async def test_prune_traces_bounds_them_by_age(store: Store, store_b: Store) -> None:
    await store.record_trace(_trace("old", 1_000))
    await store.record_trace(_trace("new", 5_000))
    await store_b.record_trace(_trace("theirs", 1_000, agent_id=B, room_id=BR, entity_id=BU))
    assert await store.prune_traces(2_000) == 1
    assert [t.message_id for t in await store.get_traces()] == ["new"]
    assert [t.message_id for t in await store_b.get_traces()] == ["theirs"]


async def test_forgetting_a_person_or_a_room_forgets_their_traces(store: Store) -> None:
    await store.record_trace(_trace("m1", 1_000))
    await store.record_trace(_trace("m2", 2_000, entity_id=V, room_id=R2))
    await store.forget_entity(U)
    assert [t.message_id for t in await store.get_traces()] == ["m2"]
    await store.forget_room(R2)
    assert await store.get_traces() == []


def test_a_tool_call_kept_before_there_were_states_reads_as_ok_or_failed() -> None:
    old = {"name": "w__weather", "arguments": "{}", "ms": 2, "result": "sunny"}
    assert ToolCallRun.from_json({**old, "ok": True}).state is ToolRunState.OK
    assert ToolCallRun.from_json({**old, "ok": False}).state is ToolRunState.FAILED
    assert ToolCallRun.from_json({**old, "ok": True, "state": "someday"}).state is ToolRunState.OK
