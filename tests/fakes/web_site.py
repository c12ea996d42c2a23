"""A fake web site on 127.0.0.1 for the link reader: pages, redirects, slow and huge answers.

::

    async with FakeWebSite({"/otters": page("<title>Otters</title>…"), "/go": redirect("/otters")}) as site:
        url = site.url("/otters")
        ...
        site.requests  # [(path, headers), …] in the order they came
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from ._local import LocalServer

__all__ = ["FakeWebSite", "Handler", "page", "redirect"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def page(html: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=html, content_type="text/html")

    return handler


def redirect(location: str) -> Handler:
    """A 302 to ``location`` that also sets a cookie (which a careful client never sends back)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(location, headers={"Set-Cookie": "session=abc; Path=/"})

    return handler


class FakeWebSite(LocalServer):
    def __init__(self, routes: Mapping[str, Handler]) -> None:
        super().__init__()
        self.routes = dict(routes)
        self.requests: list[tuple[str, dict[str, str]]] = []

    def _make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._serve)
        return app

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.headers)))
        self._changed()
        handler = self.routes.get(request.path)
        if handler is None:
            raise web.HTTPNotFound()
        return await handler(request)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]
