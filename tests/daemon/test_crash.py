"""kill -9 in the middle of a conversation: nothing is lost, nothing is answered twice."""

from __future__ import annotations

from pathlib import Path

from .crash_run import crash_run


async def test_kill_9_mid_conversation_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    report = await crash_run(tmp_path, messages=40, kills=2, latency=0.3, interval=0.1)
    assert (report.lost, report.duplicated) == (0, 0), report.summary() + "\n" + report.log[-3000:]
    assert report.answered_once == 40


async def test_kill_9_mid_conversation_by_webhook_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    report = await crash_run(tmp_path, messages=40, kills=2, latency=0.3, interval=0.1, webhook=True)
    assert (report.lost, report.duplicated) == (0, 0), report.summary() + "\n" + report.log[-3000:]
    assert report.answered_once == 40
    assert "Telegram posts its updates to http://127.0.0.1:" in report.log
