"""``/setup``: what is missing when nothing is configured yet (the model key), written to ``.env``.

The daemon serves only the console then (see ``Daemon.setup_needs``). The page names each need
and the settings any one of which would do; what is given is written to the ``.env`` file in the
daemon's working directory (where it and pydantic-settings read it), merged with its other lines
and readable by its owner only, audited (the names, never the values), and the characters are
reloaded. A value is never shown again: a key's field is a password field, left empty.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from aiohttp import web

from bot.config.env_file import set_env_values
from bot.daemon.console._audit import Change
from bot.daemon.console._context import console_of, record_change
from bot.kernel.errors import ReloadError, ReloadFailed

__all__ = ["ENV_FILE", "routes"]

_log = logging.getLogger("bot.daemon.console")

#: Where the daemon reads settings from, besides its environment (relative to its working directory).
ENV_FILE = Path(".env")
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def routes() -> list[web.RouteDef]:
    return [web.get("/setup", page), web.post("/setup", save)]


def _fields(needs: tuple[tuple[str, ...], ...]) -> list[dict[str, object]]:
    return [{"name": name, "secret": any(word in name for word in _SECRET_WORDS)} for group in needs for name in group]


def _env_path() -> Path:
    return ENV_FILE.resolve()


def _render(request: web.Request, *, error: str = "", status: int = 200) -> web.Response:
    needs = console_of(request).view.setup_needs
    values = {"needs": needs, "fields": _fields(needs), "error": error, "env_file": _env_path()}
    return console_of(request).render(request, "setup.html", values, status=status)


async def page(request: web.Request) -> web.StreamResponse:
    if not console_of(request).view.setup_needs:
        raise web.HTTPSeeOther("/")
    return _render(request)


async def save(request: web.Request) -> web.StreamResponse:
    view = console_of(request).view
    needs = view.setup_needs
    if not needs:
        raise web.HTTPSeeOther("/")
    form = await request.post()
    asked = {name for group in needs for name in group}
    given = {name: value.strip() for name in asked if isinstance(value := form.get(name), str) and value.strip()}
    missing = [group for group in needs if not any(name in given for name in group)]
    if missing:
        wanted = "; ".join(" or ".join(group) for group in missing)
        return _render(request, error=f"Set {wanted}: nothing can run without it.", status=400)
    try:
        await asyncio.to_thread(set_env_values, ENV_FILE, given)
    except ValueError as exc:
        return _render(request, error=f"{exc}.", status=400)
    except OSError as exc:
        return _render(request, error=f"Could not write {_env_path()}: {exc.strerror or exc}.", status=500)
    names = ", ".join(sorted(given))
    await record_change(request, Change.SETUP_SAVED, detail=names)
    _log.info("console: %s written to %s; reloading the characters", names, _env_path())
    try:
        await view.reload()
    except (ReloadError, ReloadFailed) as exc:
        return _render(request, error=f"Saved, but the characters did not reload: {exc}", status=500)
    if view.setup_needs:
        return _render(request, error="Saved, but the characters still cannot run: see the log.", status=400)
    raise web.HTTPSeeOther("/chat")
