"""The four room-state actions share one mechanism: set the agent's own state in the room.

The state lives on the agent's participant row for the room, so it survives restarts.
Unlike upstream, no extra YES/NO model call confirms the choice: the large model already
chose the action, and ``validate`` only offers it where it makes sense.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.sdk import Action, ActionContext, ActionResult, Memory, RoomState, State

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["room_state_action"]


async def current_state(runtime: AgentRuntime, message: Memory) -> RoomState | None:
    return await runtime.store.get_participant_state(message.room_id, runtime.agent_id)


async def set_state(runtime: AgentRuntime, room_id: str, state: RoomState | None) -> None:
    store = runtime.store
    if not await store.set_participant_state(room_id, runtime.agent_id, state):
        # The adapter normally adds the agent to every room it hears from; be safe anyway.
        await store.add_participant(runtime.agent_id, room_id)
        await store.set_participant_state(room_id, runtime.agent_id, state)


def room_state_action(
    name: str,
    *,
    new_state: RoomState | None,
    offered_when: set[RoomState | None],
    done: str,
    description: str,
    similes: tuple[str, ...],
    keywords: tuple[str, ...] = (),
) -> Action:
    """An action that moves the agent's state in the room to ``new_state``.

    It is offered only when the current state is in ``offered_when`` (and, with ``keywords``,
    only when the message contains one of them as a word).
    """
    pattern = re.compile(rf"\b({'|'.join(map(re.escape, keywords))})", re.IGNORECASE) if keywords else None

    async def validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
        if pattern is not None and not pattern.search(message.content.text or ""):
            return False
        return await current_state(runtime, message) in offered_when

    async def handler(context: ActionContext) -> ActionResult:
        runtime, message = context.runtime, context.message
        # A small model names actions it was not offered (it saw them in examples): a room muted
        # or followed that nobody asked for would stay so, so the handler checks again.
        if not await validate(runtime, message, context.state):
            return ActionResult(success=False, error=f"{name} was not asked for in this message")
        try:
            await set_state(runtime, message.room_id, new_state)
        except Exception as exc:
            return ActionResult(success=False, error=f"{name} failed: {exc.__class__.__name__}")
        room = await runtime.store.get_room(message.room_id)
        room_name = (room.name if room else None) or message.room_id
        return ActionResult(
            text=f"{done}: {room_name}",
            values={"roomState": new_state.value if new_state else None, "roomId": message.room_id},
            data={"actionName": name},
        )

    return Action(name=name, handler=handler, validate=validate, description=description, similes=similes)
