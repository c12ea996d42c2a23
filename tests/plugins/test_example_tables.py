"""The example plugin with a table of its own (docs/examples/notes): loaded from a character's
plugin list, its table made by the store, written by its action and read by its provider, on
SQLite and on PostgreSQL. Copy this to test a plugin of yours that keeps rows."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import plugins as plugin_registry
from bot.config.character import load_character
from bot.daemon.platform_plans import preflight
from bot.kernel.errors import PluginLoadError
from bot.kernel.messages import Status
from bot.kernel.tables import Column, ColumnType, Table
from bot.kernel.types import ChannelType
from bot.store import StoreBackend, backend_for

from .core.harness import harnesses, plan
from .examples import installed

__all__ = ["installed"]


@pytest.fixture(params=["sqlite", "postgres"])
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreBackend]:
    location = str(tmp_path / "t.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    async with backend_for(location) as opened:
        yield opened


@pytest.fixture
async def harness(db: StoreBackend, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with harnesses(db, tmp_path) as make:
        yield make


async def test_the_notes_plugin_keeps_a_note_and_shows_it_later(installed: None, harness, db: StoreBackend) -> None:
    h = await harness(ChannelType.DM, plugins=["notes"])
    assert "notes" in h.rt.loaded_plugins and "TAKE_NOTE" in h.rt.actions

    h.large.append(plan("", "TAKE_NOTE"))
    outcome = await h.say("note: the gate code is 4711")
    assert outcome.status is Status.ACTED and outcome.actions == ("TAKE_NOTE",)
    assert h.sent[-1]["text"] == "Noted: the gate code is 4711"

    # The row is the character's own, in the table the store made for the plugin.
    notes_module = sys.modules["plugins.notes"]
    rows = await h.rt.table(notes_module.NOTES).select()
    assert [(r["text"], r["room_id"]) for r in rows] == [("the gate code is 4711", h.room)]
    other = db.for_agent("another-agent").plugin_table("notes", notes_module.NOTES)
    assert await other.count() == 0
    with pytest.raises(LookupError, match="no plugin of Ada declares the table 'notes'"):
        h.rt.table(dataclasses.replace(notes_module.NOTES))  # an equal Table, not the one declared

    h.large.append(plan("It is 4711.", "REPLY"))
    assert (await h.say("what was the gate code?")).status is Status.REPLIED
    assert "# Notes taken in this room (newest first)\n- the gate code is 4711" in h.prompts[-1]
    assert "TAKE_NOTE" not in h.prompts[-1]  # not offered: nobody asked for a note


async def test_a_plugin_whose_table_cannot_be_made_fails_to_load_naming_it(
    monkeypatch: pytest.MonkeyPatch, installed: None, harness
) -> None:
    broken = Table("notes", columns=(Column("id", ColumnType.TEXT),))  # no primary key
    known = dict(plugin_registry.available())
    known["notes"] = dataclasses.replace(known["notes"], tables=(broken,))
    monkeypatch.setattr(plugin_registry, "available", lambda: known)
    with pytest.raises(PluginLoadError, match="plugin notes for Ada failed to load: .*'notes' has no primary key"):
        await harness(ChannelType.DM, plugins=["notes"])


def test_troupe_check_names_a_table_declaration_that_cannot_be_made(
    monkeypatch: pytest.MonkeyPatch, installed: None, tmp_path: Path
) -> None:
    path = tmp_path / "ada.json"
    body = {"name": "Ada", "bio": "x", "plugins": ["notes"], "settings": {"OPENAI_API_KEY": "sk-test-1234567"}}
    path.write_text(json.dumps(body))
    assert not preflight(load_character(path, environ={}), {}).problems
    known = dict(plugin_registry.available())
    broken = Table("notes", columns=(Column("id", ColumnType.TEXT, primary_key=True), Column("ID", ColumnType.TEXT)))
    known["notes"] = dataclasses.replace(known["notes"], tables=(broken,))
    monkeypatch.setattr(plugin_registry, "available", lambda: known)
    (problem,) = preflight(load_character(path, environ={}), {}).problems
    assert problem.startswith("plugin notes declares tables troupe cannot make: table 'notes': the column name 'ID'")
