"""One decision per troupe: the daemon's characters that hear the same message in a room they
share decide together who answers it.

Each character's pipeline applies its own rules first (``_gate.py``) and tells the troupe what
they said (:meth:`Troupe.decide`). For one message in one room:

- a character the rules decide for (addressed, followed, muted, the loop guard …) goes its way
  at once;
- when the rules addressed any of them (named, mentioned, replied to), the message is for that
  one: the undecided others stay silent, with no model call;
- a lone undecided character asks its own small model, as it would alone;
- several undecided characters cost one TEXT_SMALL call for all of them
  (``troupeDecisionTemplate``): which of them answer, in what order, and whom the message asked
  to stay out (STOP). A name that is not one of them is ignored.

Those picked answer one after another in the chosen order (:meth:`SharedMessage.wait_turn`), each once
the previous one is done and its reply has reached it, so each sees what the others said. A
character already answering in the room is not picked again for a message that comes meanwhile.

Who is in a room is learned from the messages heard there: a character that heard the room's
previous message is waited for (at most ``TROUPE_WAIT_S``), one that missed it is not, and the
author of a message is never waited for. Characters of other processes are not coordinated with.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from bot.sdk import DECISION_TOKENS, Memory, ModelError, ModelType, NativeRef

from ._budget import prompt_for
from ._gate import Decision, Verdict
from ._parse import parse_response
from ._parse_rate import AnswerKind, count_answer
from ._schemas import troupe_decision_schema

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["Candidate", "SharedMessage", "Troupe", "TroupeChoice", "TroupeDecision"]

_log = logging.getLogger(__name__)

DEFAULT_WAIT_S = 0.5  # how long the characters of a room are waited for: platforms deliver to each bot within ms
_HEAR_WAIT_S = 3.0  # how long a turn waits for the previous one's reply to reach its character
_MESSAGES_KEPT = 1024  # messages remembered per daemon (a late delivery finds its shared message)
_DECISION_PROVIDERS = ["RECENT_MESSAGES"]

RoomKey = tuple[str, str]  # source, platform room
Ask = Callable[[Sequence["Candidate"]], Awaitable[str]]


class TroupeChoice(StrEnum):
    """What the troupe decided for one undecided character."""

    RESPOND = "respond"  # picked: answer, in turn
    IGNORE = "ignore"
    STOP = "stop"  # asked to stay out of the conversation
    ALONE = "alone"  # the only undecided one: it asks its own small model
    UNREACHABLE = "unreachable"  # the decision's model did not answer


@dataclass(frozen=True, slots=True)
class TroupeDecision:
    """What the troupe decided for one undecided character, and why."""

    choice: TroupeChoice
    reason: str
    turn: int = 0
    """Among those picked: 0 answers first."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One character that heard a message, as a candidate to answer it: what its rules said,
    and what the troupe's decision needs to know of it."""

    agent_id: str
    name: str
    verdict: Verdict
    about: str = ""
    """Its bio and topics, for the decision."""
    runtime: AgentRuntime | None = None
    """Whose model makes the decision, when this character is the first undecided one."""
    message: Memory | None = None
    """Its copy of the message: the decision's prompt is composed from it."""


def about(character_bio: Sequence[str], topics: Sequence[str]) -> str:
    """A character in a line or two, for the decision: its bio, then its topics."""
    bio = " ".join(b.strip() for b in character_bio[:2] if b.strip())
    if topics:
        bio = f"{bio} Topics: {', '.join(topics[:8])}." if bio else f"Topics: {', '.join(topics[:8])}."
    return bio[:400]


@dataclass(slots=True)
class SharedMessage:
    """One message in one room, as the troupe's characters hear it: who reported on it, who was
    picked to answer it, and in what order."""

    ref: NativeRef
    expected: set[str]
    """Agents waited for: those who heard the room's previous message (the author excepted)."""
    deadline: float
    candidates: dict[str, Candidate] = field(default_factory=dict)
    listeners: dict[str, str] = field(default_factory=dict)
    """Agent id → its platform account."""
    order: list[str] = field(default_factory=list)
    """The agents picked, in the order they answer."""
    _all_in: asyncio.Event = field(default_factory=asyncio.Event)
    _settled: bool = False
    _decision: asyncio.Future[dict[str, TroupeDecision]] | None = None
    _finished: dict[str, asyncio.Event] = field(default_factory=dict)
    _heard_before: dict[tuple[str, str], int] = field(default_factory=dict)
    """(listener, author) → messages of the author it had heard when the decision was made."""

    def add(self, candidate: Candidate, listener: str) -> None:
        self.candidates[candidate.agent_id] = candidate
        self.listeners[candidate.agent_id] = listener
        # Someone addressed settles it for the undecided (they stay silent). Nobody expected: a
        # room this process has not heard yet, so wait the whole while.
        if candidate.verdict.addressed or (self.expected and self.expected <= self.candidates.keys()):
            self._all_in.set()

    async def all_in(self) -> None:
        """Until every expected character has reported, or the wait is over."""
        remaining = self.deadline - time.monotonic()
        if remaining > 0 and not self._all_in.is_set():
            try:
                async with asyncio.timeout(remaining):
                    await self._all_in.wait()
            except TimeoutError:
                pass

    def finish(self, agent_id: str) -> None:
        """``agent_id`` is done with its turn (answered, or gave up)."""
        done = self._finished.get(agent_id)
        if done is not None:
            done.set()

    async def wait_turn(self, agent_id: str, troupe: Troupe) -> None:
        """Until the characters picked before ``agent_id`` are done and their replies have
        reached it (each wait bounded: a reply that never comes does not hold the others)."""
        if agent_id not in self.order:
            return
        listener = self.listeners[agent_id]
        for before in self.order[: self.order.index(agent_id)]:
            author = self.listeners[before]
            await self._finished[before].wait()
            await troupe.wait_heard(self.ref, listener, author, self._heard_before[listener, author], _HEAR_WAIT_S)


