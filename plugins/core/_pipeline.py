"""The message pipeline: from a received message to the agent's reply.

claim (once per platform message, across restarts) ─▶ store ─▶ gate (rules; the small model only when undecided) ─▶ compose state ─▶ large model plans
(thought, actions, providers, text) ─▶ actions in order (REPLY sends through the callback) ─▶
evaluators.

One conversation per (agent, room): a newer message supersedes a reply still being planned for
an older one, unless the older one addressed the agent directly — that is always answered.
Which is newest is kept in this process: with several daemons, only the one holding the
character's lease receives its messages (and a daemon that lost it sends nothing).

Exactly once: every delivery of a platform message is claimed in the store before anything
else (``Store.claim_message``), so a redelivery (Telegram re-sending an unconfirmed update, a
restart, Discord's catch-up) is answered at most once; the claim ends ``DONE`` with the
outcome. What a crash left unfinished is taken up again once after a restart (``_recovery``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.sdk import (
    DECISION_TOKENS,
    PLAN_TOKENS,
    TOOLBOX,
    ActionRun,
    Button,
    Claim,
    Content,
    IncomingMessage,
    Memory,
    MemoryMetadata,
    MemoryType,
    MessageTrace,
    MessageTracer,
    ModelContextExceeded,
    ModelError,
    ModelType,
    NativeRef,
    Outcome,
    PlatformConnected,
    Press,
    PressHandler,
    ReplyChannel,
    Room,
    RoomState,
    RunCompleted,
    RunEnded,
    RunFailed,
    RunStarted,
    RunTimeout,
    State,
    Status,
    StoreError,
    Toolbox,
    ToolCallRun,
    ToolSpec,
    ToolsRefused,
    now_ms,
    platform_names,
    time_limit,
    tracing,
)

from ._acting import find_action, run_actions, run_evaluators
from ._attachments import process_attachments
from ._budget import prompt_for
from ._bypass import read_bypass
from ._claiming import claim_for, finish, refusal
from ._delivery import Delivery, bound_text, max_reply_chars
from ._embedding import embeddings
from ._gate import Decision, Rule, Verdict, decide
from ._incoming import MESSAGES, store_incoming
from ._parse import parse_response
from ._parse_rate import AnswerKind, count_answer
from ._placeholders import Placeholders
from ._plan import Plan
from ._prompts import for_source, template
from ._recovery import keep_recovering
from ._schemas import SHOULD_RESPOND, plan_schema
from ._should_respond import ShouldRespond, read_choice
from ._streaming import ReplyWatcher
from ._tool_kit import TOOL_KIT, ToolKit
from ._tool_loop import ToolLoop, trace_runs
from ._tool_rules import CallRules
from ._troupe import DEFAULT_WAIT_S, Candidate, SharedMessage, Troupe, TroupeChoice, TroupeDecision, about, ask_model
from .actions._common import notify, room_and_world
from .actions._room_state import set_state
from .providers._common import channel_type

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["MessagePipeline"]

_log = logging.getLogger(__name__)

_PLAN_ATTEMPTS = 3
_DEFAULT_MAX_BOT_TURNS = 3
# Each model call has its own timeout; this bounds a whole message (several calls, actions).
_DEFAULT_RUN_TIMEOUT_S = 600.0
# What the small model sees when deciding whether to speak: enough to judge, cheap to build.
_DECIDE_PROVIDERS = ["CHARACTER", "ANXIETY", "ENTITIES", "RECENT_MESSAGES"]


# The gate's rules whose silence has an outcome of its own.
_SILENCED_BY = {Rule.LOOP_GUARD: Status.LOOP_GUARD, Rule.MUTED: Status.MUTED, Rule.STOPPED: Status.STOPPED}

# Outcomes of deliveries that were never claimed, or whose claim says they are not ours to finish.
_UNCLAIMED = frozenset({Status.OWN, Status.CLOSING, Status.DUPLICATE})

# Outcomes with no trace: the agent's own words, and messages refused while it closes (they stay
# with the platform, and may not even be stored).
_UNTRACED = frozenset({Status.OWN, Status.CLOSING})

# Outcomes that are not a message left unanswered: logged at debug, the others at info.
_ANSWERED = frozenset({Status.REPLIED, Status.ACTED, Status.OWN, Status.CLOSING, Status.DUPLICATE})

# Outcomes of a run that broke (RUN_FAILED); every other ending is one the pipeline chose (RUN_COMPLETED).
_FAILED = frozenset(
    {Status.SEND_FAILED, Status.UNPARSED, Status.MODEL_UNREACHABLE, Status.TIMEOUT, Status.ERROR, Status.ABANDONED}
)


@dataclass(slots=True)
class _Turn:
    """One incoming message on its way through the pipeline."""

    message: Memory
    """The pipeline's own copy: it gets an id, the agent, and read attachments."""
    message_id: str
    channel: ReplyChannel
    delivery: Delivery
    recovered: bool
    native: NativeRef | None
    rule: str = ""
    """The gate's rule that decided, for the trace."""
    decision: str = ""
    """Who decided when the rules did not (the troupe, the small model), for the trace."""
    actions: tuple[tuple[str, bool], ...] = ()
    """The actions run, and whether each succeeded, for the trace."""
    tool_calls: tuple[ToolCallRun, ...] = ()
    """The tools called for the message, for the trace."""
    confirm: tuple[str, list[Button]] | None = None
    """The question (and its buttons) for the calls that wait for the person's yes."""

    @classmethod
    def of(cls, incoming: IncomingMessage, runtime: AgentRuntime) -> _Turn:
        original = incoming.message
        # A message without a platform id is new by definition.
        message_id = original.id or str(uuid.uuid4())
        message = replace(original, id=message_id, agent_id=runtime.agent_id)
        delivery = Delivery(runtime, message, incoming.channel.send, incoming.channel.react)
        return cls(message, message_id, incoming.channel, delivery, incoming.recovered, incoming.native)


