"""dice: roll dice when someone asks ("roll 2d6", "throw a d20").

An example of a third-party plugin written against troupe's plugin API (docs/plugins.md). Copy
this folder to ``plugins/dice/`` and list ``"dice"`` in a character's ``plugins``. It offers:

- the action ROLL_DICE, offered to the model only for a message that asks for a roll, which
  rolls with the runtime's randomness and answers in the message's room;
- the provider DICE, which tells the model how the dice went in this room so far;
- a handler of the typed event :class:`~bot.runtime.events.ActionCompleted`, which counts the rolls that
  went out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.sdk import (
    Action,
    ActionCompleted,
    ActionContext,
    ActionResult,
    Memory,
    PluginMeta,
    Provider,
    ProviderResult,
    Reply,
    ServiceKey,
    State,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["DICE", "Dice", "Roll", "meta", "parse_dice", "setup"]

meta = PluginMeta(name="dice", description="Rolls dice when someone asks (an example plugin).")

NAME = "ROLL_DICE"
_ASKS = re.compile(r"\b(roll|throw|dice|die|\d*d\d+)\b", re.IGNORECASE)
_DICE = re.compile(r"\b(\d*)d(\d+)\b", re.IGNORECASE)
_MOST_DICE = 20
_MOST_SIDES = 1000


@dataclass(frozen=True, slots=True)
class Roll:
    """One roll: ``count`` dice of ``sides`` sides, and what each showed."""

    count: int
    sides: int
    faces: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.faces)

    def __str__(self) -> str:
        shown = " + ".join(map(str, self.faces))
        return (
            f"{self.count}d{self.sides}: {shown} = {self.total}" if self.count > 1 else f"d{self.sides}: {self.total}"
        )


@dataclass(slots=True)
class Dice:
    """What the plugin knows per runtime: the last roll in each room, and how many went out."""

    last: dict[str, Roll] = field(default_factory=dict)
    rolled: Counter[str] = field(default_factory=Counter)


#: The plugin's state, as a typed service other plugins may read.
DICE: ServiceKey[Dice] = ServiceKey("dice")


def parse_dice(text: str) -> tuple[int, int]:
    """The dice ``text`` asks for (``"2d6"`` → ``(2, 6)``); one six-sided die when it names none.

    Raises:
        ValueError: more dice or sides than anyone needs (a model or a person asking for 10⁹).
    """
    found = _DICE.search(text)
    count, sides = (int(found.group(1) or 1), int(found.group(2))) if found else (1, 6)
    if not (1 <= count <= _MOST_DICE and 2 <= sides <= _MOST_SIDES):
        raise ValueError(f"I roll 1 to {_MOST_DICE} dice of 2 to {_MOST_SIDES} sides.")
    return count, sides


async def _asks_for_a_roll(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    return bool(_ASKS.search(message.content.text or ""))


async def _roll(context: ActionContext) -> ActionResult:
    message = context.message
    dice = context.runtime.get_service(DICE)
    asked = message.content.text or ""
    try:
        count, sides = parse_dice(asked)
    except ValueError as exc:
        await context.reply(Reply(text=str(exc), actions=(NAME,), in_reply_to=message.id))
        return ActionResult(success=False, error=str(exc))
    roll = Roll(count, sides, tuple(context.runtime.rng.randint(1, sides) for _ in range(count)))
    sent = await context.reply(Reply(text=f"🎲 {roll}", actions=(NAME,), in_reply_to=message.id))
    if not sent:
        return ActionResult(success=False, error="send failed: the platform took none of the roll")
    if dice is not None:
        dice.last[message.room_id] = roll
    return ActionResult(text=str(roll), values={"diceTotal": roll.total}, data={"actionName": NAME})


async def _provide(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    dice = runtime.get_service(DICE)
    if dice is None or not dice.rolled[message.room_id]:
        return ProviderResult()
    rolled, last = dice.rolled[message.room_id], dice.last.get(message.room_id)
    text = f"# Dice\nDice rolled in this room so far: {rolled}" + (f"; the last roll: {last}." if last else ".")
    return ProviderResult(text=text, values={"diceRolled": rolled})


async def setup(runtime: AgentRuntime) -> None:
    """Register the action, the provider, the event handler and the service with ``runtime``."""
    dice = Dice()
    runtime.register_service(DICE, dice)
    runtime.register_action(
        Action(
            name=NAME,
            handler=_roll,
            validate=_asks_for_a_roll,
            description='Roll dice the person asks for ("2d6", "a d20"); the result is sent as the reply.',
            similes=("ROLL", "THROW_DICE"),
        )
    )
    runtime.register_provider(Provider(name="DICE", get=_provide, description="How the dice went in this room."))

    async def count_rolls(event: ActionCompleted) -> None:
        if event.action == NAME and event.success:
            dice.rolled[event.room_id] += 1

    runtime.on(ActionCompleted, count_rolls)