class Troupe:
    """The characters of one daemon, deciding together (``runtime.shared.instance_of(Troupe)``)."""

    def __init__(self) -> None:
        self._rooms: dict[RoomKey, dict[str, tuple[str, bool]]] = {}
        """Who is in each room: agent id → (its platform account, heard the latest message)."""
        self._messages: OrderedDict[tuple[str, str, str], SharedMessage] = OrderedDict()
        self._answering: dict[RoomKey, set[str]] = {}
        """Agents picked in a room and not done yet."""
        self._heard: dict[tuple[str, str, str], dict[str, int]] = {}
        """(source, room, listener) → author → messages heard from them."""
        self._news: dict[tuple[str, str, str], asyncio.Event] = {}

    # -- hearing ------------------------------------------------------------------------

    def heard_count(self, ref: NativeRef, listener: str, author: str) -> int:
        return self._heard.get((ref.source, ref.room, listener), {}).get(author, 0)

    async def wait_heard(self, ref: NativeRef, listener: str, author: str, since: int, timeout: float) -> bool:
        """Until ``listener`` has heard more than ``since`` messages of ``author`` in the room."""
        key = (ref.source, ref.room, listener)
        try:
            async with asyncio.timeout(timeout):
                while self._heard.get(key, {}).get(author, 0) <= since:
                    news = self._news.setdefault(key, asyncio.Event())
                    await news.wait()
        except TimeoutError:
            return False
        return True

    def _hear(self, ref: NativeRef) -> None:
        """Count what a character hears from another character (turns wait on it); what people
        say is not counted: nobody waits on it, and there is no end to people."""
        members = self._rooms.get((ref.source, ref.room), {})
        if not any(account == ref.author for account, _ in members.values()):
            return
        key = (ref.source, ref.room, ref.listener)
        counts = self._heard.setdefault(key, {})
        counts[ref.author] = counts.get(ref.author, 0) + 1
        news = self._news.pop(key, None)
        if news is not None:
            news.set()

    # -- deciding -----------------------------------------------------------------------

    def _shared_message(self, ref: NativeRef, wait_s: float) -> SharedMessage:
        key = (ref.source, ref.room, ref.message)
        shared = self._messages.get(key)
        if shared is None:
            members = self._rooms.get((ref.source, ref.room), {})
            expected = {agent for agent, (account, present) in members.items() if present and account != ref.author}
            shared = SharedMessage(ref, expected, time.monotonic() + wait_s)
            self._messages[key] = shared
            while len(self._messages) > _MESSAGES_KEPT:
                self._messages.popitem(last=False)
        return shared

    async def decide(
        self, ref: NativeRef, candidate: Candidate, ask: Ask, *, wait_s: float = DEFAULT_WAIT_S
    ) -> tuple[SharedMessage, TroupeDecision | None]:
        """Report what ``candidate``'s rules said about the message ``ref``; the shared message and,
        for an undecided character, what the troupe decided for it (None: the rules decided)."""
        self._hear(ref)
        shared = self._shared_message(ref, wait_s)
        shared.add(candidate, ref.listener)
        self._rooms.setdefault((ref.source, ref.room), {})[candidate.agent_id] = (ref.listener, True)
        if candidate.verdict.decision is not Decision.ASK_MODEL:
            return shared, None
        await shared.all_in()
        self._note_presence(shared)
        if shared._decision is None:  # one decision per message, awaited by each of its characters
            shared._decision = asyncio.ensure_future(self._choose(shared, ask))
        # Shielded: one character giving up (its run timed out) must not cancel the others' decision.
        decisions = await asyncio.shield(shared._decision)
        return shared, decisions.get(candidate.agent_id) or self._late(shared)

    def _note_presence(self, shared: SharedMessage) -> None:
        """Those expected who did not hear the message are not waited for next time (they may
        have left the room, or not listen to such messages) until they are heard there again."""
        if shared._settled:
            return
        shared._settled = True
        members = self._rooms.setdefault((shared.ref.source, shared.ref.room), {})
        for agent in shared.expected - shared.candidates.keys():
            account, _ = members[agent]
            members[agent] = (account, False)

    def _late(self, shared: SharedMessage) -> TroupeDecision:
        """For a character whose report came after the decision: it was not among those asked."""
        if shared.order or any(c.verdict.addressed for c in shared.candidates.values()):
            return TroupeDecision(TroupeChoice.IGNORE, "the troupe had already decided who answers")
        return TroupeDecision(TroupeChoice.ALONE, "heard after the troupe decided")

    async def _choose(self, shared: SharedMessage, ask: Ask) -> dict[str, TroupeDecision]:
        """The one decision for the message: what each undecided character does (see the module
        docstring), by agent id."""
        room = (shared.ref.source, shared.ref.room)
        candidates = list(shared.candidates.values())
        undecided = [c for c in candidates if c.verdict.decision is Decision.ASK_MODEL]
        busy = self._answering.get(room, set())
        answering = TroupeDecision(TroupeChoice.IGNORE, "already answering in this room")
        decisions = {c.agent_id: answering for c in undecided if c.agent_id in busy}
        undecided = [c for c in undecided if c.agent_id not in busy]
        addressed = [c.name for c in candidates if c.verdict.addressed]
        if addressed:
            meant_for = TroupeDecision(TroupeChoice.IGNORE, f"meant for {', '.join(addressed)}")
            return decisions | {c.agent_id: meant_for for c in undecided}
        if len(undecided) <= 1:
            alone = TroupeDecision(TroupeChoice.ALONE, "the only one undecided")
            return decisions | {c.agent_id: alone for c in undecided}
        try:
            raw = await ask(undecided)
        except ModelError as exc:
            _log.warning("the troupe could not decide who answers in %s: %s", shared.ref.room, exc)
            unreachable = TroupeDecision(TroupeChoice.UNREACHABLE, "the small model did not answer")
            return decisions | {c.agent_id: unreachable for c in undecided}
        picked, stopped = parse_decision(raw, [c.name for c in undecided])
        by_name = {c.name.casefold(): c for c in undecided}
        self._line_up(shared, [by_name[name.casefold()].agent_id for name in picked])
        for turn, name in enumerate(picked):
            decisions[by_name[name.casefold()].agent_id] = TroupeDecision(
                TroupeChoice.RESPOND, f"the troupe chose {name}", turn
            )
        stopping = {n.casefold() for n in stopped}
        for candidate in undecided:
            if candidate.agent_id not in decisions:
                stop = candidate.name.casefold() in stopping
                decisions[candidate.agent_id] = (
                    TroupeDecision(TroupeChoice.STOP, "asked to stay out")
                    if stop
                    else TroupeDecision(TroupeChoice.IGNORE, "not chosen")
                )
        return decisions

    def _line_up(self, shared: SharedMessage, order: list[str]) -> None:
        """The characters picked answer in ``order``, each after the replies of those before it
        have reached it: note what each has heard of the others so far."""
        room = (shared.ref.source, shared.ref.room)
        shared.order = order
        for agent in order:
            shared._finished[agent] = asyncio.Event()
            self._answering.setdefault(room, set()).add(agent)
            for other in order:
                pair = (shared.listeners[agent], shared.listeners[other])
                shared._heard_before[pair] = self.heard_count(shared.ref, *pair)

    def done(self, shared: SharedMessage, agent_id: str) -> None:
        """``agent_id`` is done answering (or gave up): the next in turn may go."""
        shared.finish(agent_id)
        busy = self._answering.get((shared.ref.source, shared.ref.room))
        if busy is not None:
            busy.discard(agent_id)


