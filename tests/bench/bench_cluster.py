"""Benchmark: several daemons on one PostgreSQL, an owner killed (or paused) mid-conversation.

    .venv/bin/python tests/bench/bench_cluster.py [--trials 20] [--lease 10] [--fault kill|pause]

Each trial starts a PostgreSQL (pgserver, or TROUPE_TEST_DATABASE_URL's server), three real
``troupe start`` daemons serving four characters on the fake Telegram, and people writing to all
of them; halfway through, the daemon serving the most characters is killed with SIGKILL (or
stopped with SIGSTOP and continued once its characters moved). Prints, over the trials, the time
from the fault until every one of its characters is served by another daemon (p50, max; target
at most the lease time + 1 s), and messages lost or answered twice (target 0 and 0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench._postgres import fresh_database
from tests.daemon.cluster_run import Fault, cluster_run


def _server() -> tuple[str, object | None]:
    given = os.environ.get("TROUPE_TEST_DATABASE_URL")
    if given:
        return given, None
    import pgserver

    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix="troupe-bench-pg-")), cleanup_mode="stop")
    return server.get_uri(), server


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--lease", type=float, default=10.0, help="TROUPE_LEASE_S of the daemons")
    parser.add_argument("--fault", choices=["kill", "pause"], default="kill")
    args = parser.parse_args()
    fault = Fault.KILL if args.fault == "kill" else Fault.PAUSE
    admin, server = _server()
    takeovers: list[float] = []
    lost = duplicated = messages = 0
    try:
        for trial in range(args.trials):
            with tempfile.TemporaryDirectory() as work:
                report = await cluster_run(Path(work), fresh_database(admin), lease_s=args.lease, fault=fault)
            messages += report.messages
            lost += report.lost
            duplicated += report.duplicated
            if report.takeover_s is not None:
                takeovers.append(report.takeover_s)
            print(f"  trial {trial + 1}: {report.summary()}", flush=True)
    finally:
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]
    print(f"bench_cluster: 3 daemons, 4 characters, {fault.value}, TROUPE_LEASE_S={args.lease:g}, {args.trials} trials")
    if takeovers:
        print(
            f"  takeover p50 {statistics.median(takeovers):.1f} s, max {max(takeovers):.1f} s "
            f"(target <= {args.lease + 1:g} s); {args.trials - len(takeovers)} trials without takeover"
        )
    print(f"  {messages} messages: lost {lost}, answered twice {duplicated} (target 0 and 0)")
    return 0 if (lost, duplicated) == (0, 0) and len(takeovers) == args.trials else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
