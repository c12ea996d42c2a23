"""The example third-party plugin (docs/examples/dice) loads from a character's plugin list and
answers a message through the pipeline: its action, provider and event handler together."""

from __future__ import annotations

import re

from bot.kernel.messages import Status
from bot.kernel.types import ChannelType

from .core.harness import harness, plan
from .examples import installed

__all__ = ["harness", "installed"]


async def test_the_dice_plugin_rolls_when_asked_and_remembers_the_rolls(installed: None, harness) -> None:
    h = await harness(ChannelType.DM, plugins=["dice"])
    assert "dice" in h.rt.loaded_plugins and "ROLL_DICE" in h.rt.actions and "DICE" in h.rt.providers

    h.large.append(plan("", "ROLL_DICE"))
    outcome = await h.say("roll 3d6 for my strength")
    assert outcome.status is Status.ACTED and outcome.actions == ("ROLL_DICE",)
    assert "ROLL_DICE" in h.prompts[-1]  # offered: the message asks for a roll
    rolled = re.fullmatch(r"🎲 3d6: ([1-6]) \+ ([1-6]) \+ ([1-6]) = (\d+)", h.sent[-1]["text"])
    assert rolled is not None
    faces = [int(face) for face in rolled.groups()[:3]]
    assert sum(faces) == int(rolled.group(4)) and h.sent[-1]["actions"] == ["ROLL_DICE"]

    h.large.append(plan("Good luck with it.", "REPLY"))
    assert (await h.say("thanks, that will do")).status is Status.REPLIED
    assert "ROLL_DICE" not in h.prompts[-1]  # not offered: nobody asked for a roll
    assert f"Dice rolled in this room so far: 1; the last roll: {h.sent[0]['text'][2:]}." in h.prompts[-1]


async def test_the_dice_plugin_refuses_a_roll_nobody_needs(installed: None, harness) -> None:
    h = await harness(ChannelType.DM, plugins=["dice"])
    h.large.append(plan("", "ROLL_DICE"))
    outcome = await h.say("roll 1000d6")
    assert h.sent[-1]["text"] == "I roll 1 to 20 dice of 2 to 1000 sides."
    assert outcome.status is Status.ACTED
    assert not h.rt.get_service("dice").rolled  # the handler of ActionCompleted saw it fail
