"""Summaries of what was said in a room: SUMMARIZE_CONVERSATION and the platforms' ``/summarize``.

The window's messages are read from the store (its most recent :data:`MAX_MESSAGES` at most;
the agent's decisions not to speak left out) and written one a line, ``HH:MM Name: text`` with
the titles of attachments. The lines are cut into chunks of about ``SUMMARY_CHUNK_TOKENS``
tokens (estimated as characters / 4; default 3000, less on a small model's context window), each chunk is summarised by TEXT_SMALL
(``conversationSummaryTemplate``, a few at once), and when there was more than one chunk the
parts are combined by one more call (``summaryCombineTemplate``; in rounds, should the parts
themselves overflow a chunk). A model failure is an answer that says so, never an exception.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import ConversationSummary, Memory, ModelError, ModelType, file_name_part, words_tokens

from ._budget import prompt_budget, reply_reserve
from ._delivery import ONE_MESSAGE_CHARS
from ._parse import parse_response
from ._placeholders import Placeholders
from ._prompts import render, template
from ._summary_window import DEFAULT_MESSAGES, MAX_MESSAGES, OUR_CONVERSATION, PAUSE_MS, Window
from .providers._common import MESSAGES, UNKNOWN_USER, clock_time, entity_names, is_decision

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "DEFAULT_CHUNK_TOKENS",
    "RoomSummaries",
    "ask_for_summary",
    "chunk_lines",
    "read_window",
    "summarize",
]

_log = logging.getLogger(__name__)

DEFAULT_CHUNK_TOKENS = 3000
_MIN_CHUNK_TOKENS = 250
_CHARS_PER_TOKEN = 4  # the estimate: good enough for English, cautious for code
_TEMPLATE_TOKENS = 400  # what the summary templates take around a chunk (their rules, the request)
_WINDOW_CHARS_PER_TOKEN = 3  # as plugins/core/_tokens.py counts prose, erring high
_LINE_CHARS = 2000  # one message's share of a chunk, at most
_PAGE = 200  # rows read from the store at a time
_MAX_ROWS = 4 * MAX_MESSAGES  # rows read at most for one window (decisions not to speak included)
_AT_ONCE = 3  # chunks summarised concurrently
_CHUNK_WORDS = 150
_FINAL_WORDS = 250


class _NoSummary(Exception):
    """The model answered, but with no summary in it."""


async def ask_for_summary(runtime: AgentRuntime, template_name: str, values: Mapping[str, Any]) -> str:
    """The summary TEXT_SMALL writes for the filled template ``template_name``; "" when its
    answer holds none. Raises ModelError when the model fails."""
    summary_template = template(runtime.character.templates, template_name)
    prompt = render(summary_template, values, rng=runtime.rng)
    max_words = str(values.get("maxWords") or "")
    bound = words_tokens(int(max_words) if max_words.isdigit() else _FINAL_WORDS)
    window = runtime.context_length(ModelType.TEXT_SMALL)
    if window is not None:  # the share of the window the chunks left the answer
        bound = reply_reserve(bound, window)
    raw = await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": prompt, "max_tokens": bound})
    placeholders = Placeholders.of(summary_template, values)
    parsed = placeholders.without(parse_response(raw), agent=runtime.character.name, kind=template_name) or {}
    summary = str(parsed.get("summary") or "").strip()
    if not summary and isinstance(raw, str) and "<" not in raw:
        summary = raw.strip()  # a model that answered with the summary alone
    return "" if placeholders.copied(summary) else summary


def _readable(memory: Memory) -> bool:
    content = memory.content
    return not is_decision(memory) and bool((content.text or "").strip() or content.attachments)


async def _recent(
    runtime: AgentRuntime, room_id: str, *, since: int | None, end: int | None, limit: int, skip_id: str | None
) -> list[Memory]:
    """The room's newest ``limit`` readable messages in [since, end], oldest first."""
    found: list[Memory] = []
    offset = 0
    while len(found) < limit and offset < _MAX_ROWS:
        page = await runtime.store.get_memories(
            table=MESSAGES, room_id=room_id, start=since, end=end, count=_PAGE, offset=offset
        )
        found += [m for m in page if m.id != skip_id and _readable(m)]
        if len(page) < _PAGE:
            break
        offset += _PAGE
    return list(reversed(found[:limit]))


