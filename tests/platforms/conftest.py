"""Fixtures the platforms' end-to-end tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The daemon's data directory (``TROUPE_DATA_DIR``) for a test: a fresh folder, not ``./data``."""
    path = tmp_path / "data"
    monkeypatch.setenv("TROUPE_DATA_DIR", str(path))
    return path
