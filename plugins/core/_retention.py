"""Long-term memory upkeep: old conversation is compacted into summaries, on a schedule.

Each agent has one stored, repeating task, MEMORY_RETENTION (hourly by default), run by the
runtime's task loop. A run looks at every room and compacts the messages past retention — older
than ``MEMORY_MAX_AGE_DAYS``, or beyond ``MEMORY_ROOM_CAP`` (a room over its cap goes down to 90%
of it, so each summary covers a useful stretch) — oldest first, a batch at a time: TEXT_SMALL
writes a summary, which is stored in the ``summaries`` table (room, world, time span, the people
who spoke in ``metadata.entity_ids``, an embedding when a model serves TEXT_EMBEDDING), and the
batch's messages are deleted in the same transaction. When a room holds more than
``MEMORY_SUMMARY_CAP`` summaries, its oldest ones are merged the same way, so nothing grows
without bound. The FACTS provider retrieves summaries next to facts. The log of model calls
(``Store.queue_log``: one entry per call) and the message traces (``troupe why``) are kept
``MEMORY_LOG_DAYS``, the claims that make a redelivered message a duplicate two days
(:data:`._recovery.KEEP_HANDLED_MS`), and cached values until their time is up.

Nothing is lost to a failure: when the model fails the run stops, every message stays, and the
next run tries again; a batch it answers with no summary stays the same way, but only its room
waits for the next run. Facts and relationships are never touched.
A run does at most a bounded number of batches, so a long backlog drains over several runs.
Setting all four limits to 0 turns retention off (no task is scheduled).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    ChannelType,
    Content,
    Memory,
    MemoryMetadata,
    MemoryType,
    ModelError,
    ModelType,
    SettingReader,
    Task,
    TaskMetadata,
    TaskWorker,
)

from ._recovery import KEEP_HANDLED_MS
from ._summaries import ask_for_summary
from .providers._common import UNKNOWN_USER, entity_names

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "RetentionReport",
    "RetentionSettings",
    "SUMMARIES",
    "TASK_NAME",
    "read_settings",
    "run_retention",
    "schedule",
    "worker",
]

_log = logging.getLogger(__name__)

TASK_NAME = "MEMORY_RETENTION"
MESSAGES = "messages"
#: The memory table summaries live in.
SUMMARIES = "summaries"

DAY_MS = 86_400_000
_BATCH = 50  # messages per summary at most
_MERGE = 10  # summaries merged into one at most
_MIN_MERGE = 5  # merging fewer than this at a time would merge again at every run
_MAX_BATCHES_PER_RUN = 20  # model calls per run at most; a backlog drains over several runs
_PROMPT_CHARS = 24_000  # of conversation text per summary
_LINE_CHARS = 2_000  # one message's share of that, at most
_CAP_HEADROOM = 0.9  # a room over its cap is compacted down to this share of it
_SUMMARY_WORDS = 200  # at most, per summary of messages
_MERGED_WORDS = 350  # at most, per summary of summaries


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """How much raw conversation an agent keeps. 0 turns a limit off."""

    max_age_days: int = 30
    """Messages older than this many days are compacted."""
    room_cap: int = 1000
    """A room keeps at most this many raw messages."""
    summary_cap: int = 100
    """A room keeps at most this many summaries; the oldest are merged."""
    interval_minutes: int = 60
    """How often the retention task runs."""
    log_days: int = 14
    """Log entries (one per model call) and message traces (``troupe why``) older than this many
    days are deleted."""

    @property
    def enabled(self) -> bool:
        """False when every limit is off: there is nothing to do."""
        return bool(self.max_age_days or self.room_cap or self.summary_cap or self.log_days)


def read_settings(runtime: AgentRuntime) -> RetentionSettings:
    """The agent's retention settings; raises ConfigError naming the setting for a bad value."""
    read = SettingReader(runtime.get_setting, runtime.character.name)
    defaults = RetentionSettings()
    return RetentionSettings(
        max_age_days=read.whole("MEMORY_MAX_AGE_DAYS", defaults.max_age_days, 0, 36_500),
        room_cap=read.whole("MEMORY_ROOM_CAP", defaults.room_cap, 0, 100_000_000),
        summary_cap=read.whole("MEMORY_SUMMARY_CAP", defaults.summary_cap, 0, 100_000_000),
        interval_minutes=read.whole("MEMORY_RETENTION_INTERVAL_MINUTES", defaults.interval_minutes, 1, 10_080),
        log_days=read.whole("MEMORY_LOG_DAYS", defaults.log_days, 0, 36_500),
    )