class MessagePipeline:
    """Handles MESSAGE_RECEIVED for one runtime."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        # Room id -> the newest message being answered there, as (said at ms, arrival): newest as
        # said, not as heard, so a backlog handled all at once (a store that could not write, a
        # catch-up) is answered by its newest message whatever order its tasks run in, and a
        # message heard late (a slow poll's, after a relayed one) does not supersede a newer one.
        self._newest: dict[str, tuple[int, int]] = {}
        self._arrivals = itertools.count()
        self._answering: set[str] = set()  # ids of the messages this process is handling right now
        self._troupe = runtime.shared.instance_of(Troupe)  # the daemon's characters that may share a room
        self._looking: dict[str, asyncio.Task[None]] = {}  # platform -> the loop that keeps recovering there
        # Tool bounds, calls per person per minute, and the calls that wait for a person's yes.
        self._tools = ToolKit.of(runtime)
        # Read once, at set-up: a name that is wrong stops the character there, not at a message.
        self._bypass = read_bypass(runtime.get_setting, runtime.character, platform_names())

    def register(self) -> None:
        self.runtime.handle_messages_with(self)
        self.runtime.register_service(TOOL_KIT, self._tools)
        self._tools.confirmations.register()
        self.runtime.on(PlatformConnected, self._on_connected)

    async def _on_connected(self, event: PlatformConnected) -> None:
        source = event.source
        if source:
            # Connected again (Discord moved shards): one more first pass, but one loop, not two.
            looping = self._looking.get(source)
            keep = looping is None or looping.done()
            recovering = keep_recovering(self.runtime, self, source, busy=self._answering, keep_looking=keep)
            task = self.runtime.create_task(recovering, f"{source}:recovery")
            if keep:
                self._looking[source] = task

    # -- the flow -------------------------------------------------------------------------

    async def handle(self, incoming: IncomingMessage) -> Outcome:
        """Run the whole pipeline for one message; never raises.

        A message is answered at most once, however often it is delivered (see the module
        docstring). The pipeline works on its own copy of the message: what the platform passed
        in is not changed. From the reply channel it asks, once the agent has decided to answer,
        for "typing…", for the bytes of attachments it reads, and (when the channel streams) hands
        it the reply while the model is still writing it; the reply itself goes out through
        ``channel.send``.
        """
        rt = self.runtime
        if incoming.message.entity_id == rt.agent_id:
            return Outcome(Status.OWN)
        if not rt.accepting:
            return Outcome(Status.CLOSING, "the agent is shutting down")
        turn = _Turn.of(incoming, rt)
        message_id = turn.message_id
        if message_id in self._answering:
            return Outcome(Status.DUPLICATE, "delivered again while being answered")
        self._answering.add(message_id)
        try:
            with rt.handling(), tracing() as tracer:
                return await self._run(turn, tracer)
        finally:
            self._answering.discard(message_id)

    async def _run(self, turn: _Turn, tracer: MessageTracer) -> Outcome:
        rt, message = self.runtime, turn.message
        rt.metrics.messages_received.labels(agent=rt.character.name, platform=turn.delivery.platform).inc()
        run_id = str(uuid.uuid4())
        started = now_ms()
        await rt.emit(
            RunStarted(
                run_id=run_id,
                message_id=turn.message_id,
                room_id=message.room_id,
                entity_id=message.entity_id,
                start_time=started,
            )
        )
        timeout = rt.get_number("RUN_TIMEOUT_S", _DEFAULT_RUN_TIMEOUT_S)
        store_failed = False
        error = ""
        try:
            # The gate, the providers and the action validators read the same room, world and
            # room state: within this message, identical reads share one query until a write.
            with rt.store.shared_reads():
                try:
                    # Kept first, outside the time a message may take: while the store cannot
                    # write, the message waits for it (however long), then is answered in full.
                    kept = await self._keep(turn)
                    if isinstance(kept, Outcome):
                        outcome = kept
                    else:
                        # A wait for a busy model server's turn is not counted (bot.kernel.time_limits).
                        async with time_limit(timeout):
                            outcome = await self._handle(turn, *kept)
                finally:  # handled: whatever was held back for it may go now
                    embeddings(rt).start(turn.message.id)
        except TimeoutError:
            _log.warning(
                "%s: gave up on a message in room %s after %.0f s", rt.character.name, message.room_id, timeout
            )
            await rt.emit(RunTimeout(run_id=run_id, message_id=turn.message_id, room_id=message.room_id))
            outcome = Outcome(Status.TIMEOUT, f"no answer within {timeout:.0f} s")
        except StoreError as exc:
            # The database failed under this message (it crashed, the link broke): the statement
            # in flight is not the person's fault, and not a reason to drop their message.
            _log.warning(
                "%s: the store failed while handling message %s in room %s (%s); it is given back to be answered again",
                rt.character.name,
                turn.message_id,
                message.room_id,
                exc,
            )
            outcome = Outcome(Status.ERROR, f"the store failed: {exc}")
            store_failed = True
            error = type(exc).__name__
        except Exception as exc:
            _log.exception("%s: failed to handle a message in room %s", rt.character.name, message.room_id)
            outcome = Outcome(Status.ERROR)
            error = type(exc).__name__
        if outcome.status is Status.REPLIED and turn.delivery.failed:
            outcome = Outcome(Status.SEND_FAILED, "the platform took none of the reply", outcome.actions)
        if outcome.status not in _UNCLAIMED and not turn.delivery.given_back:
            await finish(rt, turn.delivery, turn.message_id, outcome, store_failed=store_failed)
        rt.metrics.messages_handled.labels(agent=rt.character.name, outcome=outcome.status.value).inc()
        if outcome.status in _ANSWERED:
            _log.debug("%s: message %s -> %s (%s)", rt.character.name, turn.message_id, outcome.status, outcome.reason)
        else:  # the question people ask most is why a character did not answer: say where to look
            link = rt.shared.why_url(turn.message_id)
            _log.info(
                "%s: message %s not answered: %s (%s); see: troupe why %s%s",
                rt.character.name,
                turn.message_id,
                outcome.status,
                outcome.reason,
                turn.message_id,
                f" or {link}" if link else "",
            )
        ended = now_ms()
        if outcome.status not in _UNTRACED:
            await self._record_trace(_trace_of(turn, rt, outcome, tracer, started, ended, error))
        await self._announce_end(run_id, turn, outcome, ended - started)
        return outcome

    async def _announce_end(self, run_id: str, turn: _Turn, outcome: Outcome, duration: int) -> None:
        """RUN_ENDED, then RUN_COMPLETED or RUN_FAILED, all from the same outcome."""
        rt, status = self.runtime, outcome.status
        ids = {"run_id": run_id, "message_id": turn.message_id, "room_id": turn.message.room_id}
        await rt.emit(RunEnded(**ids, status=status.value, duration=duration))
        if status in _FAILED:
            await rt.emit(
                RunFailed(**ids, status=status.value, duration=duration, error=outcome.reason or status.value)
            )
        else:
            await rt.emit(RunCompleted(**ids, status=status.value, duration=duration))

    async def _record_trace(self, trace: MessageTrace) -> None:
        """Keep how the message ended (``troupe why``); a trace is never worth failing a message for."""
        try:
            await self.runtime.store.record_trace(trace)
        except Exception as exc:
            _log.debug("%s: no trace kept of message %s: %s", self.runtime.character.name, trace.message_id, exc)

    async def _keep(self, turn: _Turn) -> tuple[Room | None, RoomState | None] | Outcome:
        """Claim the message and store it, waiting while the store cannot write (the store says
        so, once); the room and the agent's state in it, or how the message ended: a claim that
        says it is not to be answered, or the agent closing while it waited (it stays with the
        platform: Telegram's inbox, a restart's catch-up)."""
        rt, store, message = self.runtime, self.runtime.store, turn.message
        health, accepting = store.health, lambda: rt.accepting
        try:
            claim = await claim_for(rt, turn.message_id, message)
        except StoreError:
            if rt.accepting:
                raise
            return Outcome(Status.CLOSING, "the agent stopped while the store could not write")
        refused = refusal(rt, message, claim)
        if refused is not None:
            return refused
        # Together: one wait for the database, not three. Storing the message changes neither the
        # room nor the agent's state in it.
        try:
            _, room, room_state = await asyncio.gather(
                health.retry(
                    lambda: store_incoming(rt, message, stored_before=claim is Claim.RETRY), going_on=accepting
                ),
                store.get_room(message.room_id),
                store.get_participant_state(message.room_id, rt.agent_id),
            )
        except StoreError:
            if rt.accepting:
                raise
            # Claimed, not stored: the next delivery (Telegram's inbox at the next start) takes it up.
            return Outcome(Status.CLOSING, "the agent stopped while the store could not write")
        return room, room_state

    async def _handle(self, turn: _Turn, room: Room | None, room_state: RoomState | None) -> Outcome:
        pressed = self._pressed_button(turn.message)
        if pressed is not None:
            return await self._pressed(turn, *pressed)
        verdict = await self._gate(turn.message, room, room_state)
        turn.rule = verdict.rule.value
        shared_message, troupe_decision = await self._ask_troupe(turn, verdict)
        ended = self._ended_by_rules(turn, verdict)
        if ended is not None:
            return ended
        order = self._arrived(turn.message)
        try:
            if verdict.decision is Decision.ASK_MODEL:
                turn.decision = _who_decided(troupe_decision)
                decided = await self._settle(turn.message, verdict, shared_message, troupe_decision)
                if isinstance(decided, Outcome):
                    return decided
                verdict = decided
            await self._show_typing(turn)
            await self._read_attachments(turn)
            return await self._respond(turn, verdict, order)
        finally:
            self._left(turn.message.room_id, order, shared_message)

    async def _respond(self, turn: _Turn, verdict: Verdict, order: tuple[int, int]) -> Outcome:
        rt, message, delivery = self.runtime, turn.message, turn.delivery
        # What was attached to this message is part of what it says: show it when planning.
        extra = ["ACTIONS", "ATTACHMENTS"] if message.content.attachments else ["ACTIONS"]
        state = await rt.compose_state(message, extra)
        tooling = self._tools_for(message)
        plan = await self._tool_turn(turn, state, *tooling) if tooling is not None else None
        if plan is None:  # no tools, or a model that takes none
            stream = turn.channel.stream if turn.channel.streams else None
            plan = await self._plan(state, message.content.source, stream)
        if isinstance(plan, Outcome):
            return plan
        # (Gone from the map: a newer message was answered meanwhile, and its answer stands.)
        if self._newest.get(message.room_id) != order and not verdict.addressed:
            return Outcome(Status.SUPERSEDED, "a newer message arrived in the room")

        actions = plan.actions
        # Bounded here, not only when sent: what is stored as said is what was sent.
        text = bound_text(plan.text, max_reply_chars(rt))
        content = Content(
            thought=plan.thought,
            actions=tuple(actions),
            providers=tuple(plan.providers),
            text=text,
            in_reply_to=message.id,
            source=message.content.source,
            image_prompt=plan.image_prompt or None,
            emoji=plan.emoji or None,
        )
        response = Memory(
            id=str(uuid.uuid4()),
            entity_id=rt.agent_id,
            agent_id=rt.agent_id,
            room_id=message.room_id,
            world_id=message.world_id,
            content=content,
            created_at=now_ms(),
        )
        if actions == ["IGNORE"]:
            await self._remember_silence(message, "IGNORE", thought=plan.thought)
            return Outcome(Status.IGNORED, "the model chose IGNORE", ("IGNORE",))
        if plan.providers:
            state = await rt.compose_state(message, plan.providers)
        results = await run_actions(
            rt, message, [response], state, delivery, react=delivery.react, fetch=turn.channel.fetch
        )
        turn.actions = tuple(results)
        if turn.confirm is not None:  # after the reply that tells them why
            question, buttons = turn.confirm
            await notify(delivery, question, "RUN_TOOL", message, buttons=buttons)
        await run_evaluators(rt, message, state, did_respond=True, reply=delivery, responses=[response])
        if delivery.failed:
            return Outcome(Status.SEND_FAILED, "the platform took none of the reply", tuple(actions))
        replied = any(name.upper() == "REPLY" and ok for name, ok in results)
        return Outcome(Status.REPLIED if replied else Status.ACTED, verdict.reason, tuple(actions))

    # -- steps ----------------------------------------------------------------------------

    async def _pressed(self, turn: _Turn, press: Press, handler: PressHandler) -> Outcome:
        """A press of a button a plugin handles: its handler, and no model (see PressHandler)."""
        rt = self.runtime
        _log.debug("%s: press of %r handled by %r", rt.character.name, press.value, handler.prefix)
        result = await handler.handle(rt, turn.message, press, turn.delivery)
        if turn.delivery.failed:
            return Outcome(Status.SEND_FAILED, "the platform took none of the answer to a press")
        status = Status.REPLIED if turn.delivery.sent else Status.ACTED
        return Outcome(status, f"press of {press.value!r}: {result.error or 'done'}")

    def _pressed_button(self, message: Memory) -> tuple[Press, PressHandler] | None:
        """The button the message presses, when a plugin handles its presses."""
        press = message.content.button
        handler = self.runtime.press_handler_for(press.value) if press is not None else None
        return (press, handler) if press is not None and handler is not None else None

    async def _gate(self, message: Memory, room: Room | None, room_state: RoomState | None) -> Verdict:
        """What the rules say about the message (``_gate.py``), the loop guard included."""
        rt = self.runtime
        max_bot_turns = rt.get_int("MAX_BOT_TURNS", _DEFAULT_MAX_BOT_TURNS)
        # The loop guard only looks at the trailing run of bot messages: read no more than that.
        # It counts in the character's own history of the room, in the store: what it said and
        # heard, the other characters' words included (through the relay, from any daemon), so it
        # holds across daemons with no count of its own.
        recent = []
        if message.metadata.author_is_bot:
            recent = await rt.store.get_memories(table=MESSAGES, room_id=message.room_id, count=max_bot_turns + 1)
        verdict = decide(
            message,
            agent_id=rt.agent_id,
            names=self._names(),
            room_type=channel_type(room, message),
            room_state=room_state,
            recent=recent,
            max_bot_turns=max_bot_turns,
            bypass_types=self._bypass.types,
            bypass_sources=self._bypass.sources,
        )
        if verdict.decision is Decision.ASK_MODEL:
            embeddings(rt).start(message.id)  # it has the model's decision time to run in
        if room_state is RoomState.STOPPED and verdict.decision is Decision.RESPOND:
            await self._set_room_state(message, None, "named again after staying out")  # invited back
        return verdict

    def _ended_by_rules(self, turn: _Turn, verdict: Verdict) -> Outcome | None:
        """How the message ends when the rules silence it, or when a crash left it unanswered
        and it was not addressed to the character; None when it goes on (counted when answered)."""
        rt, message = self.runtime, turn.message
        counted = rt.metrics.gate_decisions
        if verdict.decision is Decision.IGNORE:
            status = _SILENCED_BY.get(verdict.rule, Status.IGNORED)
            counted.labels(agent=rt.character.name, decision=status.value).inc()
            return Outcome(status, verdict.reason)
        if turn.recovered and verdict.decision is Decision.ASK_MODEL:
            _log.info(
                "%s: message %s in room %s, left unanswered by a crash, is not taken up: it was not "
                "addressed to the character",
                rt.character.name,
                message.id,
                message.room_id,
            )
            return Outcome(Status.NOT_TAKEN_UP, "not addressed")
        if verdict.decision is Decision.RESPOND:
            counted.labels(agent=rt.character.name, decision="respond").inc()
        return None

    def _arrived(self, message: Memory) -> tuple[int, int]:
        """The message's place among those answered in its room (see ``_newest``); the newest
        so far takes the room."""
        order = (message.created_at or now_ms(), next(self._arrivals))
        newest = self._newest.get(message.room_id)
        if newest is None or order > newest:
            self._newest[message.room_id] = order
        return order

    def _left(self, room_id: str, order: tuple[int, int], shared_message: SharedMessage | None) -> None:
        """The message is done with: it no longer holds its room, nor its place in the troupe's turn."""
        if self._newest.get(room_id) == order:
            del self._newest[room_id]
        if shared_message is not None:
            self._troupe.done(shared_message, self.runtime.agent_id)

    async def _settle(
        self,
        message: Memory,
        verdict: Verdict,
        shared_message: SharedMessage | None,
        troupe_decision: TroupeDecision | None,
    ) -> Verdict | Outcome:
        """For a message the rules left undecided: the verdict to answer it by, once it is the
        character's turn, or how it ended (see ``_undecided``)."""
        silence = await self._undecided(message, troupe_decision)
        if silence is not None:
            return silence
        if (
            shared_message is not None
            and troupe_decision is not None
            and troupe_decision.choice is TroupeChoice.RESPOND
        ):
            # Picked by the troupe: never superseded, and in turn after those picked before.
            verdict = replace(verdict, reason=troupe_decision.reason, addressed=True)
            await shared_message.wait_turn(self.runtime.agent_id, self._troupe)
        return verdict

    async def _show_typing(self, turn: _Turn) -> None:
        """Show "typing…": an answer is coming (a platform that cannot show it is no loss)."""
        try:
            await turn.channel.typing()
        except Exception:
            _log.exception("%s: the platform could not show that an answer is coming", self.runtime.character.name)

    async def _read_attachments(self, turn: _Turn) -> None:
        """Read what is attached to the message, and keep what was read with it."""
        read = await process_attachments(self.runtime, turn.message, turn.channel.fetch)
        if read is not None:
            turn.message = read
            await self.runtime.store.update_memory(turn.message_id, content=read.content)

    async def _ask_troupe(self, turn: _Turn, verdict: Verdict) -> tuple[SharedMessage | None, TroupeDecision | None]:
        """Tell the troupe what the rules said; for an undecided message in a room shared with
        the daemon's other characters, what the troupe decided (see ``_troupe.py``)."""
        rt, native = self.runtime, turn.native
        if native is None or turn.recovered:
            return None, None
        character = rt.character
        undecided = verdict.decision is Decision.ASK_MODEL  # only the undecided are described to the model
        summary = about(character.bio, character.topics) if undecided else ""
        candidate = Candidate(rt.agent_id, character.name, verdict, summary, rt, turn.message)
        wait_s = rt.get_number("TROUPE_WAIT_S", DEFAULT_WAIT_S)
        return await self._troupe.decide(
            native, candidate, lambda candidates: ask_model(candidates[0], candidates), wait_s=wait_s
        )

    async def _undecided(self, message: Memory, troupe_decision: TroupeDecision | None) -> Outcome | None:
        """For a message the rules left undecided: None to answer it, else how it ended — by
        the troupe's decision, or (alone) by the character's own small model."""
        rt = self.runtime
        counted = rt.metrics.gate_decisions
        if troupe_decision is None or troupe_decision.choice is TroupeChoice.ALONE:
            choice = await self._ask_small_model(message)
            if choice is None:
                counted.labels(agent=rt.character.name, decision="model_unreachable").inc()
                return Outcome(Status.MODEL_UNREACHABLE, "the small model did not answer")
            counted.labels(agent=rt.character.name, decision=f"model_{choice.lower()}").inc()
            if choice is ShouldRespond.RESPOND:
                return None
            return await self._stay_silent(message, stop=choice is ShouldRespond.STOP, reason=f"small model: {choice}")
        counted.labels(agent=rt.character.name, decision=f"troupe_{troupe_decision.choice.value}").inc()
        if troupe_decision.choice is TroupeChoice.RESPOND:
            return None
        if troupe_decision.choice is TroupeChoice.UNREACHABLE:
            return Outcome(Status.MODEL_UNREACHABLE, troupe_decision.reason)
        return await self._stay_silent(
            message, stop=troupe_decision.choice is TroupeChoice.STOP, reason=f"troupe: {troupe_decision.reason}"
        )

    async def _stay_silent(self, message: Memory, *, stop: bool, reason: str) -> Outcome:
        """Not answering, as decided; asked to stop, staying out of the room until named."""
        if stop:
            await self._set_room_state(message, RoomState.STOPPED, "asked to stay out")
        await self._remember_silence(message, (ShouldRespond.STOP if stop else ShouldRespond.IGNORE).value)
        return Outcome(Status.STOPPED if stop else Status.IGNORED, reason)

    async def _set_room_state(self, message: Memory, state: RoomState | None, why: str) -> None:
        """The character's state in the message's room, kept like a mute: STOPPED when asked to
        stay out (it then stays quiet, asking no model, until named), cleared when named again."""
        rt = self.runtime
        try:
            await set_state(rt, message.room_id, state)
        except StoreError as exc:  # the decision stands for this message; the next one asks again
            _log.warning(
                "%s: could not record in room %s that it was %s: %s", rt.character.name, message.room_id, why, exc
            )
            return
        _log.info("%s: %s in room %s", rt.character.name, why, message.room_id)

    async def _ask_small_model(self, message: Memory) -> ShouldRespond | None:
        """The small model's choice; an unreadable answer means IGNORE, no answer None."""
        rt = self.runtime
        state = await rt.compose_state(message, _DECIDE_PROVIDERS, only_include=True)
        name = for_source(rt.character.templates, "shouldRespondTemplate", message.content.source)
        prompt = prompt_for(rt, state, name, ModelType.TEXT_SMALL, DECISION_TOKENS, schema=SHOULD_RESPOND)
        try:
            raw = await prompt.ask()
        except ModelError as exc:
            _log.warning("%s: could not decide whether to respond: %s", rt.character.name, exc)
            return None
        placeholders = Placeholders.of(template(rt.character.templates, name), state.values)
        parsed = placeholders.without(parse_response(raw), agent=rt.character.name, kind="should respond") or {}
        choice = read_choice(parsed)
        count_answer(rt, AnswerKind.SHOULD_RESPOND, parsed=choice is not None)
        return choice or ShouldRespond.IGNORE

    def _tools_for(self, message: Memory) -> tuple[Toolbox, list[ToolSpec]] | None:
        """The character's toolbox and tools when this message may use them: there are tools, a
        model that calls them, and the message is from a person (never for another bot's)."""
        rt = self.runtime
        toolbox = rt.get_service(TOOLBOX)
        if toolbox is None or message.metadata.author_is_bot or not rt.has_model(ModelType.TEXT_TOOLS):
            return None
        tools = list(toolbox.tools())
        return (toolbox, tools) if tools else None

    async def _tool_turn(
        self, turn: _Turn, state: State, toolbox: Toolbox, tools: list[ToolSpec]
    ) -> Plan | Outcome | None:
        """The reply written by a loop of tool calls (``_tool_loop``), as a plan to REPLY with it;
        ``None`` when the model takes no tools (the turn is planned as without them)."""
        rt, message = self.runtime, turn.message
        name = rt.character.name
        bounds = self._tools.bounds
        _, world = await room_and_world(rt, message)
        rules = CallRules(toolbox, tools, message, world, self._tools.limit, turn.channel.fetch)
        # Room for the results in the window, as well as for the reply.
        room = self._plan_tokens() + bounds.result_chars // 4
        prompt = prompt_for(rt, state, "toolUseTemplate", ModelType.TEXT_TOOLS, room)
        stream = turn.channel.stream if turn.channel.streams else None
        loop = ToolLoop(rt, prompt, tools, rules.run, bounds, system=None, stream=stream)
        try:
            result = await loop.run()
        except ToolsRefused as exc:
            _log.info("%s: %s; planning without tools", name, exc.reason_for(name))
            return None
        except ModelError as exc:
            _log.warning("%s: no reply: %s", name, exc)
            return Outcome(Status.MODEL_UNREACHABLE, exc.reason_for(name))
        turn.tool_calls = trace_runs(result.rounds, rules.waiting)
        if rules.waiting:
            turn.confirm = await self._tools.confirmations.ask(rules.waiting, message)
        if not result.text:
            return Outcome(Status.UNPARSED, "the model wrote no reply after its tool calls")
        used = ", ".join(dict.fromkeys(run.name for run in turn.tool_calls)) or "none"
        thought = f"Answered with tools (used: {used}; {result.model_requests} model requests, {result.stop.value})."
        return Plan(thought=thought, actions=["REPLY"], providers=[], text=result.text)

    async def _plan(
        self, state: State, source: str | None, stream: Callable[[str], None] | None = None
    ) -> Plan | Outcome:
        """Ask the large model what to do; up to three tries for a reply that parses. When there
        is no plan, the outcome that says why."""
        rt = self.runtime
        name = rt.character.name
        handler = for_source(rt.character.templates, "messageHandlerTemplate", source)
        placeholders = Placeholders.of(template(rt.character.templates, handler), state.values)
        schema = plan_schema(_offered_actions(state))
        prompt = prompt_for(rt, state, handler, ModelType.TEXT_LARGE, self._plan_tokens(), schema=schema)
        attempt = 0
        while attempt < _PLAN_ATTEMPTS:
            attempt += 1
            params = prompt.params()
            if stream is not None and attempt == 1:
                params["on_delta"] = ReplyWatcher(stream, placeholders).feed  # reads the text of JSON and of XML
            try:
                raw = await rt.use_model(ModelType.TEXT_LARGE, params)
            except ModelError as exc:
                if isinstance(exc, ModelContextExceeded) and prompt.shrink(exc):
                    attempt -= 1  # too long for the model: once more, smaller (not a parse attempt)
                    continue
                _log.warning("%s: no reply: %s", name, exc)
                return Outcome(Status.MODEL_UNREACHABLE, exc.reason_for(name))
            plan = Plan.of(placeholders.without(parse_response(raw), agent=name, kind="plan"))
            count_answer(rt, AnswerKind.PLAN, parsed=plan is not None)
            if plan is not None:
                plan = self._known_actions(plan)
            if plan is not None:
                return plan
            _log.info(
                "%s: the model's reply did not parse (attempt %d of %d)", rt.character.name, attempt, _PLAN_ATTEMPTS
            )
        _log.warning("%s: staying silent: the model's reply never parsed", rt.character.name)
        return Outcome(Status.UNPARSED, "the model's reply never parsed")

    def _plan_tokens(self) -> int:
        """``PLAN_MAX_TOKENS``: how much the plan may write (at least 64 tokens)."""
        return max(64, self.runtime.get_int("PLAN_MAX_TOKENS", PLAN_TOKENS))

    def _known_actions(self, plan: Plan) -> Plan | None:
        """``plan`` without the actions no plugin offers (a weak model invents them): its text
        is still said. ``None`` when that leaves it nothing to do."""
        rt = self.runtime
        unknown = [a for a in plan.actions if find_action(rt.actions, a) is None]
        if not unknown:
            return plan
        known = plan.without_actions(unknown)
        _log.info(
            "%s: the model asked for unknown action%s %s; %s",
            rt.character.name,
            "s" if len(unknown) > 1 else "",
            ", ".join(repr(a) for a in unknown),
            "nothing else to do" if known is None else f"doing {', '.join(known.actions)}",
        )
        return known

    async def _remember_silence(self, message: Memory, action: str, thought: str = "") -> None:
        """Store the decision not to speak, so the history (and the loop guard) sees it."""
        rt = self.runtime
        content = Content(thought=thought or "Decided not to respond.", actions=(action,), in_reply_to=message.id)
        await rt.store.create_memory(
            Memory(
                entity_id=rt.agent_id,
                agent_id=rt.agent_id,
                room_id=message.room_id,
                world_id=message.world_id,
                content=content,
                metadata=MemoryMetadata(type=MemoryType.DECISION),
                created_at=now_ms(),
            ),
            MESSAGES,
            unique=False,
        )

    def _names(self) -> list[str]:
        character = self.runtime.character
        names = [character.name, character.username or ""]
        aliases = character.settings.get("aliases")
        if isinstance(aliases, list):
            names += [a for a in aliases if isinstance(a, str)]
        return [n for n in names if n]


