"""ReplyWatcher: the reply text while the plan is being written, only when the plan says REPLY."""

from __future__ import annotations

import itertools
import json

import pytest

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


def json_plan(**fields: object) -> str:
    return json.dumps({"thought": "hm", "actions": ["REPLY"], "providers": [], **fields, "imagePrompt": ""})


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_the_text_of_a_json_plan_grows_decoded_without_half_written_escapes(size: int) -> None:
    text = 'Tom "&" Jerry\\ ran.\nThen <b>stopped</b> 😀 — ok'
    raw = json_plan(thought='she said "text": "no"', text=text)  # ASCII-escaped, the pair as two \u
    seen = feed_in_pieces(raw, size)
    assert seen[-1] == text
    # Each a beginning of the text: no escape shown undecoded, no half of the pair, nothing of
    # the "text" inside the thought.
    assert all(text.startswith(shown) for shown in seen)
    assert 'Tom "&" Jerry\\ ran.\nThen <b>stopped</b> \ud83d' not in seen


def test_nothing_is_handed_out_unless_the_json_plan_replies() -> None:
    assert feed_in_pieces(json_plan(actions=["IGNORE"], text="not to be said"), 4) == []
    assert feed_in_pieces("```json\n" + json_plan(text="fenced") + "\n```")[-1] == "fenced"
