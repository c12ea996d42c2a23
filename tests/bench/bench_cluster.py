"""Benchmark: several daemons on one PostgreSQL (pgserver, or TROUPE_TEST_DATABASE_URL's server),
real ``troupe start`` processes serving characters on the fake Telegram.

    .venv/bin/python tests/bench/bench_cluster.py takeover [--trials 20] [--lease 10] [--fault kill|pause]
    .venv/bin/python tests/bench/bench_cluster.py handover [--messages 1000] [--handovers 20] [--lease 10]
    .venv/bin/python tests/bench/bench_cluster.py throughput [--messages 600] [--characters 6] [--writers 4]

``takeover`` (the default): each trial starts three daemons serving four characters and people
writing to all of them; halfway through, the daemon serving the most characters is killed with
SIGKILL (or stopped with SIGSTOP and continued once its characters moved). Prints, over the
trials, the time from the fault until every one of its characters is served by another daemon
(p50, max; target at most the lease time + 1 s), and messages lost or answered twice (target 0
and 0).

``handover``: three daemons, four characters, ``--messages`` sent one every ``--interval`` s,
each from a person of its own, while ``--handovers`` times the daemon serving the most
characters is stopped with SIGTERM and started again. Prints messages lost and answered twice
(target 0 and 0) and the handover times (SIGTERM until its characters are held elsewhere).

``throughput``: the same load against one daemon, then against three, serving the same
characters: ``--writers`` people per character each write, wait for the answer and write again
until ``--messages`` have been sent (the fake model answering at once). Prints messages answered
per second, and the connections each daemon held after starting and at most under the load
(pg_stat_activity by application_name; the pool allows 6).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench._postgres import fresh_database, postgres_server
from tests.daemon.cluster_run import Fault, cluster_run, handover_run, throughput_run


async def _takeover(args: argparse.Namespace, admin: str) -> int:
    fault = Fault.KILL if args.fault == "kill" else Fault.PAUSE
    takeovers: list[float] = []
    lost = duplicated = messages = 0
    for trial in range(args.trials):
        with tempfile.TemporaryDirectory() as work:
            report = await cluster_run(Path(work), fresh_database(admin), lease_s=args.lease, fault=fault)
        messages += report.messages
        lost += report.lost
        duplicated += report.duplicated
        if report.takeover_s is not None:
            takeovers.append(report.takeover_s)
        print(f"  trial {trial + 1}: {report.summary()}", flush=True)
    print(f"bench_cluster: 3 daemons, 4 characters, {fault.value}, TROUPE_LEASE_S={args.lease:g}, {args.trials} trials")
    if takeovers:
        print(
            f"  takeover p50 {statistics.median(takeovers):.1f} s, max {max(takeovers):.1f} s "
            f"(target <= {args.lease + 1:g} s); {args.trials - len(takeovers)} trials without takeover"
        )
    print(f"  {messages} messages: lost {lost}, answered twice {duplicated} (target 0 and 0)")
    return 0 if (lost, duplicated) == (0, 0) and len(takeovers) == args.trials else 1


async def _handover(args: argparse.Namespace, admin: str) -> int:
    work = Path(tempfile.mkdtemp(prefix="troupe-bench-handover-"))
    report = await handover_run(
        work,
        fresh_database(admin),
        messages=args.messages,
        handovers=args.handovers,
        interval=args.interval,
        lease_s=args.lease,
    )
    if (report.lost, report.duplicated) == (0, 0):
        shutil.rmtree(work)
    else:  # the daemons' logs and what each bot sent, for the post-mortem
        print(f"  kept {work}; unanswered (chat, message): {report.unanswered}")
    print(
        f"bench_cluster handover: 3 daemons, 4 characters, TROUPE_LEASE_S={args.lease:g}, one message every "
        f"{args.interval:g} s"
    )
    print(f"  {report.summary()}")
    if report.handovers:
        print(f"  handover times (s): {', '.join(f'{t:.1f}' for t in report.handovers)}")
    return 0 if (report.lost, report.duplicated, report.stuck) == (0, 0, 0) else 1


async def _throughput(args: argparse.Namespace, admin: str) -> int:
    print(
        f"bench_cluster throughput: {args.messages} messages, {args.writers} people per character writing again "
        f"once answered, {args.characters} characters, the model answering at once, {os.cpu_count()} CPU cores"
    )
    reports = []
    for daemons in (1, 3):
        with tempfile.TemporaryDirectory() as work:
            report = await throughput_run(
                Path(work),
                fresh_database(admin),
                daemons=daemons,
                characters=args.characters,
                messages=args.messages,
                writers=args.writers,
                lease_s=args.lease,
            )
        reports.append(report)
        print(f"  {report.summary()}", flush=True)
    one, three = reports
    if one.per_second:
        print(f"  3 daemons against 1: {three.per_second / one.per_second:.2f}x the messages answered per second")
    return 0 if all(r.answered == r.messages and r.duplicated == 0 for r in reports) else 1


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", choices=["takeover", "handover", "throughput"], default="takeover")
    parser.add_argument("--trials", type=int, default=20, help="takeover: how many")
    parser.add_argument("--lease", type=float, default=10.0, help="TROUPE_LEASE_S of the daemons")
    parser.add_argument("--fault", choices=["kill", "pause"], default="kill", help="takeover: how the owner fails")
    parser.add_argument("--messages", type=int, default=None, help="handover: 1000; throughput: 600")
    parser.add_argument("--handovers", type=int, default=20, help="handover: daemons stopped and started again")
    parser.add_argument("--interval", type=float, default=0.1, help="handover: seconds between messages")
    parser.add_argument("--characters", type=int, default=6, help="throughput: characters served")
    parser.add_argument("--writers", type=int, default=4, help="throughput: people per character writing at once")
    args = parser.parse_args()
    if args.messages is None:
        args.messages = 1000 if args.scenario == "handover" else 600
    data = Path(tempfile.mkdtemp(prefix="troupe-bench-pg-"))
    try:
        with postgres_server(data) as admin:
            if args.scenario == "handover":
                return await _handover(args, admin)
            if args.scenario == "throughput":
                return await _throughput(args, admin)
            return await _takeover(args, admin)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
