"""What ``troupe status`` and ``troupe reload`` print: the daemon's JSON answers, for people."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from bot.kernel.lifecycle import AgentState
from bot.kernel.links import LinkState

__all__ = ["format_reload", "format_status", "format_troupe"]


def _duration(seconds: float) -> str:
    """``45s``, ``1m33s``, ``2h05m``, ``3d04h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _one_line(text: str) -> str:
    """Multi-line reasons (a CharacterError's "file:\n  path: problem" list) on one line."""
    out = ""
    for line in filter(None, (line.strip() for line in str(text).splitlines())):
        out = f"{out}{' ' if out.endswith(':') else '; ' if out else ''}{line}"
    return out


def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip() for row in rows]


#: Tool names ``troupe status`` lists before ``(+N more)``.
_TOOLS_LISTED = 2


def _tools_rows(label: str, tools: object) -> list[list[str]]:
    """A ``tools`` row for an agent with tools or tool servers: a few names, then each server
    that is not up and why (none for an agent without tools: its rows read as before)."""
    if not isinstance(tools, dict):
        return []
    names = [str(name) for name in tools.get("names") or []]
    servers: dict[str, Any] = tools.get("servers") or {}
    if not names and not servers:
        return []
    listed = ", ".join(names[:_TOOLS_LISTED]) if names else "none"
    if len(names) > _TOOLS_LISTED:
        listed += f" (+{len(names) - _TOOLS_LISTED} more)"
    states = [
        f"{server} up"
        if s.get("up")
        else f"{server} down" + (f" ({_one_line(s.get('detail', ''))})" if s.get("detail") else "")
        for server, s in servers.items()
    ]
    return [[label, "tools", listed, "servers: " + ", ".join(states) if states else ""]]


def format_status(status: dict[str, Any]) -> str:
    """``troupe status`` output: a summary line, then agent / platform / state / detail columns.

    ``status`` is what ``GET /status`` returns::

        {"state": "running", "pid": 4242, "uptime_s": 93.5, "version": "0.1.0",
         "agents": [{"name": "Ada", "id": "...", "state": "running", "in_flight": 0,
                     "platforms": {"discord": {"state": "connected", "detail": ""}}}]}

    An agent that is not running shows its state next to its name; one without platforms gets a
    single row with ``-`` for the platform: ``failed`` and why, or ``no platform`` and which
    platforms were skipped. A running agent with no connection up is counted apart in the
    summary: it answers nobody. An agent with tools gets a ``tools`` row: a few of their names,
    and whether each of its tool servers is up (and why not).
    """
    agents = status.get("agents") or []
    rows: list[list[str]] = []
    up = total = in_flight = idle = 0
    for agent in agents:
        name, state = str(agent.get("name", "?")), str(agent.get("state", "?"))
        in_flight += int(agent.get("in_flight") or 0)
        platforms: dict[str, Any] = agent.get("platforms") or {}
        connected = sum(c.get("state") == LinkState.CONNECTED for c in platforms.values())
        idle += state == AgentState.RUNNING and not connected
        if not platforms:
            running = state == AgentState.RUNNING
            why = (agent.get("skipped") or "its file names no platform") if running else agent.get("error")
            rows.append([name, "-", "no platform" if running else state, _one_line(why or "")])
            rows += _tools_rows(name, agent.get("tools"))
            continue
        label = name if state == AgentState.RUNNING else f"{name} ({state})"
        up, total = up + connected, total + len(platforms)
        for platform, connection in platforms.items():
            rows.append([label, platform, str(connection.get("state", "?")), _one_line(connection.get("detail", ""))])
        rows += _tools_rows(label, agent.get("tools"))
    agents_part = _plural(len(agents), "agent") + (f" ({idle} on no working platform)" if idle else "")
    summary = [agents_part, f"{up} of {_plural(total, 'platform connection')} up"]
    if in_flight:
        summary.append(f"{_plural(in_flight, 'message')} in flight")
    header = (
        f"troupe {status.get('state', '?')} (pid {status.get('pid', '?')}, "
        f"up {_duration(float(status.get('uptime_s') or 0))}): {', '.join(summary)}"
    )
    lines = [header, *_columns(rows)]
    store = status.get("store")
    if isinstance(store, dict) and store.get("state", "ok") != "ok":
        lines.insert(1, f"the database cannot write: {store.get('state')} ({_one_line(store.get('detail', ''))})")
    if isinstance(status.get("troupe"), dict):
        lines.append(format_troupe(status["troupe"]))
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else _duration(float(value))


