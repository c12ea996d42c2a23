"""What ``troupe status`` and ``troupe reload`` print: the daemon's JSON answers, for people."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from ..lifecycle import AgentState
from ..links import LinkState

__all__ = ["format_reload", "format_status"]


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


def format_status(status: dict[str, Any]) -> str:
    """``troupe status`` output: a summary line, then agent / platform / state / detail columns.

    ``status`` is what ``GET /status`` returns::

        {"state": "running", "pid": 4242, "uptime_s": 93.5, "version": "0.1.0",
         "agents": [{"name": "Ada", "id": "...", "state": "running", "in_flight": 0,
                     "platforms": {"discord": {"state": "connected", "detail": ""}}}]}

    An agent that is not running shows its state next to its name; one without platforms
    (failed, say) gets a single row with ``-`` for the platform.
    """
    agents = status.get("agents") or []
    rows: list[list[str]] = []
    up = total = in_flight = 0
    for agent in agents:
        name, state = str(agent.get("name", "?")), str(agent.get("state", "?"))
        in_flight += int(agent.get("in_flight") or 0)
        platforms: dict[str, Any] = agent.get("platforms") or {}
        if not platforms:
            rows.append([name, "-", state, _one_line(agent.get("detail", ""))])
            continue
        label = name if state == AgentState.RUNNING else f"{name} ({state})"
        for platform, connection in platforms.items():
            total += 1
            up += connection.get("state") == LinkState.CONNECTED
            rows.append([label, platform, str(connection.get("state", "?")), _one_line(connection.get("detail", ""))])
    summary = [_plural(len(agents), "agent"), f"{up} of {_plural(total, 'platform connection')} up"]
    if in_flight:
        summary.append(f"{_plural(in_flight, 'message')} in flight")
    header = (
        f"troupe {status.get('state', '?')} (pid {status.get('pid', '?')}, "
        f"up {_duration(float(status.get('uptime_s') or 0))}): {', '.join(summary)}"
    )
    return "\n".join([header, *_columns(rows)])


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
