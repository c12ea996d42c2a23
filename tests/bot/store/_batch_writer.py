"""A separate process whose tasks write at once (group commit) until killed; for the kill test.

Usage: python _batch_writer.py DB_PATH TASKS
Each of TASKS tasks writes meta rows "<task>-<n>" one after another and prints "ok <key>" once
the write returned (acknowledged), so a parent that kills it knows what must be in the file.
"""

from __future__ import annotations

import asyncio
import functools
import sys

from bot.store import Database
from bot.store._connect import Connection


def _insert(key: str, conn: Connection) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES (?, 'acknowledged')", (key,))


async def main(path: str, tasks: int) -> None:
    async with Database(path) as db:

        async def writer(task: int) -> None:
            n = 0
            while True:
                key = f"{task}-{n}"
                await db.write(functools.partial(_insert, key), tables=("meta",))
                print(f"ok {key}", flush=True)
                n += 1

        await asyncio.gather(*(writer(t) for t in range(tasks)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