async def read_window(
    runtime: AgentRuntime,
    room_id: str,
    window: Window,
    *,
    end: int | None = None,
    skip_id: str | None = None,
    asker: str | None = None,
) -> tuple[list[Memory], str]:
    """The window's messages, oldest first, and how to name what they cover.

    The default window depends on who is talking (see :mod:`._summary_window`): in a
    conversation between ``asker`` and the agent alone, the conversation itself
    (:func:`_conversation`); elsewhere, what was said since ``asker`` last wrote in the room (its most recent
    :data:`MAX_MESSAGES` at most), or the last :data:`DEFAULT_MESSAGES` messages when the asker
    never wrote there or nothing came after. ``end`` and ``skip_id`` leave out the request itself.
    """
    limit = window.count or MAX_MESSAGES
    if window.is_default and asker is not None:
        latest = await _recent(runtime, room_id, since=None, end=end, limit=DEFAULT_MESSAGES, skip_id=skip_id)
        if latest and all(m.entity_id in (asker, runtime.agent_id) for m in latest):
            found = await _conversation(runtime, room_id, latest, skip_id=skip_id)
            return found, OUR_CONVERSATION
        own = await runtime.store.get_memories(table=MESSAGES, room_id=room_id, entity_id=asker, end=end, count=2)
        last = next((m for m in own if m.id != skip_id and m.created_at is not None), None)
        if last is not None:
            since = await _recent(runtime, room_id, since=last.created_at, end=end, limit=limit + 1, skip_id=skip_id)
            ids = [m.id for m in since]
            after = since[ids.index(last.id) + 1 :] if last.id in ids else since[-limit:]
            if after:
                return after, window.label
    found = await _recent(runtime, room_id, since=window.since_ms, end=end, limit=limit, skip_id=skip_id)
    if not window.is_default:
        return found, window.label
    return found[-DEFAULT_MESSAGES:], f"over the last {DEFAULT_MESSAGES} messages"


async def _conversation(
    runtime: AgentRuntime, room_id: str, latest: list[Memory], *, skip_id: str | None
) -> list[Memory]:
    """``latest`` (the last :data:`DEFAULT_MESSAGES`), and before them the rest of the session they
    end: older messages back to the first pause longer than :data:`PAUSE_MS`, :data:`MAX_MESSAGES` in all."""
    if len(latest) < DEFAULT_MESSAGES or latest[0].created_at is None:
        return latest  # the whole history of the room, or messages with no time to find a pause by
    older = await _recent(runtime, room_id, since=None, end=latest[0].created_at, limit=MAX_MESSAGES, skip_id=skip_id)
    known = {m.id for m in latest}
    session: list[Memory] = []
    after = latest[0].created_at
    for memory in reversed([m for m in older if m.id not in known]):  # newest first
        if memory.created_at is None or after - memory.created_at > PAUSE_MS:
            break
        session.append(memory)
        after = memory.created_at
    return [*reversed(session), *latest][-MAX_MESSAGES:]


def _line(memory: Memory, names: Mapping[str, str]) -> str:
    name = names.get(memory.entity_id) or memory.metadata.entity_name or UNKNOWN_USER
    text = " ".join((memory.content.text or "").split())
    titles = [a.title or a.content_type or "file" for a in memory.content.attachments or ()]
    if titles:
        text += f" [attached: {', '.join(titles)}]"
    return f"{clock_time(memory.created_at)} {name}: {text.strip()}"[:_LINE_CHARS]


