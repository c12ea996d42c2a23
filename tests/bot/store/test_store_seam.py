"""The store is a seam: code outside bot/store knows the Store and StoreBackend protocols only.

No import of the SQLite classes, the package's private modules or a SQLite driver, and no
reaching through a store to the database behind it (``store.database``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_DRIVERS = {"sqlite3", "sqlean", "aiosqlite"}
_SQLITE_NAMES = {"Database", "AgentStore"}


def _outside_the_store() -> list[Path]:
    files = [p for top in ("bot", "platforms", "plugins") for p in (ROOT / top).rglob("*.py")]
    return [p for p in files if (ROOT / "bot" / "store") not in p.parents]


def _problems(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{where} imports {a.name}" for a in node.names if a.name.split(".")[0] in _DRIVERS]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in _DRIVERS or module.startswith(("bot.store._", "store._")):
                found.append(f"{where} imports from {module}")
            if module.endswith("store"):
                found += [f"{where} imports {a.name}" for a in node.names if a.name in _SQLITE_NAMES]
        elif isinstance(node, ast.Attribute) and node.attr == "database":
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name.endswith("store"):
                found.append(f"{where} reaches through a store to its database")
    return found


def test_nothing_outside_the_store_package_sees_sqlite() -> None:
    files = _outside_the_store()
    assert len(files) > 50
    assert [f"{f.parent.relative_to(ROOT)}/{p}" for f in files for p in _problems(f)] == []


def test_the_check_finds_each_kind_of_reach_through(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import aiosqlite\nfrom bot.store import Database\nfrom bot.store._database import X\n"
        "with rt.store.database.shared_reads():\n    pass\n"
    )
    assert _problems(probe) == [
        "probe.py:1 imports aiosqlite",
        "probe.py:2 imports Database",
        "probe.py:3 imports from bot.store._database",
        "probe.py:4 reaches through a store to its database",
    ]
