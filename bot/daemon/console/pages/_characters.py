"""What the Memory and Knowledge pages share: choosing a character, finding its running agent,
and showing times and sizes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from bot.daemon.console._context import console_of
from bot.runtime.agent import AgentRuntime

__all__ = ["CharacterChoice", "agent_of", "choices", "problem", "size", "when"]


@dataclass(frozen=True)
class CharacterChoice:
    """A character in the picker: its agent's id, its name, whether it runs."""

    id: str
    name: str
    state: str
    running: bool


def choices(request: web.Request) -> list[CharacterChoice]:
    """The daemon's characters, in start order."""
    return [
        CharacterChoice(agent_id, hosted.name, str(hosted.state), hosted.runtime is not None)
        for agent_id, hosted in console_of(request).view.agents.items()
    ]


def agent_of(request: web.Request, page: str) -> tuple[CharacterChoice, AgentRuntime]:
    """The character the path's ``{agent}`` names and its runtime.

    Raises:
        web.HTTPException: a page saying the character is unknown (404) or not running (409),
            with the characters to choose from.
    """
    console = console_of(request)
    agent_id = request.match_info["agent"]
    hosted = console.view.agents.get(agent_id)
    if hosted is None:
        message = "No character of this daemon has that id; choose one below."
        status = 404
    elif hosted.runtime is None:
        message = (
            f"{hosted.name} is not running ({hosted.state}): its {page.lower()} can be shown once it runs. "
            "The Troupe page says why it stopped."
        )
        status = 409
    else:
        choice = CharacterChoice(agent_id, hosted.name, str(hosted.state), True)
        return choice, hosted.runtime
    raise problem(request, page, message, status)


def problem(request: web.Request, page: str, message: str, status: int) -> web.HTTPException:
    """An error page of ``page`` (404 or 409) saying ``message``, with the characters to choose from."""
    response = console_of(request).render(
        request,
        "character_missing.html",
        {"page": page, "message": message, "characters": choices(request), "base": request.path.split("/")[1]},
        status=status,
    )
    error = web.HTTPNotFound if status == 404 else web.HTTPConflict
    return error(text=response.text, content_type="text/html")


def when(ms: int | None) -> str:
    """A time stored in ms, as the page shows it (UTC, to the minute)."""
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def size(count: int | None) -> str:
    """A size in bytes, as people read it."""
    if count is None:
        return "—"
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"