def chunk_lines(lines: list[str], budget_chars: int, *, at_least: int = 1) -> list[list[str]]:
    """``lines`` in order, grouped into chunks of at most ``budget_chars`` characters each
    (a line longer than that alone), with at least ``at_least`` lines to a chunk when there are
    that many left (so that combining summaries always makes fewer of them)."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for line in lines:
        if len(current) >= at_least and used + len(line) > budget_chars:
            chunks.append(current)
            current, used = [], 0
        current.append(line)
        used += len(line) + 1
    if current:
        if chunks and len(current) < at_least:
            chunks[-1] += current
        else:
            chunks.append(current)
    return chunks


async def _room_name(runtime: AgentRuntime, room_id: str) -> str:
    room = await runtime.store.get_room(room_id)
    return f"#{room.name.lstrip('#')}" if room is not None and room.name else "this conversation"


def _file_name(room_name: str, at_ms: int) -> str:
    """``summary-<room>-<YYYY-MM-DD>.md`` (``summary-<date>.md`` for a room with no name), the UTC
    date of ``at_ms``."""
    day = time.strftime("%Y-%m-%d", time.gmtime(at_ms / 1000))
    room = "" if room_name == "this conversation" else file_name_part(room_name)
    return f"summary-{room}-{day}.md" if room else f"summary-{day}.md"


async def _summarize_chunks(
    runtime: AgentRuntime, chunks: list[list[str]], budget_chars: int, values: dict[str, str]
) -> str:
    """One summary of all ``chunks``; raises ModelError or _NoSummary."""
    gate = asyncio.Semaphore(_AT_ONCE)

    async def ask(template_name: str, text: str, extra: dict[str, str]) -> str:
        async with gate:
            summary = await ask_for_summary(runtime, template_name, {**values, **extra, "conversation": text})
        if not summary:
            raise _NoSummary()
        return summary

    async def all_of(template_name: str, groups: list[list[str]], words: int) -> list[str]:
        async with asyncio.TaskGroup() as tasks:
            running = [
                tasks.create_task(
                    ask(
                        template_name,
                        "\n".join(group),
                        {"part": f"part {i} of {len(groups)}", "maxWords": str(words)},
                    )
                )
                for i, group in enumerate(groups, 1)
            ]
        return [t.result() for t in running]

    single = len(chunks) == 1
    parts = await all_of("conversationSummaryTemplate", chunks, _FINAL_WORDS if single else _CHUNK_WORDS)
    while len(parts) > 1:
        groups = chunk_lines([f"- {p}" for p in parts], budget_chars, at_least=2)
        parts = await all_of("summaryCombineTemplate", groups, _FINAL_WORDS)
    return parts[0]


async def summarize(
    runtime: AgentRuntime,
    room_id: str,
    window: Window,
    *,
    request: str,
    end: int | None = None,
    skip_id: str | None = None,
    asker: str | None = None,
) -> ConversationSummary:
    """The conversation of ``room_id`` over ``window`` summarised (see the module docstring);
    ``request`` is what the person asked, so the summary can focus on it."""
    name = runtime.character.name
    memories, label = await read_window(runtime, room_id, window, end=end, skip_id=skip_id, asker=asker)
    if not memories:
        return ConversationSummary(f"Nothing to summarise: no messages {label}.")
    names = await entity_names(runtime, [m.entity_id for m in memories])
    budget = max(_MIN_CHUNK_TOKENS, runtime.get_int("SUMMARY_CHUNK_TOKENS", DEFAULT_CHUNK_TOKENS)) * _CHARS_PER_TOKEN
    fits = prompt_budget(runtime, ModelType.TEXT_SMALL, words_tokens(_FINAL_WORDS))
    if fits is not None:  # a chunk and its template within the small model's window, as prompts count
        budget = min(budget, max(_MIN_CHUNK_TOKENS, fits - _TEMPLATE_TOKENS) * _WINDOW_CHARS_PER_TOKEN)
    chunks = chunk_lines([_line(m, names) for m in memories], budget)
    room_name = await _room_name(runtime, room_id)
    values = {"agentName": name, "roomName": room_name, "request": request}
    failure: Exception | None = None
    try:
        text = await _summarize_chunks(runtime, chunks, budget, values)
    except* ModelError as group:
        failure = group.exceptions[0]
        _log.warning("%s: no summary of room %s: %s", name, room_id, failure)
    except* _NoSummary as group:
        failure = group.exceptions[0]
        _log.warning("%s: no summary of room %s: the model's answer held none", name, room_id)
    if failure is not None:
        why = "the model did not answer" if isinstance(failure, ModelError) else "the model gave no summary"
        return ConversationSummary(
            f"I couldn't summarise the conversation: {why}. Please try again in a moment.", failed=True
        )
    n = len(memories)
    covers = f"Summary of the conversation {label} ({n} message{'' if n == 1 else 's'})"
    answer = f"{covers}:\n\n{text}"
    if len(answer) <= ONE_MESSAGE_CHARS:
        return ConversationSummary(answer, messages=n)
    filename = _file_name(room_name, end if end is not None else runtime.clock())
    lead = f"{covers}: it is long, so here it is as a file, {filename}."
    return ConversationSummary(answer, messages=n, long=True, lead=lead, filename=filename)


class RoomSummaries:
    """The :class:`~bot.runtime.components.ConversationSummaries` service: ``/summarize [N]``."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime

    async def summarize_room(self, room_id: str, count: int) -> ConversationSummary:
        n = max(1, min(count, MAX_MESSAGES))
        window = Window(count=n, label=f"over the last {n} message{'' if n == 1 else 's'}")
        return await summarize(self.runtime, room_id, window, request=f"/summarize {n}")
