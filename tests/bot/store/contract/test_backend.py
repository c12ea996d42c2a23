"""The StoreBackend lifecycle: open once, close any number of times, data outlives a restart."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.kernel.types import Memory, RoomState
from bot.store import StoreBackend

from ..conftest import A, R, U, make_memory, seed_agent


async def test_a_backend_is_open_only_between_open_and_close(make_backend: Callable[[], StoreBackend]) -> None:
    backend = make_backend()
    assert not backend.is_open and backend.path
    await backend.open()
    assert backend.is_open
    with pytest.raises(RuntimeError, match="it is open"):
        await backend.open()
    await backend.close()
    await backend.close()  # harmless
    assert not backend.is_open
    with pytest.raises(RuntimeError, match="it is closed"):
        await backend.open()


async def test_a_store_of_a_closed_backend_raises_runtime_error(make_backend: Callable[[], StoreBackend]) -> None:
    backend = make_backend()
    with pytest.raises(RuntimeError, match="not open yet: call open"):
        await backend.for_agent(A).get_agents()
    async with backend:
        store = await seed_agent(backend, A, users=(U,), rooms=(R,))
    with pytest.raises(RuntimeError, match="is closed"):
        await store.get_agent()


def test_for_agent_rejects_an_empty_agent_id(make_backend: Callable[[], StoreBackend]) -> None:
    with pytest.raises(ValueError, match="non-empty agent id"):
        make_backend().for_agent("")


async def test_what_was_written_outlives_closing_and_reopening(make_backend: Callable[[], StoreBackend]) -> None:
    async with make_backend() as backend:
        store = await seed_agent(backend, A, users=(U,), rooms=(R,))
        memory_id = await store.create_memory(make_memory("remember me"), "messages")
        await store.set_participant_state(R, A, RoomState.FOLLOWED)
        await store.ensure_embedding_dimension(768)
        store.queue_log({"n": 1}, entity_id=A, room_id=R, type="x")  # closing writes queued logs
    async with make_backend() as backend:
        store = backend.for_agent(A)
        found = await store.get_memory(memory_id)
        assert isinstance(found, Memory) and found.content.text == "remember me"
        assert await store.get_participant_state(R, A) is RoomState.FOLLOWED
        assert await store.get_embedding_dimension() == 768
        assert [e.body for e in await store.get_logs()] == [{"n": 1}]


async def test_checkpoint_after_a_forget_reports_whether_it_finished(backend: StoreBackend) -> None:
    store = await seed_agent(backend, A, users=(U,), rooms=(R,))
    await store.create_memory(make_memory("soon gone"), "messages")
    await store.forget_all()
    assert await backend.checkpoint() is True  # nobody else is reading
