"""The console's Characters page over real loopback HTTP, against a view whose agents are real
LoadResults of files in a temp folder and whose reload is the daemon's own plan (read the files
again, restart what changed): the list, the editor without secrets, a save checked by the loader,
written atomically, audited and reloaded, problems at their field and line, a file changed on
disk meanwhile, and forged forms."""

from __future__ import annotations

import html
import json
import logging
import os
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config.character import load_characters
from bot.daemon.console import ConsoleServer, _character_file
from bot.daemon.console._character_secrets import PLACEHOLDER
from bot.daemon.console._json_lines import line_of, path_lines
from bot.daemon.hosted import HostedAgent, fingerprint
from bot.daemon.reloading import plan_reload, read_characters
from bot.kernel.errors import ReloadError
from bot.kernel.lifecycle import AgentState

from .test_console import HEALTH_TOKEN, TOKEN, FakeDaemon, audit, http, log_in, settings

__all__ = ["http"]  # the fixture, imported to be used here

ADA_TOKEN = "7101:ada-telegram-secret-0123456789"
OPENAI_KEY = "sk-characters-page-secret-0123456789"
ELEVEN_KEY = "eleven-secret-in-settings-0123456789"
SECRETS = (ADA_TOKEN, OPENAI_KEY, ELEVEN_KEY, TOKEN, HEALTH_TOKEN)


class CharacterView(FakeDaemon):
    """A ConsoleView whose agents come from the character files in ``folder``, and whose reload
    applies the daemon's plan to them (a restarted agent is a new HostedAgent)."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.reloads = 0
        self.agents: dict[str, Any] = {}
        for result in load_characters(sorted(folder.glob("*.json")), environ=dict(os.environ)):
            self.agents[result.raise_for_problems().agent_id] = self._hosted(result)

    @staticmethod
    def _hosted(result: Any) -> HostedAgent:
        return HostedAgent(result, fingerprint(result), state=AgentState.RUNNING)

    async def reload(self) -> dict[str, Any]:
        self.reloads += 1
        results, _ = read_characters([str(self.folder)])
        plan = plan_reload(self.agents, results)
        for agent in plan.stopping:
            self.agents.pop(agent.character.agent_id)
        for agent, result in plan.unchanged:
            agent.result = result
        for result in plan.starting:
            self.agents[result.raise_for_problems().agent_id] = self._hosted(result)
        return dict(plan.summary)


def _ada(**extra: Any) -> dict[str, Any]:
    return {
        "name": "Ada",
        "bio": ["Ada is a test character."],
        "system": "You are Ada.",
        "settings": {
            "secrets": {"TELEGRAM_BOT_TOKEN": ADA_TOKEN, "OPENAI_API_KEY": "env:ADA_OPENAI_KEY"},
            "ELEVENLABS_API_KEY": ELEVEN_KEY,
            "TELEGRAM_POLL_TIMEOUT_S": "1",
        },
        **extra,
    }


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    monkeypatch.setenv("ADA_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.delenv("DISCORD_API_TOKEN", raising=False)
    (tmp_path / ".env").write_text(f"ELEVENLABS_XI_API_KEY={ELEVEN_KEY}\n")
    chars = tmp_path / "characters"
    chars.mkdir()
    (chars / "ada.json").write_text(json.dumps(_ada()))
    (chars / "ada.json").chmod(0o640)
    (chars / "brann.json").write_text(json.dumps({"name": "Brann", "bio": "Brann is gruff."}, indent=2) + "\n")
    return chars


@pytest.fixture
async def view(folder: Path) -> CharacterView:
    return CharacterView(folder)


@pytest.fixture
async def console(view: CharacterView, tmp_path: Path) -> AsyncIterator[ConsoleServer]:
    server = ConsoleServer(view, settings(tmp_path, console_token=TOKEN))
    await server.start()
    yield server
    await server.close()


def _id(view: CharacterView, name: str) -> str:
    return next(agent_id for agent_id, agent in view.agents.items() if agent.name == name)


def _textarea(page: str) -> str:
    found = re.search(r"<textarea[^>]*>(.*?)</textarea>", page, re.S)
    assert found is not None, page
    return html.unescape(found.group(1)).removeprefix("\n")  # as a browser reads it


def _field(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found is not None, page
    return found.group(1)


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret got out: {secret[:6]}…"


async def _open(http: aiohttp.ClientSession, console: ConsoleServer, agent_id: str) -> tuple[str, dict[str, str]]:
    """The editor's page, and its form's fields."""
    async with http.get(f"{console.url}characters/{agent_id}") as response:
        assert response.status == 200
        page = await response.text()
    return page, {"csrf": _field(page, "csrf"), "version": _field(page, "version"), "text": _textarea(page)}


async def _save(
    http: aiohttp.ClientSession, console: ConsoleServer, agent_id: str, form: dict[str, str], *, multipart: bool = False
) -> tuple[int, str]:
    """Post the editor's form: form-encoded, or as multipart (as the page's form is sent)."""
    data = aiohttp.FormData(form, default_to_multipart=True) if multipart else form
    async with http.post(f"{console.url}characters/{agent_id}", data=data) as response:
        return response.status, await response.text()


async def _edit(
    http: aiohttp.ClientSession, console: ConsoleServer, view: CharacterView, name: str
) -> tuple[str, dict[str, str], bytes]:
    """Log in and open ``name`` in the editor: its agent id, the form, and the file's bytes."""
    await log_in(http, console)
    agent_id = _id(view, name)
    _, form = await _open(http, console, agent_id)
    return agent_id, form, (view.folder / f"{name.lower()}.json").read_bytes()


