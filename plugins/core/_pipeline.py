"""The message pipeline: from a received message to the agent's reply.

store ─▶ gate (rules; the small model only when undecided) ─▶ compose state ─▶ large model plans
(thought, actions, providers, text) ─▶ actions in order (REPLY sends through the callback) ─▶
evaluators.

One conversation per (agent, room): a newer message supersedes a reply still being planned for
an older one, unless the older one addressed the agent directly — that is always answered.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.components import Action, ActionResult, HandlerCallback, State
from bot.errors import ModelError, StoreError
from bot.events import EventType
from bot.models import ModelType
from bot.types import ChannelType, Entity, Memory, Room, now_ms

from ._attachments import AttachmentFetcher, process_attachments
from ._embedding import embed_later
from ._gate import Decision, Verdict, decide
from ._parse import parse_response
from ._streaming import ReplyWatcher
from ._prompts import render, template

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["MessagePipeline", "Outcome", "find_action"]

_log = logging.getLogger(__name__)

MESSAGES = "messages"
_PLAN_ATTEMPTS = 3
_DEFAULT_MAX_BOT_TURNS = 3
# Each model call has its own timeout; this bounds a whole message (several calls, actions).
_DEFAULT_RUN_TIMEOUT_S = 600.0
# What the small model sees when deciding whether to speak: enough to judge, cheap to build.
_DECIDE_PROVIDERS = ["CHARACTER", "ANXIETY", "ENTITIES", "RECENT_MESSAGES"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one message ended; returned for tests and benchmarks, logged at debug."""

    status: str
    """``replied``, ``acted``, ``ignored``, ``stopped``, ``muted``, ``own``, ``superseded``,
    ``loop_guard``, ``silent`` (the model's output never parsed), ``timeout``, ``error``, ``closing`` (refused: the agent is draining)."""
    reason: str = ""
    actions: tuple[str, ...] = ()


def _norm(name: str) -> str:
    return name.upper().replace("_", "").replace("-", "").strip()


def find_action(actions: dict[str, Action], name: str) -> Action | None:
    """The action ``name`` means: exact name, then simile, then a containment match."""
    wanted = _norm(name)
    if not wanted:
        return None
    for action in actions.values():
        if _norm(action.name) == wanted:
            return action
    for action in actions.values():
        if any(_norm(s) == wanted for s in action.similes):
            return action
    for action in actions.values():
        if wanted in _norm(action.name) or _norm(action.name) in wanted:
            return action
    return None


