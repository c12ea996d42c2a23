"""What a reload changes: the character files read again, compared with the agents that run.

:func:`plan_reload` only decides; the daemon then tells the unchanged agents, stops the stopping
ones and starts the starting ones (``Daemon.reload``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.config.character import LoadResult, load_characters, scan_character_files
from bot.config.settings import load_environ
from bot.daemon.control import ReloadSummary
from bot.daemon.hosted import HostedAgent, fingerprint
from bot.kernel.files import file_key
from bot.kernel.lifecycle import AgentState
from bot.kernel.logs import agent_context

__all__ = ["ReloadPlan", "plan_reload", "read_characters", "record_failures", "summary_line"]

# The daemon's reload: its log lines read as they did when this was part of bot/daemon/daemon.py.
_log = logging.getLogger("bot.daemon.daemon")


def read_characters(sources: Sequence[str]) -> tuple[list[LoadResult], dict[str, str]]:
    """The character files under ``sources``, loaded again, and the environment (reads files: run it
    in a thread)."""
    environ = load_environ()
    found = scan_character_files(sources)
    for entry, reason in found.skipped:
        _log.info("%s: skipped, %s", entry, reason)
    return load_characters(found.paths, environ=environ), environ


@dataclass
class ReloadPlan:
    """What a reload does, agent by agent."""

    summary: ReloadSummary
    stopping: list[HostedAgent] = field(default_factory=list)
    """Removed, or changed (their new selves are in ``starting``), or failed before."""
    starting: list[LoadResult] = field(default_factory=list)
    unchanged: list[tuple[HostedAgent, LoadResult]] = field(default_factory=list)
    """Each agent that stays as it is, with its file's new load (the file may have moved)."""


def plan_reload(agents: Mapping[str, HostedAgent], results: Sequence[LoadResult]) -> ReloadPlan:
    """Compare the agents (by id) with the files read again; logs each file that does not validate."""
    by_source = {file_key(a.result.source): a for a in agents.values()}
    plan = ReloadPlan({"started": [], "stopped": [], "restarted": [], "unchanged": [], "kept": [], "failed": []})
    summary = plan.summary
    kept: set[str] = set()
    for result in results:
        if result.ok:
            continue
        reason = "; ".join(str(p) for p in result.problems) or "it could not be read"
        old = by_source.get(file_key(result.source))
        if old is not None and old.state is not AgentState.STOPPED:
            kept.add(old.character.agent_id)
            summary["kept"].append({"name": old.name, "file": str(result.source), "reason": reason})
            with agent_context(old.name):
                _log.warning("%s no longer validates (%s); keeps running as it was", result.source, reason)
        else:
            summary["failed"].append({"name": result.source.stem, "file": str(result.source), "reason": reason})
            _log.error("%s does not validate (%s); not started", result.source, reason)

    wanted = {r.raise_for_problems().agent_id: r for r in results if r.ok}
    for agent_id, agent in agents.items():
        if agent_id in kept:
            continue
        new = wanted.get(agent_id)
        if new is None:
            plan.stopping.append(agent)
            summary["stopped"].append(agent.name)
        elif fingerprint(new) != agent.fingerprint or agent.state is AgentState.FAILED:
            plan.stopping.append(agent)
            plan.starting.append(new)
            summary["restarted"].append(new.raise_for_problems().name)
        else:
            plan.unchanged.append((agent, new))
            summary["unchanged"].append(agent.name)
    for agent_id, result in wanted.items():
        if agent_id not in agents:
            plan.starting.append(result)
            summary["started"].append(result.raise_for_problems().name)
    return plan


def record_failures(summary: ReloadSummary, launched: Sequence[HostedAgent]) -> None:
    """Move each agent that did not start from ``started``/``restarted`` to ``failed``."""
    for agent in launched:
        if agent.state is AgentState.FAILED:
            summary["failed"].append({"name": agent.name, "file": str(agent.result.source), "reason": agent.error})
            for names in (summary["started"], summary["restarted"]):
                if agent.name in names:
                    names.remove(agent.name)


def summary_line(summary: ReloadSummary) -> str:
    """The reload's summary on one line, for the log."""
    done = (("started", summary["started"]), ("stopped", summary["stopped"]), ("restarted", summary["restarted"]))
    parts = [f"{key} {', '.join(names)}" for key, names in done if names]
    parts.append(f"{len(summary['unchanged'])} unchanged")
    parts += [f"{k['name']} kept ({k['file']} does not validate)" for k in summary["kept"]]
    parts += [f"{f['name']} failed" for f in summary["failed"]]
    return "; ".join(parts)
