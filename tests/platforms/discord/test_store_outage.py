"""Discord messages heard while the store cannot write (a full disk) are held, then stored and
handled once it writes again: nothing lost, nothing answered twice, each room's last message
answered (a backlog is answered as any burst is: by its newest message; one that names the
character is always answered)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.kernel.types import Handling
from bot.store import StoreState
from platforms.discord._mapping import discord_id

from ...store_faults import DISK_FULL, StoreFault
from .scene import until


async def handled(rt: Any, ids: list[int]) -> None:
    """Wait until each of the messages ``ids`` is stored and its handling finished."""

    async def done(native: int) -> bool:
        memory_id = discord_id(rt.agent_id, native)
        claim = await rt.store.get_message_handling(memory_id)
        return claim is not None and claim.status is Handling.DONE and await rt.store.get_memory(memory_id) is not None

    async with asyncio.timeout(15):
        while not all([await done(native) for native in ids]):
            await asyncio.sleep(0.02)


async def test_messages_heard_while_the_disk_is_full_are_handled_once_it_writes_again(
    scene, monkeypatch, caplog
) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    fault = StoreFault(monkeypatch, DISK_FULL)
    caplog.set_level(logging.INFO)
    dms: dict[str, list[int]] = {"Sam": [], "Cleo": []}
    mentions: list[int] = []

    fault.failing = True
    for n in range(3):
        for name, user in (("Sam", s.sam), ("Cleo", s.cleo)):
            dms[name].append((await s.fake.dm(user, s.ada, f"message {n} from {name}")).id)
        mentions.append((await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} and {n}?")).id)
    await until(lambda: fault.refused >= 3, timeout=10)
    assert rt.store.health.state is StoreState.DISK_FULL
    assert s.ada.sent == []

    fault.failing = False
    await handled(rt, [*dms["Sam"], *dms["Cleo"], *mentions])
    answered = [m.reference.id for m in s.ada.sent if m.reference is not None]
    assert len(answered) == len(set(answered))  # none twice
    assert dms["Sam"][-1] in answered and dms["Cleo"][-1] in answered  # each DM's last
    assert set(mentions) <= set(answered)  # each named her: all answered
    assert rt.store.health.writable
    told = [r for r in caplog.records if r.levelno >= logging.WARNING or "written again" in r.getMessage()]
    assert [(r.levelname, r.name) for r in told] == [("ERROR", "bot.store"), ("INFO", "bot.store")]