class MessagePipeline:
    """Handles MESSAGE_RECEIVED for one runtime."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        self._latest: dict[str, str] = {}  # room id -> token of the newest message being answered

    def register(self) -> None:
        self.runtime.register_event(EventType.MESSAGE_RECEIVED, self._on_message)
        self.runtime.register_event(EventType.VOICE_MESSAGE_RECEIVED, self._on_message)

    async def _on_message(self, payload: dict[str, Any]) -> None:
        message = payload.get("message")
        if not isinstance(message, Memory):
            _log.error("%s: MESSAGE_RECEIVED without a message; ignored", self.runtime.character.name)
            return
        outcome = await self.handle(message, payload.get("callback"), fetch=payload.get("fetch_attachment"),
                                    on_responding=payload.get("on_responding"),
                                    on_reply_text=payload.get("on_reply_text"))
        done = payload.get("on_complete")
        if done is not None:
            await done(outcome)

    # -- the flow -------------------------------------------------------------------------

    async def handle(
        self, message: Memory, callback: HandlerCallback | None, *, fetch: AttachmentFetcher | None = None,
        on_responding: Callable[[], Awaitable[None]] | None = None,
        on_reply_text: Callable[[str], None] | None = None,
    ) -> Outcome:
        """Run the whole pipeline for ``message``; never raises.

        Platform hooks, all optional: ``fetch`` downloads an attachment's bytes (the platform's
        own way), so images, audio and text files can be read once the agent decides to respond;
        ``on_responding`` is awaited at that moment, so the platform can show "typing…" only
        for messages that will be answered; ``on_reply_text`` is called with the reply text so
        far while the model is still writing it, once the plan says REPLY (voice starts speaking
        the first sentence then). The reply itself still arrives through ``callback``.
        """
        rt = self.runtime
        if message.entity_id == rt.agent_id:
            return Outcome("own")
        if not rt.accepting:
            return Outcome("closing", "the agent is shutting down")
        with rt.handling():
            return await self._run(message, self._timed(message, callback), fetch, on_responding, on_reply_text)

    def _timed(self, message: Memory, callback: HandlerCallback | None) -> HandlerCallback | None:
        """``callback``, counting the message in and timing it to the first reply sent."""
        platform = str(message.content.get("source") or "unknown")
        metrics, agent = self.runtime.metrics, self.runtime.character.name
        metrics.messages_received.labels(agent=agent, platform=platform).inc()
        if callback is None:
            return None
        received, timed = time.perf_counter(), False

        async def timed_callback(content: dict[str, Any]) -> list[Memory]:
            nonlocal timed
            sent = await callback(content)
            if not timed and sent:
                timed = True
                metrics.reply_latency.labels(agent=agent, platform=platform).observe(time.perf_counter() - received)
            return sent

        return timed_callback

    async def _run(
        self, message: Memory, callback: HandlerCallback | None, fetch: AttachmentFetcher | None,
        on_responding: Callable[[], Awaitable[None]] | None, on_reply_text: Callable[[str], None] | None,
    ) -> Outcome:
        rt = self.runtime
        run_id = str(uuid.uuid4())
        started = now_ms()
        await rt.emit(EventType.RUN_STARTED, {"runId": run_id, "messageId": message.id, "roomId": message.room_id,
                                               "entityId": message.entity_id, "startTime": started})
        timeout = rt.get_number("RUN_TIMEOUT_S", _DEFAULT_RUN_TIMEOUT_S)
        try:
            # The gate, the providers and the action validators read the same room, world and
            # room state: within this message, identical reads share one query until a write.
            async with asyncio.timeout(timeout):
                with rt.store.database.shared_reads():
                    outcome = await self._handle(message, callback, fetch, on_responding, on_reply_text)
        except TimeoutError:
            _log.warning("%s: gave up on a message in room %s after %.0f s", rt.character.name, message.room_id, timeout)
            await rt.emit(EventType.RUN_TIMEOUT, {"runId": run_id, "messageId": message.id, "roomId": message.room_id})
            outcome = Outcome("timeout", f"no answer within {timeout:.0f} s")
        except Exception:
            _log.exception("%s: failed to handle a message in room %s", rt.character.name, message.room_id)
            outcome = Outcome("error")
        _log.debug("%s: message %s -> %s (%s)", rt.character.name, message.id, outcome.status, outcome.reason)
        await rt.emit(EventType.RUN_ENDED, {"runId": run_id, "messageId": message.id, "roomId": message.room_id,
                                             "status": outcome.status, "duration": now_ms() - started})
        return outcome

    async def _handle(
        self, message: Memory, callback: HandlerCallback | None, fetch: AttachmentFetcher | None,
        on_responding: Callable[[], Awaitable[None]] | None, on_reply_text: Callable[[str], None] | None = None,
    ) -> Outcome:
        rt, store = self.runtime, self.runtime.store
        # Together: one wait for the database, not three. Storing the message changes neither the
        # room nor the agent's state in it.
        _, room, room_state = await asyncio.gather(
            self._store_incoming(message),
            store.get_room(message.room_id),
            store.get_participant_state(message.room_id, rt.agent_id),
        )
        max_bot_turns = rt.get_int("MAX_BOT_TURNS", _DEFAULT_MAX_BOT_TURNS)
        # The loop guard only looks at the trailing run of bot messages: read no more than that.
        recent = []
        if message.metadata.get("authorIsBot"):
            recent = await store.get_memories(table=MESSAGES, room_id=message.room_id, count=max_bot_turns + 1)
        verdict = decide(
            message,
            agent_id=rt.agent_id,
            names=self._names(),
            room_type=room.type if room else message.content.get("channelType"),
            room_state=room_state,
            recent=recent,
            max_bot_turns=max_bot_turns,
        )
        decisions = rt.metrics.gate_decisions
        if verdict.decision is Decision.IGNORE:
            status = "loop_guard" if verdict.reason.startswith("loop guard") else "muted" if verdict.reason == "muted" else "ignored"
            decisions.labels(agent=rt.character.name, decision=status).inc()
            return Outcome(status, verdict.reason)
        if verdict.decision is Decision.RESPOND:
            decisions.labels(agent=rt.character.name, decision="respond").inc()

        token = str(uuid.uuid4())
        self._latest[message.room_id] = token
        try:
            if verdict.decision is Decision.ASK_MODEL:
                choice = await self._ask_small_model(message)
                decisions.labels(agent=rt.character.name, decision=f"model_{choice.lower()}").inc()
                if choice != "RESPOND":
                    await self._remember_silence(message, "STOP" if choice == "STOP" else "IGNORE")
                    return Outcome("stopped" if choice == "STOP" else "ignored", f"small model: {choice}")
            if on_responding is not None:
                try:
                    await on_responding()
                except Exception:
                    _log.exception("%s: the platform's on_responding hook failed", rt.character.name)
            if await process_attachments(rt, message, fetch):
                await store.update_memory(message.id, content=message.content)
            return await self._respond(message, callback, verdict, token, on_reply_text)
        finally:
            if self._latest.get(message.room_id) == token:
                del self._latest[message.room_id]

    async def _respond(self, message: Memory, callback: HandlerCallback | None, verdict: Verdict, token: str,
                       on_reply_text: Callable[[str], None] | None = None) -> Outcome:
        rt = self.runtime
        # What was attached to this message is part of what it says: show it when planning.
        extra = ["ACTIONS", "ATTACHMENTS"] if message.content.get("attachments") else ["ACTIONS"]
        state = await rt.compose_state(message, extra)
        plan = await self._plan(state, on_reply_text)
        if plan is None:
            return Outcome("silent", "the model's reply never parsed")
        if self._latest.get(message.room_id) != token and not verdict.addressed:
            return Outcome("superseded", "a newer message arrived in the room")

        actions = _settle_actions(plan)
        content = {"thought": plan.get("thought", ""), "actions": actions, "providers": plan.get("providers", []),
                   "text": str(plan.get("text") or ""), "inReplyTo": message.id, "source": message.content.get("source")}
        response = Memory(id=str(uuid.uuid4()), entity_id=rt.agent_id, agent_id=rt.agent_id, room_id=message.room_id,
                          world_id=message.world_id, content=content, created_at=now_ms())
        if actions == ["IGNORE"]:
            await self._remember_silence(message, "IGNORE", thought=content["thought"])
            return Outcome("ignored", "the model chose IGNORE", ("IGNORE",))
        if content["providers"]:
            state = await rt.compose_state(message, content["providers"])
        results = await self.process_actions(message, [response], state, callback)
        await self.evaluate(message, state, did_respond=True, callback=callback, responses=[response])
        replied = any(name.upper() == "REPLY" and ok for name, ok in results)
        return Outcome("replied" if replied else "acted", verdict.reason, tuple(actions))

    # -- steps ----------------------------------------------------------------------------

    async def _store_incoming(self, message: Memory) -> None:
        store = self.runtime.store
        message.agent_id = self.runtime.agent_id
        if message.id is not None and await store.get_memory(message.id) is not None:
            return  # delivered twice (a reconnect, a relay): keep one copy
        try:
            message.id = await store.create_memory(message, MESSAGES)
        except StoreError:
            if not await self._restore_references(message):
                raise
            message.id = await store.create_memory(message, MESSAGES)
        if message.embedding is None:
            embed_later(self.runtime, message.id, str(message.content.get("text") or ""))

    async def _restore_references(self, message: Memory) -> bool:
        """Write the room and the sender of ``message`` again when the store no longer has them;
        True if anything was missing.

        ``troupe memory forget`` may remove a room or a person while this process runs, and the
        platform adapter writes a room or person only the first time it sees them in a run. What
        the message itself says is enough to carry on; a restart brings back the rest (the room's
        name and channel, the person's platform details).
        """
        rt = self.runtime
        store = rt.store
        restored = False
        if await store.get_room(message.room_id) is None:
            raw_type = str(message.content.get("channelType") or "").upper()
            kind = ChannelType(raw_type) if raw_type in ChannelType.__members__ else ChannelType.GROUP
            await store.create_rooms([Room(message.room_id, source=str(message.content.get("source") or "unknown"),
                                           type=kind, world_id=message.world_id)])
            await store.add_participant(rt.agent_id, message.room_id)
            restored = True
        if await store.get_entity(message.entity_id) is None:
            names = [str(n) for n in (message.metadata.get("entityName"), message.metadata.get("entityUserName")) if n]
            await store.create_entities([Entity(message.entity_id, rt.agent_id, names=list(dict.fromkeys(names)))])
            restored = True
        if restored:
            await store.add_participant(message.entity_id, message.room_id)
            _log.info("%s: wrote again the room or sender of a message that the store had forgotten",
                      rt.character.name)
        return restored

    async def _ask_small_model(self, message: Memory) -> str:
        """RESPOND, IGNORE or STOP; a model failure or unreadable answer means IGNORE."""
        rt = self.runtime
        state = await rt.compose_state(message, _DECIDE_PROVIDERS, only_include=True)
        prompt = render(template(rt.character.templates, "shouldRespondTemplate"), state.values, rng=rt.rng)
        try:
            raw = await rt.use_model(ModelType.TEXT_SMALL, {"prompt": prompt})
        except ModelError as exc:
            _log.warning("%s: could not decide whether to respond: %s", rt.character.name, exc)
            return "IGNORE"
        parsed = parse_response(raw) or {}
        action = parsed.get("action")
        choice = str((action[-1] if isinstance(action, list) and action else action) or "").strip().upper()
        return choice if choice in ("RESPOND", "STOP") else "IGNORE"

    async def _plan(self, state: State, on_reply_text: Callable[[str], None] | None = None) -> dict[str, Any] | None:
        """Ask the large model what to do; up to three tries for a reply that parses."""
        rt = self.runtime
        prompt = render(template(rt.character.templates, "messageHandlerTemplate"), state.values, rng=rt.rng)
        for attempt in range(1, _PLAN_ATTEMPTS + 1):
            params: dict[str, Any] = {"prompt": prompt}
            if on_reply_text is not None and attempt == 1:
                params["on_delta"] = ReplyWatcher(on_reply_text).feed
            try:
                raw = await rt.use_model(ModelType.TEXT_LARGE, params)
            except ModelError as exc:
                _log.warning("%s: no reply: %s", rt.character.name, exc)
                return None
            parsed = parse_response(raw)
            if parsed and (parsed.get("actions") or parsed.get("text")):
                return parsed
            _log.info("%s: the model's reply did not parse (attempt %d of %d)", rt.character.name, attempt, _PLAN_ATTEMPTS)
        _log.warning("%s: staying silent: the model's reply never parsed", rt.character.name)
        return None

    async def _remember_silence(self, message: Memory, action: str, thought: str = "") -> None:
        """Store the decision not to speak, so the history (and the loop guard) sees it."""
        rt = self.runtime
        content = {"thought": thought or "Decided not to respond.", "actions": [action], "inReplyTo": message.id}
        await rt.store.create_memory(
            Memory(entity_id=rt.agent_id, agent_id=rt.agent_id, room_id=message.room_id, world_id=message.world_id,
                   content=content, metadata={"type": "decision"}, created_at=now_ms()),
            MESSAGES, unique=False,
        )

    async def process_actions(
        self, message: Memory, responses: Sequence[Memory], state: State, callback: HandlerCallback | None
    ) -> list[tuple[str, bool]]:
        """Run each response's actions in order; a failing action is logged and the chain goes on."""
        rt = self.runtime
        outcomes: list[tuple[str, bool]] = []
        results: list[ActionResult] = state.data.setdefault("actionResults", [])
        for response in responses:
            for name in response.content.get("actions") or []:
                action = find_action(rt.actions, name)
                if action is None:
                    _log.info("%s: the model asked for unknown action %r; skipped", rt.character.name, name)
                    continue
                await rt.emit(EventType.ACTION_STARTED, {"action": action.name, "roomId": message.room_id, "messageId": message.id})
                try:
                    result = await action.handler(rt, message, state, {"previousResults": list(results)}, callback, responses)
                except Exception as exc:
                    _log.exception("%s: action %s failed", rt.character.name, action.name)
                    result = ActionResult(success=False, error=exc.__class__.__name__)
                if not isinstance(result, ActionResult):
                    result = ActionResult(success=result is not False)
                if not result.success:
                    _log.warning("%s: action %s did not succeed: %s", rt.character.name, action.name, result.error)
                results.append(result)
                outcomes.append((action.name, result.success))
                await rt.emit(EventType.ACTION_COMPLETED, {"action": action.name, "roomId": message.room_id,
                                                           "messageId": message.id, "success": result.success})
        return outcomes

    async def evaluate(
        self, message: Memory, state: State, *, did_respond: bool, callback: HandlerCallback | None,
        responses: Sequence[Memory],
    ) -> None:
        """Run the evaluators that apply, concurrently; failures are logged."""
        rt = self.runtime

        async def applies(evaluator: Any) -> bool:
            if not (did_respond or evaluator.always_run):
                return False
            if evaluator.validate is None:
                return True
            try:
                return bool(await evaluator.validate(rt, message, state))
            except Exception:
                _log.exception("%s: evaluator %s validate failed", rt.character.name, evaluator.name)
                return False

        chosen = [e for e in rt.evaluators.values() if await applies(e)]

        async def run(evaluator: Any) -> None:
            await rt.emit(EventType.EVALUATOR_STARTED, {"evaluatorName": evaluator.name, "messageId": message.id})
            error = None
            try:
                await evaluator.handler(rt, message, state, {}, callback, responses)
            except Exception as exc:
                error = exc.__class__.__name__
                _log.exception("%s: evaluator %s failed", rt.character.name, evaluator.name)
            await rt.emit(EventType.EVALUATOR_COMPLETED, {"evaluatorName": evaluator.name, "messageId": message.id,
                                                          "error": error})

        await asyncio.gather(*(run(e) for e in chosen))

    def _names(self) -> list[str]:
        character = self.runtime.character
        names = [character.name, character.username or ""]
        aliases = character.settings.get("aliases")
        if isinstance(aliases, list):
            names += [a for a in aliases if isinstance(a, str)]
        return [n for n in names if n]


def _settle_actions(plan: dict[str, Any]) -> list[str]:
    """IGNORE only makes sense alone: with text, drop it; without, keep only it."""
    actions = [a for a in plan.get("actions") or [] if a]
    text = str(plan.get("text") or "").strip()
    if not actions:
        return ["REPLY"] if text else ["IGNORE"]
    if len(actions) > 1 and any(a.upper() == "IGNORE" for a in actions):
        if not text:
            return ["IGNORE"]
        actions = [a for a in actions if a.upper() != "IGNORE"] or ["REPLY"]
    return actions
