"""Should the agent answer this message? The cheap, deterministic part of the decision.

Rules, in order:

1. The agent's own messages: never. Another bot: only while the room's run of consecutive bot
   messages (since a human last spoke) stays within the loop guard.
2. MUTED room: only when the agent is addressed (name, mention, reply) — so it can be unmuted
   or answer a direct question — otherwise stay silent. STOPPED room (the agent was asked to
   stay out: the small model or the troupe said STOP): silent, with no model asked, until it is
   addressed; being addressed invites it back (the pipeline clears the state) and the rules
   below apply.
3. DM, voice DM, self room, console: respond; so does being alone with the speaker (a voice
   channel with just the two of them). So do the room types and sources the character's
   ``SHOULD_RESPOND_BYPASS_TYPES`` / ``SHOULD_RESPOND_BYPASS_SOURCES`` add (``_bypass.py``), each
   its own rule. Mentioned, replied to, or named: respond.
4. FOLLOWED room: respond.
5. Otherwise: undecided — the small model decides (RESPOND / IGNORE / STOP).

Adapters describe each message in ``Memory.metadata``: ``author_is_bot`` (the sender is a bot),
``is_mention`` (this agent's bot was @-mentioned), ``is_reply`` (a reply to this agent's
message), ``one_to_one`` (the sender and the agent are alone together: a voice channel with no
one else in it). The gate never sees platform objects.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum

from bot.sdk import ChannelType, Memory, RoomState

__all__ = ["Decision", "Rule", "Verdict", "addressed_by_name", "bot_run_length", "decide"]

_ALWAYS_TYPES = frozenset({ChannelType.DM, ChannelType.VOICE_DM, ChannelType.SELF, ChannelType.API})


class Decision(Enum):
    RESPOND = "respond"
    IGNORE = "ignore"  # stay silent, but remember the message
    ASK_MODEL = "ask_model"


class Rule(StrEnum):
    """Which rule decided; the pipeline's outcome follows from it, never from the reason's text."""

    OWN = "own"
    LOOP_GUARD = "loop_guard"
    MUTED = "muted"
    MUTED_BUT_ADDRESSED = "muted_but_addressed"
    STOPPED = "stopped"
    ROOM_TYPE = "room_type"
    ONE_TO_ONE = "one_to_one"
    SOURCE = "source"
    BYPASS_TYPE = "bypass_type"
    """A room type the character's SHOULD_RESPOND_BYPASS_TYPES adds."""
    BYPASS_SOURCE = "bypass_source"
    """A platform the character's SHOULD_RESPOND_BYPASS_SOURCES adds."""
    MENTIONED = "mentioned"
    REPLY = "reply"
    NAMED = "named"
    FOLLOWED = "followed"
    UNDECIDED = "undecided"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    rule: Rule
    reason: str
    """The rule in words, for logs (``loop guard: 4 bot messages in a row``)."""
    addressed: bool = False
    """The agent was named, mentioned or replied to: a direct address is never dropped."""


def addressed_by_name(text: str, names: Iterable[str]) -> bool:
    """True if any of ``names`` appears in ``text`` as a whole word, in any case."""
    for name in names:
        name = name.strip()
        if name and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
            return True
    return False


def bot_run_length(recent: Sequence[Memory], agent_id: str) -> int:
    """How many of the newest messages in ``recent`` (newest first) came from bots, up to the
    last human one. The agent's own messages count as bot messages."""
    run = 0
    for memory in recent:
        if memory.entity_id == agent_id or memory.metadata.author_is_bot:
            run += 1
        else:
            break
    return run


def decide(
    message: Memory,
    *,
    agent_id: str,
    names: Iterable[str],
    room_type: ChannelType | str | None,
    room_state: RoomState | None,
    recent: Sequence[Memory] = (),
    max_bot_turns: int = 3,
    always_sources: Iterable[str] = ("console",),
    bypass_types: Collection[ChannelType] = (),
    bypass_sources: Collection[str] = (),
) -> Verdict:
    """Apply the deterministic rules to ``message``.

    ``recent`` is the room's latest messages, newest first, *including* ``message`` itself once
    stored; it is only read for the bot loop guard. ``bypass_types`` and ``bypass_sources``
    (lowercase) are the character's own additions to the rooms and sources always answered.
    """
    if message.entity_id == agent_id:
        return Verdict(Decision.IGNORE, Rule.OWN, "own message")

    meta = message.metadata
    text = message.content.text or ""
    addressed = bool(meta.is_mention or meta.is_reply) or addressed_by_name(text, names)

    if meta.author_is_bot:
        run = max(bot_run_length(recent, agent_id), 1)
        if run > max_bot_turns:
            return Verdict(Decision.IGNORE, Rule.LOOP_GUARD, f"loop guard: {run} bot messages in a row", addressed)

    if room_state is RoomState.MUTED:
        if addressed:
            return Verdict(Decision.RESPOND, Rule.MUTED_BUT_ADDRESSED, "muted, but addressed", True)
        return Verdict(Decision.IGNORE, Rule.MUTED, "muted", False)
    if room_state is RoomState.STOPPED and not addressed:
        return Verdict(Decision.IGNORE, Rule.STOPPED, "asked to stay out until named or invited back")

    source = message.content.source or ""
    if room_type is not None and str(room_type).upper() in _ALWAYS_TYPES:
        return Verdict(Decision.RESPOND, Rule.ROOM_TYPE, f"{str(room_type).upper()} room", addressed)
    if meta.one_to_one:
        return Verdict(Decision.RESPOND, Rule.ONE_TO_ONE, "alone with the speaker", True)
    if source in set(always_sources):
        return Verdict(Decision.RESPOND, Rule.SOURCE, f"{source} source", addressed)
    bypassed = _bypassed(room_type, source, bypass_types, bypass_sources)
    if bypassed is not None:
        rule, reason = bypassed
        return Verdict(Decision.RESPOND, rule, reason, addressed)
    if meta.is_mention:
        return Verdict(Decision.RESPOND, Rule.MENTIONED, "mentioned", True)
    if meta.is_reply:
        return Verdict(Decision.RESPOND, Rule.REPLY, "reply to the agent", True)
    if addressed:
        return Verdict(Decision.RESPOND, Rule.NAMED, "named", True)
    if room_state is RoomState.FOLLOWED:
        return Verdict(Decision.RESPOND, Rule.FOLLOWED, "following the room")
    return Verdict(Decision.ASK_MODEL, Rule.UNDECIDED, "undecided")


def _bypassed(
    room_type: ChannelType | str | None, source: str, types: Collection[ChannelType], sources: Collection[str]
) -> tuple[Rule, str] | None:
    """The bypass rule (and its reason) that answers a message in ``room_type`` from ``source``, if any."""
    if room_type is not None and str(room_type).upper() in {t.value for t in types}:
        return Rule.BYPASS_TYPE, f"{str(room_type).upper()} room (SHOULD_RESPOND_BYPASS_TYPES)"
    if source and source.lower() in sources:
        return Rule.BYPASS_SOURCE, f"{source} source (SHOULD_RESPOND_BYPASS_SOURCES)"
    return None
