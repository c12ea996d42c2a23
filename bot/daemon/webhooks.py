"""The webhook port: where platforms push what happens to the characters (Telegram, with
``TELEGRAM_WEBHOOK_URL``), behind the operator's reverse proxy.

The daemon asks each platform module of each character for its routes (``webhooks(settings,
host)``, :mod:`bot.runtime.webhooks`), for the characters it serves and those it does not: a
reverse proxy may hand a request to any daemon of the troupe. ``TROUPE_WEBHOOK_HOST`` and
``TROUPE_WEBHOOK_PORT`` are bound only while some character has a route; a reload brings the
routes up to date. A path no route answers is 404, any method but POST 405.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping, Sequence

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from bot.config import plugins as plugin_registry
from bot.config.character import LoadResult
from bot.config.settings import DaemonSettings, SettingsView
from bot.daemon.control._limits import LimitedSite, cannot_listen, handler_options, track_busy
from bot.kernel.errors import ConfigError
from bot.runtime.webhooks import WebhookHost, WebhookRequest, WebhookRoute

__all__ = ["WebhookServer", "webhook_routes"]

_log = logging.getLogger(__name__)

_WHERE = "webhook port"
_SHUTDOWN_TIMEOUT_S = 5.0
#: Telegram alone opens up to 40 connections per bot; a troupe has several bots.
_MAX_CONNECTIONS = 512
#: A Telegram update is a few kilobytes; anything much larger is not one.
_MAX_BODY = 1024 * 1024


def webhook_routes(
    characters: Sequence[LoadResult], environ: Mapping[str, str], host: WebhookHost
) -> dict[str, WebhookRoute]:
    """Every route the characters' platforms ask for, by path. A character whose settings
    cannot work has none (its platform's check says why, at start); a path two characters
    claim goes to the first, and the second is logged.
    """
    routes: dict[str, WebhookRoute] = {}
    known = plugin_registry.available()
    for result in characters:
        if not result.ok or result.character is None:
            continue
        settings = SettingsView(result.character, environ, result.model_preset)
        for platform in result.platforms:
            meta = known.get(platform)
            if meta is None or meta.interactive:
                continue
            module = importlib.import_module(f"platforms.{meta.name}")
            make = getattr(module, "webhooks", None)
            if make is None:
                continue
            try:
                made = make(settings, host)
            except ConfigError:
                continue  # its platform's check reports it, and it does not run there
            for route in made:
                taken = routes.get(route.path)
                if taken is not None:
                    _log.error(
                        "%s: its webhook path %s is %s's already; give each character a URL of its own",
                        route.agent,
                        route.path,
                        taken.agent,
                    )
                    continue
                routes[route.path] = route
    return routes


class WebhookServer:
    """Serves the routes on ``TROUPE_WEBHOOK_HOST:TROUPE_WEBHOOK_PORT`` while there are any.

    :meth:`update` raises :class:`~bot.kernel.errors.ConfigError` when the port cannot be bound.
    :meth:`close` may be called more than once.
    """

    def __init__(self, settings: DaemonSettings) -> None:
        self.host = settings.webhook_host
        self.port: int | None = None
        self._wanted_port = settings.webhook_port
        self._routes: dict[str, WebhookRoute] = {}
        self._runner: web.AppRunner | None = None

    async def update(self, routes: Mapping[str, WebhookRoute]) -> None:
        """Answer ``routes`` from now on: listening when the first one comes, not when none is left."""
        self._routes = dict(routes)
        if self._routes and self._runner is None:
            await self._start()
        elif not self._routes and self._runner is not None:
            await self.close()

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        self.port = None
        if runner is not None:
            await runner.cleanup()

    async def _start(self) -> None:
        busy: set[RequestHandler] = set()
        app = web.Application(middlewares=[track_busy(busy)], client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{path:.*}", self._answer)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT_S, **handler_options(_WHERE))
        await runner.setup()
        site = LimitedSite(runner, _WHERE, busy, address=(self.host, self._wanted_port), limit=_MAX_CONNECTIONS)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise cannot_listen(exc, "webhooks", self.host, self._wanted_port, "TROUPE_WEBHOOK") from None
        self._runner = runner
        ports = [address[1] for address in runner.addresses if isinstance(address, tuple)]
        self.port = ports[0] if ports else None
        _log.info("webhooks listening on http://%s:%s (%s)", self.host, self.port, ", ".join(sorted(self._routes)))

    async def _answer(self, request: web.Request) -> web.Response:
        route = self._routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="no webhook here")
        if request.method != "POST":
            return web.Response(status=405, text="POST only", headers={"Allow": "POST"})
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text="too large for an update")
        answer = await route.handle(WebhookRequest(request.headers, body))
        return web.Response(status=answer.status, text=answer.text)
