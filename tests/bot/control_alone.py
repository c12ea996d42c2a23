"""A control server alone in a process, with few open files: ``python -m tests.bot.control_alone
SOCKET NOFILE``. Prints its health port, then serves until SIGTERM. Its log goes to stderr
through the daemon's logging set-up, so a test can count the lines a flood produces."""

from __future__ import annotations

import asyncio
import resource
import signal
import sys
from pathlib import Path

from bot.config.settings import DaemonSettings
from bot.daemon.control import ControlServer
from bot.kernel import logs
from bot.kernel.metrics import Metrics


class _View:
    def __init__(self) -> None:
        self.metrics = Metrics()

    def status(self) -> dict[str, object]:
        return {"state": "running"}

    def readiness(self) -> tuple[bool, list[str]]:
        return True, []

    async def troupe(self) -> None:
        return None

    async def reload(self) -> dict[str, object]:
        return {}


async def main(sock: Path, nofile: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    logs.configure("INFO")
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    server = ControlServer(_View(), DaemonSettings(_env_file=None, control_socket=sock, health_port=0))
    await server.start()
    print(server.tcp_port, flush=True)
    await stopped.wait()
    await server.close()
    logs.flush_repeats()  # as troupe start does when the daemon ends


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
