"""A daemon's database link cut or blackholed for longer than the lease while people keep
writing: the other daemon takes its characters over, and once the link heals, the cut-off
daemon's held writes change nothing — no message lost, none answered twice, none abandoned.
And a daemon paused past its lease that gets the character back never sends what its old
runtime had under way."""

from __future__ import annotations

from pathlib import Path

import pytest

from .link_run import LinkFault, link_fault_run, pause_regain_run


@pytest.mark.parametrize("fault", [LinkFault.CUT, LinkFault.BLACKHOLE])
async def test_a_link_cut_longer_than_the_lease_loses_and_repeats_nothing(
    tmp_path: Path, postgres_url: str, fault: LinkFault
) -> None:
    report = await link_fault_run(tmp_path, postgres_url, fault=fault)
    assert report.takeover_s is not None, report.summary() + "\n" + report.logs
    assert (report.lost, report.duplicated, report.abandoned) == (0, 0, 0), report.summary() + "\n" + report.logs


async def test_a_daemon_paused_then_given_the_character_back_does_not_send_its_old_answer(
    tmp_path: Path, postgres_url: str
) -> None:
    """SIGSTOP with a model answer under way, the other daemon answers, SIGCONT, the character
    comes back at a later epoch, and only then the old answer arrives: still one reply (before
    the fence was bound to epochs, 2 of 2 runs sent a second one)."""
    report = await pause_regain_run(tmp_path, postgres_url)
    assert report.regained, report.logs
    assert report.replies == 1, report.logs
