"""A Discord message the daemon stored but never answered before it died is answered once after
the restart, as a reply to it; a message that was answered is not answered again."""

from __future__ import annotations

import asyncio
from collections import Counter

from .scene import Scene, plan, until


def answered(s: Scene) -> Counter[int]:
    return Counter(m.reference.id for m in s.ada.sent if m.reference is not None)


async def _die(s: Scene) -> None:
    """Stop the daemon as a crash would: no draining, nothing finished or recorded after this point."""
    assert s.task is not None
    s.task.cancel()
    await asyncio.gather(s.task, return_exceptions=True)


async def test_a_message_left_unanswered_by_a_crash_is_answered_once_after_the_restart(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    done = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} first question")
    await until(lambda: answered(s)[done.id] == 1)
    assert s.openai is not None
    s.openai.latency = 30.0  # the next answer is still being written when the process dies
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} are you still there?")
    await until(lambda: any("are you still there?" in str(r.json) for r in s.openai.requests_for("chat")))
    await _die(s)
    assert answered(s)[asked.id] == 0

    s.openai.latency = 0.0
    s.brain.plans["Ada"].append(plan("Yes, back now."))
    await s.start(with_brann=False)
    await until(lambda: answered(s)[asked.id] == 1, timeout=60)
    await asyncio.sleep(0.3)  # room for a second answer that must not come
    assert answered(s) == Counter({done.id: 1, asked.id: 1})
    assert s.ada.sent[-1].content == "Yes, back now."
