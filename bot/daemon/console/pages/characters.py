"""``/characters``, "Characters": the character files the daemon runs; view and edit one, save, and
that character alone restarts.

A save is checked by the loader's own code first (every problem shown at its field and line, the
text kept as typed), written atomically (a file beside it, then a rename, with the file's mode), audited,
and applied by the daemon's reload, which restarts only the files that changed. A file changed on
disk since the editor opened it is not overwritten. Secrets are never shown: see
:mod:`bot.daemon.console._character_secrets`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path

from aiohttp import web

from bot.daemon.console._audit import Change
from bot.daemon.console._character_file import (
    CannotSave,
    FileChanged,
    OpenedFile,
    SavedFile,
    ShownProblem,
    open_character,
    save_character,
)
from bot.daemon.console._character_secrets import PLACEHOLDER
from bot.daemon.console._context import NavItem, console_of, record_change, session_of
from bot.daemon.hosted import HostedAgent
from bot.kernel.errors import ReloadError

__all__ = ["NAV", "routes"]

_log = logging.getLogger("bot.daemon.console")

NAV = NavItem("Characters", "/characters")


def routes() -> list[web.RouteDef]:
    return [
        web.get("/characters", listing),
        web.get("/characters/{agent_id}", editor),
        web.post("/characters/{agent_id}", save),
    ]


def _agent(request: web.Request) -> HostedAgent:
    agent = console_of(request).view.agents.get(request.match_info["agent_id"])
    if agent is None:
        raise web.HTTPNotFound(
            text="No character with this id runs here (renamed, or removed by a reload): open /characters.",
        )
    return agent


def _key(request: web.Request) -> bytes:
    """What keys a file's version in the page: the session's own secret."""
    return session_of(request).csrf.encode()


async def listing(request: web.Request) -> web.StreamResponse:
    agents = [
        {"id": agent_id, "name": agent.name, "file": str(agent.result.source), "state": str(agent.state)}
        for agent_id, agent in console_of(request).view.agents.items()
    ]
    return console_of(request).render(request, "characters.html", {"agents": agents})


def _page(
    request: web.Request,
    agent_id: str,
    opened: OpenedFile,
    *,
    text: str | None = None,
    version: str | None = None,
    problems: list[ShownProblem] | None = None,
    warnings: list[ShownProblem] | None = None,
    refused: str = "",
    saved: Mapping[str, object] | None = None,
    status: int = 200,
) -> web.Response:
    return console_of(request).render(
        request,
        "character.html",
        {
            "agent_id": agent_id,
            "file": opened,
            "text": opened.text if text is None else text,
            "version": opened.version if version is None else version,
            "problems": problems or [],
            "warnings": warnings or [],
            "refused": refused,
            "saved": saved,
            "placeholder": PLACEHOLDER,
        },
        status=status,
    )


async def editor(request: web.Request) -> web.StreamResponse:
    agent = _agent(request)
    opened = await asyncio.to_thread(open_character, agent.result, _key(request))
    return _page(request, request.match_info["agent_id"], opened)


def _others(agents: Mapping[str, HostedAgent], agent_id: str) -> dict[str, tuple[str, Path]]:
    return {other: (a.name, a.result.source) for other, a in agents.items() if other != agent_id}


_CHANGED_ON_DISK = (
    "The file changed on disk since this page opened it (saved by someone else, or edited by hand), so it "
    "was not overwritten. Your text is kept below: copy what you changed, open the page again to see the "
    "file as it is now, and make your change there."
)


async def save(request: web.Request) -> web.StreamResponse:
    console = console_of(request)
    agent_id = request.match_info["agent_id"]
    agent = _agent(request)
    form = await request.post()
    typed, version = form.get("text"), form.get("version")
    if not isinstance(typed, str) or not isinstance(version, str):
        raise web.HTTPBadRequest(text="The form lacks the character's text or its version: reload the page.")
    key = _key(request)
    refused = ""
    try:
        outcome = await asyncio.to_thread(
            save_character, agent.result, typed, version, key, _others(console.view.agents, agent_id)
        )
    except FileChanged:
        outcome, refused = SavedFile(), _CHANGED_ON_DISK
    except CannotSave as exc:
        outcome, refused = SavedFile(), f"{exc}."
    if outcome.character is not None:
        return await _saved(request, agent, outcome)
    # Not saved: the text as typed, with the version it was opened at (a file changed on disk
    # meanwhile stays refused until the page is opened again).
    opened = await asyncio.to_thread(open_character, agent.result, key)
    return _page(
        request,
        agent_id,
        opened,
        text=typed,
        version=version,
        problems=outcome.problems,
        refused=refused,
        status=409 if refused else 422,
    )


async def _saved(request: web.Request, agent: HostedAgent, outcome: SavedFile) -> web.StreamResponse:
    """Audit the save, reload, and show the file as it is now with what the reload did."""
    console = console_of(request)
    assert outcome.character is not None
    name = outcome.character.name
    await record_change(request, Change.CHARACTER_SAVED, detail=name)
    _log.info("console: %s saved (%s); reloading", name, agent.result.source)
    try:
        summary: Mapping[str, object] = await console.view.reload()
        reload_error = ""
    except ReloadError as exc:
        summary, reload_error = {}, str(exc)
    # A new name may mean a new agent id: find the agent by its file.
    source = agent.result.source
    now = next(
        ((agent_id, a) for agent_id, a in console.view.agents.items() if a.result.source == source),
        (request.match_info["agent_id"], agent),
    )
    opened = await asyncio.to_thread(open_character, now[1].result, _key(request))
    return _page(
        request,
        now[0],
        opened,
        warnings=outcome.warnings,
        saved={"name": name, "summary": summary, "error": reload_error},
    )
