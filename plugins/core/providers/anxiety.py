"""ANXIETY: a nudge against being too eager, tuned to the kind of room.

Despite the upstream name it describes no mood: it is guidance on length and on when to stay
silent. Three lines are drawn from the pool for the room's type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import ChannelType, Memory, Provider, ProviderResult, State

from ._common import GROUP_TYPES, VOICE_TYPES, channel_type, find_room, fork_rng

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_LINES = 3

_GROUP = (
    "Several people talk here. If a message is not addressed to you and needs nothing from you, choose IGNORE.",
    "When unsure whether you are being spoken to, prefer IGNORE over guessing.",
    "Do not trade thanks, greetings or acknowledgements back and forth; let a finished exchange end.",
    "Never answer a message meant for someone else, and do not repeat what others already said.",
    "One short reply is better than several; say it once and leave room for others.",
)
_DM = (
    "This is a private conversation: engage naturally, but keep replies concise.",
    "Answer what was asked; skip preambles and summaries of what you are about to say.",
    "Match the other person's length and tone instead of writing more than they did.",
    "If the conversation has reached a natural end, it is fine to stop.",
)
_VOICE = (
    "This is spoken aloud: keep it very brief, one or two short sentences.",
    "No lists, links, markdown or emoji: they cannot be heard.",
    "Speak plainly, as in a real conversation; leave long explanations for text.",
    "If you were not addressed, stay quiet rather than talk over people.",
)
_OTHER = (
    "Be direct and to the point; do not pad your reply.",
    "Say what matters in as few words as it takes.",
    "Skip filler, disclaimers and restating the question.",
    "If nothing needs saying, choose IGNORE.",
)


def _pool(kind: ChannelType | None) -> tuple[str, ...]:
    if kind in VOICE_TYPES:
        return _VOICE
    if kind in GROUP_TYPES:
        return _GROUP
    if kind is ChannelType.DM:
        return _DM
    return _OTHER


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    rng = fork_rng(runtime)
    room = await find_room(runtime, message)
    kind = channel_type(room, message)
    lines = rng.sample(_pool(kind), _LINES)
    text = "# Keep It Short\nAs an AI you tend to say too much and answer too eagerly.\n" + "\n".join(lines)
    return ProviderResult(text=text, values={"anxiety": text}, data={"anxiety": lines})


provider = Provider(
    name="ANXIETY",
    get=_get,
    description="Guidance on reply length and when to stay silent, for the kind of room.",
)
