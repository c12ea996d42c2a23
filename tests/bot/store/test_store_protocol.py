"""AgentStore implements the Store protocol exactly, and the package exports what it says."""

from __future__ import annotations

import inspect

import bot.store
from bot.store import AgentStore, Database, Store


def _protocol_methods() -> list[str]:
    return sorted(
        name
        for name, member in vars(Store).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    )


def test_agent_store_is_a_store() -> None:
    assert isinstance(Database(":memory:").for_agent("a"), Store)


def test_every_store_method_has_the_same_signature_and_a_docstring_on_agent_store() -> None:
    methods = _protocol_methods()
    assert len(methods) > 60
    for name in methods:
        declared = getattr(Store, name)
        implemented = getattr(AgentStore, name)
        if isinstance(declared, property):
            assert isinstance(implemented, property), name
            continue
        assert inspect.iscoroutinefunction(implemented), f"{name} is not async"
        assert inspect.signature(implemented) == inspect.signature(declared), name
        assert implemented.__doc__, f"AgentStore.{name} has no docstring"


def test_store_signatures_use_no_any_outside_json_payloads() -> None:
    allowed = {"changes", "content", "metadata", "body", "value"}  # JSON payload dicts
    for name in _protocol_methods():
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
    assert Database.__module__ == AgentStore.__module__ == "bot.store"
