"""Reading the reply out of a plan while the model is still writing it.

The plan is ``<response><thought/><actions/><providers/><text/></response>``, or with a JSON
schema in force ``{"thought", "actions", "providers", "text", …}``, in that order, so by the time
the text starts the actions are known. :class:`ReplyWatcher` takes the pieces the model streams,
in either form (it tells them apart by the first character), and once the actions include REPLY
hands out the text written so far — without a half-written closing tag, entity or escape — so
speech can start with the first sentence. A reply that may yet turn out to be the template's
placeholder (``the message to send``) is held back until it is clear that it is not.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable

from ._placeholders import Placeholders

__all__ = ["ReplyWatcher"]

_ACTIONS = re.compile(r"<actions>(.*?)</actions>", re.S | re.I)
_TEXT_OPEN = re.compile(r"<text>", re.I)
_TEXT_CLOSE = re.compile(r"</text\s*>", re.I)
_CDATA = re.compile(r"<!\[CDATA\[|\]\]>")
# JSON: a key is a quote not escaped, the name, a quote, a colon.
_JSON_ACTIONS = re.compile(r'(?<!\\)"actions"\s*:\s*\[(.*?)\]', re.S)
_JSON_TEXT = re.compile(r'(?<!\\)"text"\s*:\s*"')
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_HIGH_SURROGATE = re.compile(r"[dD][89abAB][0-9a-fA-F]{2}")


class ReplyWatcher:
    """Feed it the model's pieces; it calls ``on_text(reply_so_far)`` as the reply grows."""

    def __init__(self, on_text: Callable[[str], None], placeholders: Placeholders | None = None) -> None:
        self.on_text = on_text
        self.placeholders = placeholders or Placeholders(frozenset())
        self._raw = ""
        self._json: bool | None = None
        self._replying: bool | None = None
        self._shown = ""

    def feed(self, piece: str) -> None:
        self._raw += piece
        if self._json is None:
            start = self._raw.lstrip()
            if not start:
                return
            self._json = start[0] in "{`"  # an object, or one in a code fence
        if self._replying is None:
            names = _json_actions(self._raw) if self._json else _xml_actions(self._raw)
            if names is None:
                return
            self._replying = "REPLY" in names
        if not self._replying:
            return
        found = _json_text(self._raw) if self._json else _xml_text(self._raw)
        if found is None:
            return
        text, complete = found
        if self.placeholders.copied(text) or (not complete and self.placeholders.may_become(text)):
            return
        if text != self._shown:
            self._shown = text
            self.on_text(text)


def _xml_actions(raw: str) -> set[str] | None:
    actions = _ACTIONS.search(raw)
    if actions is None:
        return None
    return {a.strip().upper() for a in re.split(r"[,\s]+", actions.group(1)) if a.strip()}


def _xml_text(raw: str) -> tuple[str, bool] | None:
    """The text written so far, and whether it is complete."""
    opened = _TEXT_OPEN.search(raw)
    if opened is None:
        return None
    body = raw[opened.end() :]
    closed = _TEXT_CLOSE.search(body)
    if closed is not None:
        body = body[: closed.start()]
    else:
        # Hold back what may be the start of the closing tag or of an entity.
        for marker in ("<", "&"):
            cut = body.rfind(marker)
            if cut >= 0 and (marker == "<" or ";" not in body[cut:]):
                body = body[:cut]
    return html.unescape(_CDATA.sub("", body)), closed is not None


def _json_actions(raw: str) -> set[str] | None:
    actions = _JSON_ACTIONS.search(raw)
    if actions is None:
        return None
    return {name.strip().upper() for name in _JSON_STRING.findall(actions.group(1))}


def _json_text(raw: str) -> tuple[str, bool] | None:
    """The ``text`` string written so far, decoded (an escape not yet complete is held back),
    and whether its closing quote has come."""
    opened = _JSON_TEXT.search(raw)
    if opened is None:
        return None
    body = raw[opened.end() :]
    end = 0
    while end < len(body) and body[end] != '"':
        if body[end] != "\\":
            end += 1
            continue
        size = 2
        if body[end + 1 : end + 2] == "u":
            # A pair's two halves come out as one character: wait for both.
            size = 12 if _HIGH_SURROGATE.fullmatch(body[end + 2 : end + 6]) else 6
        if end + size > len(body):
            break
        end += size
    try:
        text: str = json.loads(f'"{body[:end]}"', strict=False)
    except ValueError:  # not JSON after all: nothing to show
        return None
    return text, end < len(body) and body[end] == '"'
