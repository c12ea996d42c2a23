"""The contract's fixtures: each test runs once per backend, through the protocols only.

A backend is a ``StoreBackend`` opened empty (``make_backend`` gives unopened ones on the same
data, to test lifecycle and persistence); ``store`` and ``store_b`` are two seeded agents
(see ``seed_agent``). A second backend (PostgreSQL) adds its name to ``BACKENDS`` and a branch
to ``_open``, and must pass every test here unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.store import Store, StoreBackend, backend_for

from ..conftest import BR, BU, R2, A, B, R, U, V, W, seed_agent

BACKENDS = ["sqlite", "postgres"]

# The contract modules the PostgreSQL backend passes so far (it is being built group by group);
# the others run on SQLite alone until their group of tables is in.
POSTGRES_READY: set[str] = {
    "test_agents",
    "test_backend",
    "test_entities",
    "test_handling",
    "test_keyword_search",
    "test_knowledge",
    "test_leases",
    "test_memories",
    "test_plugin_tables",
    "test_records",
    "test_retention",
    "test_roster",
    "test_rooms",
    "test_traces",
    "test_units_of_work",
    "test_vector_search",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_kind" in metafunc.fixturenames:
        module = metafunc.module.__name__.rsplit(".", 1)[-1]
        metafunc.parametrize("backend_kind", BACKENDS if module in POSTGRES_READY else ["sqlite"])


@pytest.fixture
def make_backend(backend_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], StoreBackend]:
    """A new, unopened backend on this test's storage: call it again to "restart" on the same data."""
    if backend_kind == "sqlite":
        location = str(tmp_path / "data" / "troupe.db")
    elif backend_kind == "postgres":
        location = request.getfixturevalue("postgres_url")  # a database of this test's own
    else:
        raise AssertionError(f"unknown store backend {backend_kind!r}")
    return lambda: backend_for(location)


@pytest.fixture
async def backend(make_backend: Callable[[], StoreBackend]) -> AsyncIterator[StoreBackend]:
    async with make_backend() as opened:
        yield opened


@pytest.fixture
async def store(backend: StoreBackend) -> Store:
    """Agent A with users U and V in rooms R and R2 of world W."""
    return await seed_agent(backend, A, users=(U, V), rooms=(R, R2), world=W)


@pytest.fixture
async def store_b(backend: StoreBackend) -> Store:
    """Agent B with its own view of user U and room R."""
    return await seed_agent(backend, B, users=(BU,), rooms=(BR,))