@dataclass(slots=True)
class RetentionReport:
    """What one run did."""

    compacted: int = 0
    """Messages replaced by summaries (or deleted for having no text)."""
    summaries: int = 0
    """Summaries written from messages."""
    merged: int = 0
    """Summaries merged into fewer, longer ones."""
    failed: bool = False
    """The model failed: the run stopped early, and what it did not reach stays for the next run."""
    logs: int = 0
    """Log entries deleted for their age."""
    traces: int = 0
    """Message traces deleted for their age."""
    claims: int = 0
    """Claims of messages answered longer ago than a platform redelivers, deleted."""
    cache: int = 0
    """Cached values past their time (links read, questions no one answered), deleted."""


class _NoSummary(Exception):
    """The model answered, but with no summary in it."""


def _due(total: int, old: int, settings: RetentionSettings) -> int:
    """How many of a room's oldest messages are past retention."""
    over_cap = 0
    if settings.room_cap and total > settings.room_cap:
        over_cap = total - int(settings.room_cap * _CAP_HEADROOM)
    return max(over_cap, old if settings.max_age_days else 0)


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp((ms or 0) / 1000, UTC).strftime("%Y-%m-%d %H:%M") if ms is not None else "?"


def _text(memory: Memory) -> str:
    return " ".join((memory.content.text or "").split())


def _fit(lines: list[tuple[Memory, str]]) -> list[tuple[Memory, str]]:
    """The first lines (at least one) within the prompt's budget."""
    kept: list[tuple[Memory, str]] = []
    used = 0
    for memory, line in lines:
        if kept and used + len(line) > _PROMPT_CHARS:
            break
        kept.append((memory, line))
        used += len(line) + 1
    return kept


async def _summarize(runtime: AgentRuntime, room_name: str, conversation: str, words: int) -> str:
    values = {
        "agentName": runtime.character.name,
        "roomName": room_name,
        "conversation": conversation,
        "maxWords": str(words),
    }
    summary = " ".join((await ask_for_summary(runtime, "summaryTemplate", values)).split())
    if not summary:
        raise _NoSummary()
    return summary


async def _embed(runtime: AgentRuntime, text: str) -> list[float] | None:
    if not runtime.has_model(ModelType.TEXT_EMBEDDING):
        return None
    try:
        vector: list[float] = await runtime.use_model(ModelType.TEXT_EMBEDDING, {"text": text})
    except Exception as exc:  # a summary without a vector is still found by its words
        _log.debug("%s: could not embed a summary: %s", runtime.character.name, exc.__class__.__name__)
        return None
    return vector


async def _room_name(runtime: AgentRuntime, room_id: str) -> str:
    room = await runtime.store.get_room(room_id)
    if room is None:
        return "a conversation"
    if room.type in (ChannelType.DM, ChannelType.VOICE_DM):
        return "a private conversation"
    return f"the room {room.name!r}" if room.name else "a group conversation"


@dataclass(frozen=True, slots=True)
class _Compacted:
    """What a summary's metadata says of the messages it replaced, besides their span and
    speakers: kept among the metadata's other keys, under this plugin's names."""

    messages: int
    """How many messages it covers, those of the summaries it merged included."""
    level: int
    """1 for a summary of messages, one more than the highest merged for a merged one."""

    @classmethod
    def of(cls, summary: Memory) -> _Compacted:
        extra = summary.metadata.extra
        return cls(_number(extra.get("messageCount"), 0), _number(extra.get("level"), 1))

    def to_json(self) -> dict[str, object]:
        return {"kind": "conversation_summary", "messageCount": self.messages, "level": self.level}


def _number(value: object, default: int) -> int:
    """A stored count as a number (a row may hold it as text); ``default`` when there is none."""
    if isinstance(value, (int, float, str)):
        with contextlib.suppress(ValueError, OverflowError):
            return int(value)
    return default


def _summary_memory(
    runtime: AgentRuntime,
    room_id: str,
    parts: list[Memory],
    text: str,
    span: tuple[int, int],
    entity_ids: list[str],
    compacted: _Compacted,
) -> Memory:
    end = max(m.created_at or 0 for m in parts)
    world = next((m.world_id for m in parts if m.world_id), None)
    return Memory(
        entity_id=runtime.agent_id,
        agent_id=runtime.agent_id,
        room_id=room_id,
        world_id=world,
        content=Content(text=text, source="retention"),
        created_at=end,
        metadata=MemoryMetadata(
            type=MemoryType.CUSTOM,
            start=span[0],
            end=span[1],
            entity_ids=tuple(entity_ids),
            extra=compacted.to_json(),
        ),
    )


