"""kill -9 through a conversation: how many messages are lost or answered twice.

The real ``troupe start`` serves one character on the fake Telegram Bot API with the fake
OpenAI-compatible API answering after ``--latency`` seconds; people write ``--messages`` messages
(each naming the character) one every ``--interval`` seconds while the daemon is killed with
SIGKILL ``--kills`` times and started again. Prints what happened to every message. With
``--webhook`` the character takes its updates by webhook (TELEGRAM_WEBHOOK_URL) instead of polling.

    .venv/bin/python tests/bench/bench_crash.py --messages 300 --kills 5 [--webhook]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.daemon.crash_run import crash_run


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.3, help="model latency, seconds")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between messages")
    parser.add_argument(
        "--min-uptime", type=float, default=2.0, help="seconds the daemon runs after each start before the next kill"
    )
    parser.add_argument("--webhook", action="store_true", help="updates by webhook, not long polling")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        report = await crash_run(
            Path(work),
            messages=args.messages,
            kills=args.kills,
            latency=args.latency,
            interval=args.interval,
            min_uptime=args.min_uptime,
            settle=120,
            webhook=args.webhook,
        )
    print(report.summary())
    print(f"lost {report.lost}, duplicated {report.duplicated} (target 0 and 0)")
    if report.unanswered:
        print("never answered (chat, message):", ", ".join(f"({c}, {m})" for c, m in report.unanswered))
    return 0 if (report.lost, report.duplicated) == (0, 0) else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
