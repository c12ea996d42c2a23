"""Three daemons serving one troupe on PostgreSQL: even spread, takeover after kill -9 within the
lease time, a paused daemon that lost its leases sends nothing; no message lost or answered twice."""

from __future__ import annotations

from pathlib import Path

from .cluster_run import Fault, cluster_run

LEASE_S = 2.0


async def test_kill_9_of_an_owner_mid_conversation_moves_its_characters_and_loses_nothing(
    tmp_path: Path, postgres_url: str
) -> None:
    report = await cluster_run(tmp_path, postgres_url, lease_s=LEASE_S, fault=Fault.KILL)
    assert (report.lost, report.duplicated) == (0, 0), report.summary() + "\n" + report.logs
    assert report.spread[-1] - report.spread[0] <= 1
    assert report.takeover_s is not None and report.takeover_s <= LEASE_S + 2 * LEASE_S / 3 + 1, report.summary()


async def test_a_daemon_paused_past_its_leases_sends_nothing_when_it_resumes(tmp_path: Path, postgres_url: str) -> None:
    report = await cluster_run(tmp_path, postgres_url, lease_s=LEASE_S, fault=Fault.PAUSE)
    assert (report.lost, report.duplicated) == (0, 0), report.summary() + "\n" + report.logs
    assert report.takeover_s is not None, report.summary()
    # It was paused with a reply under way, and held it back when it resumed: answered once, elsewhere.
    assert report.refused_after_resume >= 1, report.summary() + "\n" + report.logs