def _start(summary: Memory) -> int:
    return summary.metadata.start if summary.metadata.start is not None else summary.created_at or 0


def _end(summary: Memory) -> int:
    return summary.metadata.end if summary.metadata.end is not None else summary.created_at or 0


async def _compact_messages(runtime: AgentRuntime, room_id: str, batch: list[Memory]) -> tuple[int, bool]:
    """Replace ``batch`` (oldest first) with one summary; (messages removed, whether a summary was written)."""
    store = runtime.store
    names = await entity_names(runtime, [m.entity_id for m in batch])
    lines = []
    for memory in batch:
        name = names.get(memory.entity_id) or memory.metadata.entity_name or UNKNOWN_USER
        line = f"{_when(memory.created_at)} {name}: {_text(memory)[:_LINE_CHARS]}"
        lines.append((memory, line))
    lines = _fit(lines)
    batch = [m for m, _ in lines]
    spoken = [(m, line) for m, line in lines if _text(m)]
    if not spoken:  # decisions to stay silent, reactions without text: nothing to remember
        return await store.delete_many_memories([m.id for m in batch if m.id]), False
    conversation = "\n".join(line for _, line in spoken)
    text = await _summarize(runtime, await _room_name(runtime, room_id), conversation, _SUMMARY_WORDS)
    summary = _summary_memory(
        runtime,
        room_id,
        batch,
        text,
        (min(m.created_at or 0 for m in batch), max(m.created_at or 0 for m in batch)),
        sorted({m.entity_id for m in batch}),
        _Compacted(messages=len(batch), level=1),
    )
    summary = replace(summary, embedding=await _embed(runtime, text))
    removed = await store.compact_memories(summary, SUMMARIES, [m.id for m in batch if m.id])
    return removed, removed > 0


async def _merge_summaries(runtime: AgentRuntime, room_id: str, batch: list[Memory]) -> int:
    """Replace several summaries (oldest first) with one; returns how many were replaced."""
    lines = _fit([(m, f"From {_when(m.metadata.start)} to {_when(m.metadata.end)}: {_text(m)}") for m in batch])
    batch = [m for m, _ in lines]
    if len(batch) < 2:
        return 0
    conversation = "\n".join(line for _, line in lines)
    text = await _summarize(runtime, await _room_name(runtime, room_id), conversation, _MERGED_WORDS)
    entity_ids: set[str] = set()
    for part in batch:
        entity_ids.update(part.metadata.entity_ids or ())

    summary = _summary_memory(
        runtime,
        room_id,
        batch,
        text,
        (min(_start(m) for m in batch), max(_end(m) for m in batch)),
        sorted(entity_ids),
        _Compacted(
            messages=sum(_Compacted.of(m).messages for m in batch),
            level=max(_Compacted.of(m).level for m in batch) + 1,
        ),
    )
    summary = replace(summary, embedding=await _embed(runtime, text))
    return await runtime.store.compact_memories(summary, SUMMARIES, [m.id for m in batch if m.id])


async def run_retention(runtime: AgentRuntime, settings: RetentionSettings | None = None) -> RetentionReport:
    """Compact what is past retention in every room of the agent (see the module docstring).

    Model failures end the run early with ``failed`` set and every message of the batch kept;
    store errors propagate.
    """
    settings = settings or read_settings(runtime)
    store = runtime.store
    report = RetentionReport()
    # First, needing no model: what only a platform's redelivery or an operator looks at.
    report.claims = await store.prune_handled(runtime.clock() - KEEP_HANDLED_MS)
    report.cache = await store.prune_cache()
    if settings.log_days:
        report.logs = await store.prune_logs(runtime.clock() - settings.log_days * DAY_MS)
        report.traces = await store.prune_traces(runtime.clock() - settings.log_days * DAY_MS)
    try:
        budget = await _compact_old_messages(runtime, settings, report, _MAX_BATCHES_PER_RUN)
        await _merge_old_summaries(runtime, settings, report, budget)
    except ModelError as exc:  # an outage ends the run: every other call would fail too
        report.failed = True
        _log.warning(
            "%s: memory retention stopped (%s); the messages stay and the next run tries again",
            runtime.character.name,
            exc.__class__.__name__,
        )
    _log_report(runtime, settings, report)
    return report


