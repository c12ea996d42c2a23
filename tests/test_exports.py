"""Every public module says what it exports, in order, and exports only what exists."""

import importlib
import pkgutil

import pytest

import bot
import platforms
import plugins


def _modules() -> list[str]:
    names = []
    for package in (bot, platforms, plugins):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_public_module_has_sorted_complete_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported, key=str.lower) or list(exported) == sorted(exported), (
        f"{name}.__all__ is not sorted"
    )
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr}, which does not exist"
