"""CHARACTER: who the agent is — bio, mood, interests, style directions, examples.

Sampled afresh for every prompt, seeded from ``runtime.rng``. A FEED room (a
feed of posts, such as a Telegram channel) gets the post format: post examples and post directions
instead of chat ones. Threads, forum posts and topics are conversations and keep the chat format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.sdk import Memory, Provider, ProviderResult, State

from .._budget import Cut, Section
from .._character_text import character_context
from ._common import POST_TYPES, find_room, fork_rng

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_DATA_KEYS = ("bio", "adjective", "topic", "topics", "directions", "examples", "system")


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    rng = fork_rng(runtime)
    room = await find_room(runtime, message)
    is_post = room is not None and room.type in POST_TYPES
    context = character_context(runtime.character, rng=rng, is_post=is_post)
    data: dict[str, Any] = {key: context.values.get(key, "") for key in _DATA_KEYS}
    data.update(character=runtime.character.name, isPost=is_post)
    # Examples are what a prompt short of room gives up first, after old messages (_budget).
    examples = context.values.get("examples", "")
    data["sections"] = [Section.of(s, Cut.EXAMPLES if s == examples else Cut.NEVER) for s in context.sections]
    return ProviderResult(text=context.text, values=dict(context.values), data=data)


provider = Provider(
    name="CHARACTER",
    get=_get,
    description="The character's identity: bio, adjective, topics, style directions and example conversations.",
)
