"""The roster: each daemon's latest entry, its heartbeat age, removal and pruning of the gone."""

from __future__ import annotations

import asyncio

from bot.store import CharacterFile, DaemonEntry, StoreBackend

ADA = CharacterFile("Ada", "/srv/troupe/characters/ada.json", "f" * 64, "running")


def entry(daemon_id: str, **characters: CharacterFile) -> DaemonEntry:
    return DaemonEntry(daemon_id, "host-a", 4242, "1.2.3", 1_700_000_000_000, characters)


async def test_a_published_entry_is_read_back_whole_and_replaced_by_the_next(backend: StoreBackend) -> None:
    await backend.roster.publish(entry("d1", a=ADA))
    await backend.roster.publish(entry("d2"))
    records = await backend.roster.records()
    assert [r.entry for r in records] == [entry("d1", a=ADA), entry("d2")]
    assert all(0 <= r.seen_s < 5 for r in records)
    waiting = CharacterFile("Ada", ADA.file, "e" * 64)
    await backend.roster.publish(entry("d1", a=waiting))
    assert [r.entry for r in await backend.roster.records()] == [entry("d1", a=waiting), entry("d2")]


async def test_publishing_again_is_the_heartbeat(backend: StoreBackend) -> None:
    await backend.roster.publish(entry("d1"))
    await asyncio.sleep(0.3)
    (before,) = await backend.roster.records()
    assert before.seen_s >= 0.25
    await backend.roster.publish(entry("d1"))
    (after,) = await backend.roster.records()
    assert after.seen_s < before.seen_s


async def test_a_removed_daemon_is_gone_and_pruning_forgets_only_those_not_seen_lately(backend: StoreBackend) -> None:
    await backend.roster.publish(entry("old"))
    await asyncio.sleep(0.3)
    await backend.roster.publish(entry("new"))
    await backend.roster.publish(entry("leaving"))
    assert await backend.roster.remove("leaving") is True
    assert await backend.roster.remove("leaving") is False
    assert await backend.roster.prune(0.2) == 1
    assert [r.entry.id for r in await backend.roster.records()] == ["new"]
