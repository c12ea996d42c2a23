"""The example plugins of docs/examples/, installed for a test as a user installs them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import plugins as plugin_packages
from bot.config import plugins as plugin_registry

__all__ = ["EXAMPLES", "installed"]

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def _rescan() -> None:
    plugin_registry.available.cache_clear()
    plugin_registry._by_alias.cache_clear()


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """docs/examples/ as if its plugins had been copied into plugins/: all installing one takes."""
    monkeypatch.setattr(plugin_packages, "__path__", [*plugin_packages.__path__, str(EXAMPLES)])
    _rescan()
    yield
    for example in EXAMPLES.iterdir():
        sys.modules.pop(f"plugins.{example.name}", None)
    monkeypatch.undo()
    _rescan()