async def _compact_old_messages(
    runtime: AgentRuntime, settings: RetentionSettings, report: RetentionReport, budget: int
) -> int:
    """Summarise each room's messages past retention, the rooms with most to do first, in at most
    ``budget`` batches; the batches left."""
    if not (settings.max_age_days or settings.room_cap):
        return budget
    store = runtime.store
    before = runtime.clock() - settings.max_age_days * DAY_MS if settings.max_age_days else None
    counts = await store.retention_counts(MESSAGES, before=before)
    due = {room: _due(total, old, settings) for room, (total, old) in counts.items()}
    for room_id in sorted((r for r in due if due[r] > 0), key=lambda r: -due[r]):
        left = due[room_id]
        while left > 0 and budget > 0:
            batch = await store.get_oldest_memories(MESSAGES, room_id, min(left, _BATCH))
            if not batch:
                break
            budget -= 1
            try:
                removed, summarized = await _compact_messages(runtime, room_id, batch)
            except _NoSummary:
                # The model is up but would not summarise this batch: the room waits for
                # the next run; the other rooms are not held up by it.
                _no_summary(runtime, report)
                break
            if removed == 0:
                break  # the batch changed while it was summarized: the next run reads it again
            report.compacted += removed
            report.summaries += int(summarized)
            left -= removed
    return budget


async def _merge_old_summaries(
    runtime: AgentRuntime, settings: RetentionSettings, report: RetentionReport, budget: int
) -> int:
    """Merge the oldest summaries of each room holding more than its cap, in at most ``budget``
    batches; the batches left."""
    if not settings.summary_cap:
        return budget
    store = runtime.store
    for room_id, (total, _) in (await store.retention_counts(SUMMARIES)).items():
        while total > settings.summary_cap and budget > 0:
            take = min(total, _MERGE, max(total - settings.summary_cap + 1, _MIN_MERGE))
            budget -= 1
            oldest = await store.get_oldest_memories(SUMMARIES, room_id, take)
            try:
                merged = await _merge_summaries(runtime, room_id, oldest)
            except _NoSummary:  # as above: this room waits, the others go on
                _no_summary(runtime, report)
                break
            if merged == 0:
                break
            report.merged += merged
            total -= merged - 1
    return budget


def _log_report(runtime: AgentRuntime, settings: RetentionSettings, report: RetentionReport) -> None:
    if report.logs or report.traces:
        _log.info(
            "%s: memory retention deleted %d log entries and %d message traces older than %d days",
            runtime.character.name,
            report.logs,
            report.traces,
            settings.log_days,
        )
    if report.compacted or report.merged:
        _log.info(
            "%s: memory retention compacted %d messages into %d summaries and merged %d summaries",
            runtime.character.name,
            report.compacted,
            report.summaries,
            report.merged,
        )


def _no_summary(runtime: AgentRuntime, report: RetentionReport) -> None:
    report.failed = True
    _log.warning(
        "%s: memory retention: the model gave no summary of a room's oldest messages; they stay, "
        "and the next run tries again",
        runtime.character.name,
    )


async def _execute(runtime: AgentRuntime, options: dict[str, Any], task: Task) -> None:
    try:
        await run_retention(runtime)
    except Exception:  # said here, in retention's words; the next run (an interval later) tries again
        _log.exception("%s: memory retention failed; the next run tries again", runtime.character.name)


#: The task worker the core plugin registers.
worker = TaskWorker(TASK_NAME, _execute)


async def schedule(runtime: AgentRuntime, settings: RetentionSettings) -> None:
    """Make sure the agent has exactly one MEMORY_RETENTION task, repeating every interval.

    A new task first runs one interval from now. Called from the plugin's setup, before the
    runtime records the agent, so it writes the agent's row itself when it is missing (the
    task's row refers to it).
    """
    store = runtime.store
    interval = settings.interval_minutes * 60_000
    existing = await store.get_tasks_by_name(TASK_NAME)
    if existing:
        first, *extra = existing
        for task in extra:
            if task.id:
                await store.delete_task(task.id)
        if first.id and first.metadata.update_interval != interval:
            await store.update_task(first.id, {"metadata": replace(first.metadata, update_interval=interval)})
        return
    await store.create_agent(runtime.character.to_record())  # no-op when it exists
    await store.create_task(
        Task(
            TASK_NAME,
            description="Compact old conversation into summaries (memory retention)",
            tags=["queue", "repeat"],
            metadata=TaskMetadata(update_interval=interval, updated_at=runtime.clock()),
        )
    )
