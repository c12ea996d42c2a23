"""A daemon's database link cut or blackholed for longer than the lease while people keep
writing: the other daemon takes its characters over, and once the link heals, the cut-off
daemon's held writes change nothing — no message lost, none answered twice, none abandoned."""

from __future__ import annotations

from pathlib import Path

import pytest

from .link_run import LinkFault, link_fault_run


@pytest.mark.parametrize("fault", [LinkFault.CUT, LinkFault.BLACKHOLE])
async def test_a_link_cut_longer_than_the_lease_loses_and_repeats_nothing(
    tmp_path: Path, postgres_url: str, fault: LinkFault
) -> None:
    report = await link_fault_run(tmp_path, postgres_url, fault=fault)
    assert report.takeover_s is not None, report.summary() + "\n" + report.logs
    assert (report.lost, report.duplicated, report.abandoned) == (0, 0, 0), report.summary() + "\n" + report.logs
