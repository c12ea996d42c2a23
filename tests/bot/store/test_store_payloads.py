"""Decoded payloads: a row's content and metadata are decoded once per JSON text, and the
memory read back is the one that was stored."""

from __future__ import annotations

import json

from bot.kernel.content import Content, MemoryMetadata
from bot.store._rows import Payloads


def test_the_same_text_gives_the_same_decoded_payload() -> None:
    payloads = Payloads()
    text = json.dumps({"text": "hi", "source": "discord", "note": [1]})
    first = payloads.content(text)
    assert first == Content.from_json(json.loads(text))
    assert payloads.content(str(text)) is first  # another str of the same text: not decoded again
    meta = json.dumps({"type": "message", "entityName": "Ann"})
    assert payloads.metadata(meta) is payloads.metadata(meta)
    assert payloads.metadata(None) == MemoryMetadata() and payloads.content("{}") == Content()


def test_payloads_are_bounded_and_the_oldest_go_first() -> None:
    payloads = Payloads(size=3)
    texts = [json.dumps({"text": str(i)}) for i in range(5)]
    decoded = [payloads.content(t) for t in texts]
    assert payloads.content(texts[4]) is decoded[4]
    again = payloads.content(texts[0])  # dropped: decoded anew, equal
    assert again == decoded[0] and again is not decoded[0]
