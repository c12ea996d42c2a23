"""The daemon raises its open-file limit to the hard limit at start, and carries on if refused."""

from __future__ import annotations

import logging
import resource
import subprocess
import sys

import pytest

from bot.daemon.open_files import raise_open_file_limit


def test_the_soft_limit_is_raised_to_the_hard_one_in_a_real_process() -> None:
    script = (
        "import resource\n"
        "from bot.daemon.open_files import raise_open_file_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "print(raise_open_file_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    returned, soft, hard = (int(n) for n in out.stdout.split())
    if hard == resource.RLIM_INFINITY:
        assert returned == soft == 65536
    else:
        assert returned == soft == hard


def test_a_refusal_leaves_the_limit_as_it_was_and_says_so_quietly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="bot.daemon.open_files")

    def refuse(kind: int, limits: tuple[int, int]) -> None:
        raise PermissionError(1, "Operation not permitted")  # setrlimit under SystemCallFilter=~@resources

    assert raise_open_file_limit(lambda kind: (1024, 524288), refuse) == 1024
    (line,) = caplog.records
    assert line.levelno == logging.DEBUG
    assert "open-file limit stays 1024: raising it to 524288 was refused" in line.getMessage()


def test_a_limit_already_at_the_hard_one_is_left_alone() -> None:
    def never(kind: int, limits: tuple[int, int]) -> None:
        raise AssertionError("not called")

    assert raise_open_file_limit(lambda kind: (4096, 4096), never) == 4096
