"""The daemon's control and health endpoints, and the client ``troupe status``/``reload`` use.

::

    server = ControlServer(view, settings)      # view: the daemon, as a DaemonView
    await server.start()                        # Unix socket always; TCP when health_port is set
    ...
    await server.close()

    status, body = await call(settings.control_path, "GET", "/status")

Routes::

    GET  /healthz   200 {"status": "ok", "state": ...}         the loop answered
    GET  /readyz    200 {"ready": true} | 503 {"ready": false, "reasons": [...]}
    GET  /metrics   200 Prometheus text format 0.0.4
    GET  /status    200 the daemon's status (see format_status)
    POST /reload    200 the reload's summary | 409 one is already running | 500 {"error": ...}

The Unix socket is created mode 0600: its file mode is the protection, so it needs no token and
serves everything. The TCP listener (the health port) binds loopback unless
``TROUPE_HEALTH_TOKEN`` is set, and is guarded so that neither another local user nor a web page
open in a browser on this machine can change anything or read more than the daemon's state:

- With a token, every request must carry ``Authorization: Bearer <token>`` (else 401).
- Without one, only reading is allowed: ``POST /reload`` is refused (403), and ``/status``
  answers no more than ``/healthz`` does. ``/readyz`` and ``/metrics`` answer in full (agent
  names, platform states, counters): a local probe and Prometheus need them.
- Whatever the token, a request sent by a web page of another origin is refused (403): one with
  an ``Origin`` that is not the endpoint's own, with ``Sec-Fetch-Site`` other than
  ``same-origin``/``none``, or, on a loopback bind, with a ``Host`` that is not a loopback
  address (a DNS-rebinding page names its own host).
"""

from __future__ import annotations

from bot.daemon.control._answers import (
    AgentStatus,
    DaemonStatus,
    FileProblem,
    PlatformStatus,
    ReloadSummary,
    StoreStatus,
    ToolServerStatus,
    ToolsStatus,
    TroupeCharacter,
    TroupeDaemon,
    TroupeStatus,
)
from bot.daemon.control._client import DaemonNotAnswering, DaemonNotRunning, call
from bot.daemon.control._output import format_reload, format_status, format_troupe
from bot.daemon.control._server import ControlServer, DaemonView

__all__ = [
    "AgentStatus",
    "ControlServer",
    "DaemonNotAnswering",
    "DaemonNotRunning",
    "DaemonStatus",
    "DaemonView",
    "FileProblem",
    "PlatformStatus",
    "ReloadSummary",
    "StoreStatus",
    "ToolServerStatus",
    "ToolsStatus",
    "TroupeCharacter",
    "TroupeDaemon",
    "TroupeStatus",
    "call",
    "format_reload",
    "format_status",
    "format_troupe",
]