def parse_decision(raw: object, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The characters to answer, in order, and those asked to stay out, from the decision's
    answer; strictly: only ``names`` count (any case), each once; unreadable means nobody."""
    parsed = parse_response(raw if isinstance(raw, str) else str(raw or "")) or {}
    known = {n.casefold(): n for n in names}

    def listed(key: str) -> list[str]:
        value = parsed.get(key)
        items = value if isinstance(value, list) else re.split(r"[,\n]", str(value or ""))
        found: list[str] = []
        for item in items:
            name = known.get(str(item).strip().strip(".").casefold())
            if name is not None and name not in found:
                found.append(name)
        return found

    answer = listed("answer")
    return answer, [n for n in listed("stop") if n not in answer]


async def ask_model(asking: Candidate, candidates: Sequence[Candidate]) -> str:
    """One TEXT_SMALL call deciding for ``candidates``, with ``asking``'s model and the conversation
    as its character hears it."""
    runtime, message = asking.runtime, asking.message
    assert runtime is not None and message is not None  # every undecided candidate carries both
    state = await runtime.compose_state(message, _DECISION_PROVIDERS, only_include=True)
    members = "\n".join(f"- {c.name}: {c.about}" if c.about else f"- {c.name}" for c in candidates)
    values = {"troupeMembers": members, "troupeNames": ", ".join(c.name for c in candidates)}
    schema = troupe_decision_schema([c.name for c in candidates])
    prompt = prompt_for(
        runtime, state, "troupeDecisionTemplate", ModelType.TEXT_SMALL, DECISION_TOKENS, values, schema=schema
    )
    raw = str(await prompt.ask() or "")
    parsed = parse_response(raw)
    count_answer(runtime, AnswerKind.TROUPE_DECISION, parsed=parsed is not None and "answer" in parsed)
    return raw
