"""The troupe console: a web page served by the daemon itself, behind a login.

::

    console = ConsoleServer(view, settings)     # view: the daemon, as a ConsoleView
    await console.start()                       # TROUPE_CONSOLE_HOST:TROUPE_CONSOLE_PORT
    ...
    await console.close()

Every page needs a login: the token from ``TROUPE_CONSOLE_TOKEN``, else from
``<data_dir>/console-token`` (made 0600 at first start). A login sets a session cookie (HttpOnly,
SameSite=Strict, Secure over HTTPS) for a session kept in memory, over after 12 idle hours.
Every POST carries the session's CSRF token (form field ``csrf`` or header ``X-CSRF-Token``), and
the health port's Host and Origin checks apply. Logins, failed logins and logouts are appended to
``<data_dir>/console-audit.log``.

A page is a module in :mod:`bot.daemon.console.pages` with a ``routes()`` function and its
templates; ``_routes.py`` registers it and puts it in the nav.
"""

from __future__ import annotations

from bot.daemon.console._audit import AUDIT_FILE, Change
from bot.daemon.console._server import ConsoleServer
from bot.daemon.console._token import TOKEN_FILE
from bot.daemon.console._view import ConsoleView

__all__ = ["AUDIT_FILE", "Change", "ConsoleServer", "ConsoleView", "TOKEN_FILE"]