async def test_the_list_and_the_editor_show_each_secret_as_set_or_not_and_where_from_never_its_value(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    await log_in(http, console)
    async with http.get(f"{console.url}characters") as response:
        listing = await response.text()
    assert 'href="/characters"' in listing  # in the nav
    _no_secret(listing)
    for name, file in (("Ada", "ada.json"), ("Brann", "brann.json")):
        assert f'href="/characters/{_id(view, name)}">{name}</a>' in listing
        assert str(folder / file) in listing

    page, form = await _open(http, console, _id(view, "Ada"))
    _no_secret(page)
    shown = json.loads(form["text"])
    assert shown["settings"]["secrets"] == {"TELEGRAM_BOT_TOKEN": PLACEHOLDER, "OPENAI_API_KEY": "env:ADA_OPENAI_KEY"}
    assert shown["settings"]["ELEVENLABS_API_KEY"] == PLACEHOLDER
    assert shown["settings"]["TELEGRAM_POLL_TIMEOUT_S"] == "1" and shown["bio"] == ["Ada is a test character."]
    rows = dict(re.findall(r'<tr data-secret="(\w+)">(.*?)</tr>', page, re.S))
    assert set(rows) == {
        "DISCORD_API_TOKEN",
        "ELEVENLABS_API_KEY",
        "ELEVENLABS_XI_API_KEY",
        "OPENAI_API_KEY",
        "TELEGRAM_BOT_TOKEN",
    }
    assert "set</span>" in rows["ELEVENLABS_XI_API_KEY"] and "<td>.env</td>" in rows["ELEVENLABS_XI_API_KEY"]
    assert "set</span>" in rows["TELEGRAM_BOT_TOKEN"] and "in the file (settings.secrets)" in rows["TELEGRAM_BOT_TOKEN"]
    assert "settings.secrets: env:ADA_OPENAI_KEY, from the daemon&#39;s environment" in rows["OPENAI_API_KEY"]
    assert "in the file (settings)" in rows["ELEVENLABS_API_KEY"]
    assert "not set" in rows["DISCORD_API_TOKEN"]

    # A file without secrets is shown exactly as it is written.
    _, brann = await _open(http, console, _id(view, "Brann"))
    assert brann["text"] == (folder / "brann.json").read_text()


async def test_a_save_is_written_atomically_with_its_secrets_audited_and_restarts_that_character_alone(
    console: ConsoleServer,
    http: aiohttp.ClientSession,
    view: CharacterView,
    folder: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await log_in(http, console)
    ada_id = _id(view, "Ada")
    brann = view.agents[_id(view, "Brann")]
    _, form = await _open(http, console, ada_id)
    form["text"] = form["text"].replace("Ada is a test character.", "Ada collects antique clocks.")
    form["text"] = form["text"].replace("\n", "\r\n")  # as a browser sends a textarea

    status, page = await _save(http, console, ada_id, form, multipart=True)
    assert status == 200, page
    assert "Saved Ada." in page and "Restarted: Ada" in page and "Unchanged: Brann" in page
    _no_secret(page)

    # On disk: the edit, and the secrets put back where their placeholders were left.
    written = json.loads((folder / "ada.json").read_text())
    assert written["bio"] == ["Ada collects antique clocks."]
    assert written["settings"]["secrets"]["TELEGRAM_BOT_TOKEN"] == ADA_TOKEN
    assert written["settings"]["ELEVENLABS_API_KEY"] == ELEVEN_KEY
    assert stat.S_IMODE((folder / "ada.json").stat().st_mode) == 0o640  # the file's own mode
    assert sorted(p.name for p in folder.iterdir()) == ["ada.json", "brann.json"]  # no file left beside it

    # The reload restarted Ada alone, with the edit; Brann is the same agent as before.
    assert view.reloads == 1
    assert view.agents[ada_id].character.bio == ["Ada collects antique clocks."]
    assert view.agents[ada_id].character.secret("TELEGRAM_BOT_TOKEN").get_secret_value() == ADA_TOKEN
    assert view.agents[_id(view, "Brann")] is brann

    # The page shows the file as it is now, with a version that saves again.
    assert json.loads(_textarea(page))["bio"] == ["Ada collects antique clocks."]
    entries = audit(tmp_path)
    assert entries[-1]["what"] == "character saved" and entries[-1]["detail"] == "Ada"
    _no_secret((tmp_path / "data" / "console-audit.log").read_text())
    _no_secret(caplog.text)
    assert any("console: Ada saved" in r.getMessage() for r in caplog.records)


async def test_a_value_typed_over_a_placeholder_replaces_the_secret_and_a_moved_one_is_refused(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    csrf = await log_in(http, console)
    ada_id = _id(view, "Ada")
    _, form = await _open(http, console, ada_id)
    data = json.loads(form["text"])

    # A placeholder under a key the file does not have cannot be written as it is.
    data["settings"]["secrets"]["DISCORD_API_TOKEN"] = PLACEHOLDER
    before = (folder / "ada.json").read_bytes()
    status, page = await _save(http, console, ada_id, {**form, "text": json.dumps(data, indent=2)})
    assert status == 422
    assert "$.settings.secrets.DISCORD_API_TOKEN" in page and "this placeholder stands for a secret" in page
    assert (folder / "ada.json").read_bytes() == before and view.reloads == 0

    # A reference typed over the token's placeholder replaces it; the other secret is kept.
    del data["settings"]["secrets"]["DISCORD_API_TOKEN"]
    data["settings"]["secrets"]["TELEGRAM_BOT_TOKEN"] = "env:ADA_OPENAI_KEY"
    status, page = await _save(http, console, ada_id, {**form, "csrf": csrf, "text": json.dumps(data, indent=2)})
    assert status == 200, page
    written = json.loads((folder / "ada.json").read_text())
    assert written["settings"]["secrets"]["TELEGRAM_BOT_TOKEN"] == "env:ADA_OPENAI_KEY"
    assert written["settings"]["ELEVENLABS_API_KEY"] == ELEVEN_KEY
    assert ADA_TOKEN not in (folder / "ada.json").read_text()


async def test_problems_are_shown_at_their_field_and_line_with_the_text_kept_and_nothing_written(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    brann_id, form, before = await _edit(http, console, view, "Brann")

    # Fields the schema refuses: each problem with its path, its line and that line's text.
    typed = '{\n  "name": "Brann",\n  "bio": 42,\n  "style": {"chatt": ["short"]}\n}\n'
    status, page = await _save(http, console, brann_id, {**form, "text": typed})
    assert status == 422
    assert "Not saved: 2 problems." in page
    problems = re.findall(r'<li><code class="path">([^<]+)</code> <span class="where">line (\d+)</span>', page)
    assert problems == [("$.bio", "3"), ("$.style.chatt", "4")]
    assert "must be a list of sentences (strings), not a number" in page
    assert "did you mean &#39;chat&#39;?" in page
    assert '<span class="lineno">3</span>   &#34;bio&#34;: 42,' in page
    assert _textarea(page) == typed  # nothing lost
    assert _field(page, "version") == form["version"]

    # JSON that does not parse: the line and column, with a caret under where it stops.
    typed = '{\n  "name": "Brann",\n  "bio": ["gruff"],\n}\n'
    status, page = await _save(http, console, brann_id, {**form, "text": typed})
    assert status == 422
    # Where the reader stops differs by Python: 3.13 points at the comma, earlier ones after it.
    with pytest.raises(json.JSONDecodeError) as stopped:
        json.loads(typed)
    where = f"line {stopped.value.lineno}, column {stopped.value.colno}"
    assert where in ("line 4, column 1", "line 3, column 19")
    assert f'<span class="where">{where}</span>' in page
    assert f"invalid JSON at {where}" in page and "trailing comma" in page
    assert _textarea(page) == typed

    # A name another character has: the reload would refuse it, so the save does.
    status, page = await _save(http, console, brann_id, {**form, "text": json.dumps({"name": "ada", "bio": "x"})})
    assert status == 422 and "$.name" in page and "already has a character named &#39;Ada&#39;" in page

    assert (folder / "brann.json").read_bytes() == before
    assert view.reloads == 0


async def test_a_file_changed_on_disk_since_the_page_opened_is_not_overwritten(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    brann_id, form, _ = await _edit(http, console, view, "Brann")
    by_hand = json.dumps({"name": "Brann", "bio": "Brann was edited by hand."})
    (folder / "brann.json").write_text(by_hand)

    typed = form["text"].replace("Brann is gruff.", "Brann is kind.")
    status, page = await _save(http, console, brann_id, {**form, "text": typed})
    assert status == 409
    assert "The file changed on disk since this page opened it" in page
    assert _textarea(page) == typed  # kept, to copy
    assert (folder / "brann.json").read_text() == by_hand
    assert view.reloads == 0

    # Opened again, it shows the file as it is now, and saves.
    _, form = await _open(http, console, brann_id)
    assert json.loads(form["text"])["bio"] == "Brann was edited by hand."
    status, page = await _save(http, console, brann_id, {**form, "text": typed.replace("gruff", "kind")})
    assert status == 200 and "Saved Brann." in page


async def test_a_forged_save_is_refused_and_changes_nothing(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    ada_id, form, before = await _edit(http, console, view, "Ada")
    forged = form["text"].replace("Ada is a test character.", "Ada was forged.")
    for csrf in ("", "not-this-sessions-token"):
        status, page = await _save(http, console, ada_id, {**form, "csrf": csrf, "text": forged})
        assert status == 403 and "stale or forged" in page
    del form["csrf"]
    status, page = await _save(http, console, ada_id, {**form, "text": forged})
    assert status == 403 and "stale or forged" in page
    assert (folder / "ada.json").read_bytes() == before and view.reloads == 0


async def test_an_unknown_character_is_404_and_a_page_needs_a_login(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView
) -> None:
    async with http.get(f"{console.url}characters/{_id(view, 'Ada')}", allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == "/login"
    await log_in(http, console)
    async with http.get(f"{console.url}characters/no-such-agent") as response:
        assert response.status == 404 and "open /characters" in await response.text()


async def test_a_file_broken_on_disk_is_shown_without_its_secrets_and_can_be_mended(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    # A hand edit gone wrong: the file no longer parses; Ada runs as it was loaded.
    broken = json.dumps(_ada(), indent=2).replace('"system": "You are Ada.",', '"system": "You are Ada."')
    (folder / "ada.json").write_text(broken)
    ada_id, form, _ = await _edit(http, console, view, "Ada")
    assert form["text"] == broken.replace(json.dumps(ADA_TOKEN), json.dumps(PLACEHOLDER, ensure_ascii=False)).replace(
        json.dumps(ELEVEN_KEY), json.dumps(PLACEHOLDER, ensure_ascii=False)
    )
    page, _ = await _open(http, console, ada_id)
    _no_secret(page)

    # Mended in the editor: the secrets the running character has are put back.
    mended = form["text"].replace('"system": "You are Ada."', '"system": "You are Ada.",')
    status, page = await _save(http, console, ada_id, {**form, "text": mended})
    assert status == 200, page
    written = json.loads((folder / "ada.json").read_text())
    assert written["settings"]["secrets"]["TELEGRAM_BOT_TOKEN"] == ADA_TOKEN
    assert written["settings"]["ELEVENLABS_API_KEY"] == ELEVEN_KEY
    _no_secret(page)


def test_each_json_path_is_placed_at_the_line_its_value_starts_on() -> None:
    text = (
        '{\n  "name": "A \\"quoted\\" name",\n  "bio": [\n    "one",\n    "two, with: marks {}"\n  ],\n'
        '  "messageExamples": [[{"name": "x", "content": {"text": "hi"}}],\n    []],\n'
        '  "style": {"all": []}, "style": {\n    "chat": ["short"]}\n}\n'
    )
    lines = path_lines(text)
    assert lines["$.name"] == 2 and lines["$.bio"] == 3 and lines["$.bio[0]"] == 4 and lines["$.bio[1]"] == 5
    assert lines["$.messageExamples[0][0].content.text"] == 7 and lines["$.messageExamples[1]"] == 8
    assert lines["$.style"] == 9 and lines["$.style.chat"] == 10  # the last of a key given twice, as parsed
    assert line_of("$.bio[1]", lines) == 5
    assert line_of("$.messageExamples[0][0].content.actions", lines) == 7  # missing: its object's line
    assert line_of("$.name", {}) is None and line_of("$", lines) is None
    assert path_lines('{"a": [1,') == {"$": 1, "$.a": 1, "$.a[0]": 1}  # a broken text: as far as it goes


async def test_a_save_the_daemon_cannot_reload_now_says_so(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def busy() -> dict[str, Any]:
        raise ReloadError("a reload is already running")

    monkeypatch.setattr(view, "reload", busy)
    brann_id, form, _ = await _edit(http, console, view, "Brann")
    status, page = await _save(http, console, brann_id, {**form, "text": form["text"].replace("gruff", "kind")})
    assert status == 200
    assert "Saved Brann." in page
    assert "The daemon did not reload: a reload is already running; run <code>troupe reload</code>" in page
    assert json.loads((view.folder / "brann.json").read_text())["bio"] == "Brann is kind."


async def test_a_file_too_large_to_save_from_a_page_is_shown_to_read_only(
    console: ConsoleServer, http: aiohttp.ClientSession, view: CharacterView, folder: Path
) -> None:
    huge = {"name": "Brann", "bio": ["Brann is gruff."], "lore": ["a long tale " * 100] * 900}
    (folder / "brann.json").write_text(json.dumps(huge))
    await log_in(http, console)
    async with http.get(f"{console.url}characters/{_id(view, 'Brann')}") as response:
        page = await response.text()
    assert "KiB, more than the console saves from one page (1000 KiB)" in page and 'role="alert"' in page
    assert re.search(r"<textarea[^>]* readonly>", page)
    assert "Save and restart this character" not in page
    assert json.loads(_textarea(page)) == huge


async def test_a_folder_the_daemon_cannot_write_is_said_before_and_at_a_save(
    console: ConsoleServer,
    http: aiohttp.ClientSession,
    view: CharacterView,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    brann_id, form, before = await _edit(http, console, view, "Brann")

    # The rename fails (a read-only file system, a folder of another owner): said, nothing written.
    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", refuse)
        status, page = await _save(http, console, brann_id, {**form, "text": form["text"].replace("gruff", "kind")})
        assert status == 409
        assert f"cannot write {folder / 'brann.json'}: Permission denied; nothing was written." in page
        assert _textarea(page) == form["text"].replace("gruff", "kind")
        assert (folder / "brann.json").read_bytes() == before and view.reloads == 0
        assert sorted(p.name for p in folder.iterdir()) == ["ada.json", "brann.json"]

    # Known before: the editor is shown to read, and says what to do instead.
    monkeypatch.setattr(_character_file, "_writable", lambda folder: False)
    async with http.get(f"{console.url}characters/{brann_id}") as response:
        page = await response.text()
    assert f"this daemon cannot write to {folder}" in page and "then run troupe reload" in page
    assert re.search(r"<textarea[^>]* readonly>", page) and "Save and restart this character" not in page