def _offered_actions(state: State) -> list[str]:
    """The names of the actions offered in the plan's prompt (the ACTIONS provider's), if any."""
    provided = state.providers.get("ACTIONS")
    offered = provided.data.get("actionsData") if provided is not None else None
    return [str(getattr(action, "name", "")) for action in offered or [] if getattr(action, "name", "")]


def _who_decided(troupe_decision: TroupeDecision | None) -> str:
    """Who decides a message the rules left undecided: the troupe, or the character's small model."""
    if troupe_decision is None or troupe_decision.choice is TroupeChoice.ALONE:
        return "small model"
    return f"troupe: {troupe_decision.choice.value} ({troupe_decision.reason})"


def _trace_of(
    turn: _Turn, rt: AgentRuntime, outcome: Outcome, tracer: MessageTracer, started: int, ended: int, error: str
) -> MessageTrace:
    """How the message ended, as its trace: what the pipeline and the tracer noted."""
    message = turn.message
    return MessageTrace(
        message_id=turn.message_id,
        agent_id=rt.agent_id,
        room_id=message.room_id,
        entity_id=message.entity_id,
        status=outcome.status,
        reason=outcome.reason,
        agent_name=rt.character.name,
        entity_name=message.metadata.entity_name or "",
        platform=turn.delivery.platform,
        world_id=message.world_id,
        said_at=message.created_at or started,  # undated: when it was heard
        ended_at=ended,
        duration_ms=ended - started,
        rule=turn.rule,
        decision=turn.decision,
        model_calls=tuple(tracer.model_calls),
        actions=tuple(ActionRun(name, ok) for name, ok in turn.actions),
        reply_ids=tuple(turn.delivery.sent_ids),
        error=error,
        tool_calls=turn.tool_calls + tuple(tracer.tool_calls),
    )
