"""Each backend implements Store and StoreBackend exactly, and the package exports what it says."""

from __future__ import annotations

import inspect
from typing import Generic, Protocol

import pytest

import bot.store
from bot.store import AgentStore, Database, Store, StoreBackend
from bot.store.postgres import PostgresDatabase
from bot.store.postgres._store import PgAgentStore

#: Each backend's classes: (the StoreBackend, the Store its for_agent returns).
IMPLEMENTATIONS = {"sqlite": (Database, AgentStore), "postgres": (PostgresDatabase, PgAgentStore)}


def _as_protocols(db: Database) -> StoreBackend:
    """Never called: mypy checks here that the SQLite classes satisfy both protocols."""
    store: Store = db.for_agent("a")
    assert store.agent_id == "a"
    return db


def _members(protocol: type) -> list[str]:
    """Every member the protocol declares, its roles' included (Store is made of role protocols)."""
    roles = [c for c in protocol.__mro__ if c not in (object, Protocol, Generic)]
    return sorted(
        {
            name
            for role in roles
            for name, member in vars(role).items()
            if (not name.startswith("_") or name in ("__aenter__", "__aexit__"))
            and (inspect.isfunction(member) or isinstance(member, property))
        }
    )


def _check(protocol: type, implementation: type) -> None:
    for name in _members(protocol):
        declared = getattr(protocol, name)
        implemented = getattr(implementation, name, None)
        assert implemented is not None, f"{implementation.__name__} has no {name}"
        if isinstance(declared, property):
            assert isinstance(implemented, property), name
            continue
        assert inspect.iscoroutinefunction(implemented) == inspect.iscoroutinefunction(declared), (
            f"{name}: async or not as the protocol says"
        )
        if name not in ("__aenter__", "__aexit__"):
            # Parameters exactly as declared; a return type may be narrower (for_agent -> AgentStore).
            assert inspect.signature(implemented).parameters == inspect.signature(declared).parameters, name
            if protocol is Store:
                assert inspect.signature(implemented) == inspect.signature(declared), name
            assert implemented.__doc__, f"{implementation.__name__}.{name} has no docstring"


@pytest.mark.parametrize("backend_name", IMPLEMENTATIONS)
def test_every_store_member_has_the_same_signature_and_a_docstring(backend_name: str) -> None:
    assert len(_members(Store)) > 80
    _check(Store, IMPLEMENTATIONS[backend_name][1])


@pytest.mark.parametrize("backend_name", IMPLEMENTATIONS)
def test_every_backend_member_has_the_same_signature_and_a_docstring(backend_name: str) -> None:
    _check(StoreBackend, IMPLEMENTATIONS[backend_name][0])


def test_the_backend_and_its_stores_are_instances_of_the_protocols(backend: StoreBackend) -> None:
    assert isinstance(backend, StoreBackend)
    assert isinstance(backend.for_agent("a"), Store)


def test_store_signatures_use_no_any_outside_json_payloads() -> None:
    allowed = {"changes", "content", "metadata", "body", "value"}  # JSON payload dicts
    for name in _members(Store):
        member = getattr(Store, name)
        if isinstance(member, property):
            continue
        for param in inspect.signature(member).parameters.values():
            if "Any" in str(param.annotation):
                assert param.name in allowed, f"{name}({param.name}) is typed with Any"
        assert "Any" not in str(inspect.signature(member).return_annotation) or name == "get_cache", name


def test_package_exports_are_sorted_and_public_names_report_the_package() -> None:
    assert bot.store.__all__ == sorted(bot.store.__all__)
    for name in bot.store.__all__:
        assert hasattr(bot.store, name)
    assert Database.__module__ == AgentStore.__module__ == StoreBackend.__module__ == "bot.store"
