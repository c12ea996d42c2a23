"""sd_notify without libsystemd: datagrams to NOTIFY_SOCKET (path or abstract), the watchdog
interval from WATCHDOG_USEC, and nothing at all outside systemd."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.daemon.systemd import Notifier


@pytest.fixture
def listener() -> Iterator[tuple[str, socket.socket]]:
    directory = Path(tempfile.mkdtemp(dir="/tmp"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(directory / "notify"))
    sock.settimeout(2)
    yield str(directory / "notify"), sock
    sock.close()
    (directory / "notify").unlink()
    directory.rmdir()


def received(sock: socket.socket) -> list[str]:
    return sock.recv(4096).decode().splitlines()


def test_ready_status_reloading_and_stopping_reach_the_socket(listener) -> None:
    path, sock = listener
    notifier = Notifier({"NOTIFY_SOCKET": path})
    assert notifier.enabled
    notifier.ready("2 agents running;\n 2 of 2 up")
    assert received(sock) == ["READY=1", "STATUS=2 agents running; 2 of 2 up"]  # one line, always
    notifier.reloading("reloading")
    lines = received(sock)
    assert lines[0] == "RELOADING=1" and lines[1].startswith("MONOTONIC_USEC=") and lines[2] == "STATUS=reloading"
    assert int(lines[1].split("=")[1]) > 0
    notifier.stopping()
    assert received(sock) == ["STOPPING=1"]
    notifier.close()


def test_abstract_socket_names_are_understood() -> None:
    name = f"troupe-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    try:
        Notifier({"NOTIFY_SOCKET": "@" + name}).status("hello")
        assert received(sock) == ["STATUS=hello"]
    finally:
        sock.close()


def test_without_systemd_nothing_is_sent_and_nothing_fails() -> None:
    notifier = Notifier({})
    assert not notifier.enabled and notifier.watchdog_s is None
    assert notifier.send("READY=1") is False
    notifier.ready("x")
    notifier.stopping()


def test_a_vanished_socket_is_logged_once_not_raised(caplog) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": "/tmp/troupe-no-such-socket"})
    assert notifier.send("WATCHDOG=1") is False
    assert notifier.send("WATCHDOG=1") is False
    assert caplog.text.count("could not notify systemd") == 1


def test_watchdog_interval_is_half_of_watchdog_usec_and_only_for_this_process() -> None:
    assert Notifier({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "30000000"}).watchdog_s == 15.0
    assert Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_s == 15.0
    assert Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}).watchdog_s is None
    assert Notifier({"WATCHDOG_USEC": "nonsense"}).watchdog_s is None
    assert Notifier({"WATCHDOG_USEC": "0"}).watchdog_s is None


async def test_keep_alive_pings_from_the_loop_until_cancelled(listener) -> None:
    path, sock = listener
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "40000"})
    task = asyncio.create_task(notifier.keep_alive())
    await asyncio.sleep(0.09)
    task.cancel()
    sock.settimeout(0.5)
    pings = [received(sock) for _ in range(3)]
    assert pings == [["WATCHDOG=1"]] * 3


async def test_keep_alive_returns_at_once_without_a_watchdog(listener) -> None:
    path, _ = listener
    await asyncio.wait_for(Notifier({"NOTIFY_SOCKET": path}).keep_alive(), 1)
