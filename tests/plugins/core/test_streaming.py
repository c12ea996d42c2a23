"""ReplyWatcher: the reply text while the plan is being written, only when the plan says REPLY."""

from __future__ import annotations

import itertools

from plugins.core._streaming import ReplyWatcher


def feed_in_pieces(raw: str, size: int = 3) -> list[str]:
    seen: list[str] = []
    watcher = ReplyWatcher(seen.append)
    for i in range(0, len(raw), size):
        watcher.feed(raw[i : i + size])
    return seen


def test_the_reply_grows_without_half_written_tags_or_entities() -> None:
    raw = (
        "<response><thought>hm</thought><actions>REPLY,FOLLOW_ROOM</actions><providers></providers>"
        "<text>Tom &amp; Jerry ran. Then <b>stopped</b>.</text></response>"
    )
    seen = feed_in_pieces(raw)
    assert seen[-1] == "Tom & Jerry ran. Then <b>stopped</b>."
    assert all(not s.endswith(("<", "</", "</te")) and "&a" not in s for s in seen)
    assert all(b.startswith(a) for a, b in itertools.pairwise(seen))  # only ever grows


def test_nothing_is_handed_out_unless_the_plan_replies() -> None:
    raw = "<response><thought>no</thought><actions>IGNORE</actions><text>not to be said</text></response>"
    assert feed_in_pieces(raw) == []