def _started(started_at: int | None) -> str:
    if not started_at:
        return "?"
    return datetime.fromtimestamp(int(started_at) / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def format_troupe(troupe: dict[str, Any]) -> str:
    """The whole troupe (several daemons on one database): its daemons, then who serves which
    character, then the files that differ between daemons.

    ``troupe`` is the ``"troupe"`` part of ``GET /status`` (see :class:`~bot.daemon.control.TroupeStatus`)."""
    if troupe.get("error"):
        return f"the troupe: cannot read the shared database: {_one_line(troupe['error'])}"
    daemons: list[dict[str, Any]] = troupe.get("daemons") or []
    characters: list[dict[str, Any]] = troupe.get("characters") or []
    alive = sum(bool(d.get("alive")) for d in daemons)
    states = Counter("waiting for a daemon" if c.get("state") == "waiting" else str(c.get("state")) for c in characters)
    counts = ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda item: -item[1]))
    summary = [
        _plural(alive, "daemon") + " alive",
        _plural(len(characters), "character") + (f" ({counts})" if counts else ""),
    ]
    lines = [f"the troupe: {', '.join(summary)}"]
    rows = [["daemon", "host", "pid", "started", "heartbeat", "connections", "serves"]]
    for d in daemons:
        name = str(d.get("id", "?")) + (" (this one)" if d.get("this") else "")
        heartbeat = d.get("heartbeat_s")
        seen = "-" if heartbeat is None else f"{_duration(float(heartbeat))} ago"
        if not d.get("alive"):
            seen += ", gone"
        connections = d.get("connections")
        rows.append(
            [
                name,
                str(d.get("host", "?")),
                str(d.get("pid", "?")),
                _started(d.get("started_at")),
                seen,
                "-" if connections is None else str(connections),
                str(d.get("serves", 0)) + (f" (+{d['shards']} shards)" if d.get("shards") else ""),
            ]
        )
    lines += _columns(rows)
    rows = [["character", "served by", "epoch", "held for", "expires in", "state"]]
    for c in characters:
        state = str(c.get("state", "?"))
        if state == "waiting":
            state = "waiting for a daemon"
        if c.get("differs"):
            state += "; its file differs between daemons"
        if c.get("shards"):
            state += "; Discord shards " + ", ".join(f"{k}: {d or 'nobody'}" for k, d in c["shards"].items())
        epoch = c.get("epoch")
        rows.append(
            [
                str(c.get("name", "?")),
                str(c.get("daemon") or "-"),
                "-" if epoch is None else str(epoch),
                _seconds(c.get("held_s")),
                _seconds(c.get("expires_s")),
                state,
            ]
        )
    lines += _columns(rows)
    lines += [f"  warning: {w}" for w in troupe.get("warnings") or []]
    return "\n".join(lines)


def format_reload(summary: dict[str, Any]) -> str:
    """``troupe reload`` output: what changed on one line, then one line per problem.

    ``summary`` is what ``POST /reload`` returns::

        {"started": ["Cleo"], "stopped": ["Brann"], "restarted": ["Ada"], "unchanged": ["Iris"],
         "kept": [{"name": "Dora", "file": "/etc/troupe/characters/dora.json", "reason": "..."}],
         "failed": [{"name": "Eve", "reason": "..."}]}

    ``kept``: the file changed but no longer validates, so the agent runs on with the version it
    had. ``failed``: the agent could not be started.
    """
    parts = [
        f"{verb} {', '.join(map(str, summary[verb]))}"
        for verb in ("started", "stopped", "restarted")
        if summary.get(verb)
    ]
    unchanged = len(summary.get("unchanged") or [])
    if unchanged:
        parts.append(f"{unchanged} unchanged")
    lines = [f"reloaded: {'; '.join(parts) if parts else 'no characters'}"]
    for kept in summary.get("kept") or []:
        name, file = kept.get("name"), kept.get("file")
        what = PurePath(file).name if file else name or "a character file"
        who = f"{name} keeps running" if name else "the agent keeps running"
        lines.append(
            f"  {what} no longer validates ({_one_line(kept.get('reason', ''))}); {who} with the previous version"
        )
    for failed in summary.get("failed") or []:
        lines.append(
            f"  {failed.get('name') or failed.get('file') or '?'} failed to start: "
            f"{_one_line(failed.get('reason', ''))}"
        )
    return "\n".join(lines)
