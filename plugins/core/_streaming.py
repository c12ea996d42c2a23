"""Reading the reply out of a plan while the model is still writing it.

The plan is ``<response><thought/><actions/><providers/><text/></response>``, in that order, so
by the time ``<text>`` starts the actions are known. :class:`ReplyWatcher` takes the pieces the
model streams and, once the actions include REPLY, hands out the text written so far — without
a half-written closing tag or entity — so speech can start with the first sentence. A reply
that may yet turn out to be the template's placeholder (``the message to send``) is held back
until it is clear that it is not.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from ._placeholders import Placeholders

__all__ = ["ReplyWatcher"]

_ACTIONS = re.compile(r"<actions>(.*?)</actions>", re.S | re.I)
_TEXT_OPEN = re.compile(r"<text>", re.I)
_TEXT_CLOSE = re.compile(r"</text\s*>", re.I)
_CDATA = re.compile(r"<!\[CDATA\[|\]\]>")


class ReplyWatcher:
    """Feed it the model's pieces; it calls ``on_text(reply_so_far)`` as the reply grows."""

    def __init__(self, on_text: Callable[[str], None], placeholders: Placeholders | None = None) -> None:
        self.on_text = on_text
        self.placeholders = placeholders or Placeholders(frozenset())
        self._raw = ""
        self._replying: bool | None = None
        self._shown = ""

    def feed(self, piece: str) -> None:
        self._raw += piece
        if self._replying is None:
            actions = _ACTIONS.search(self._raw)
            if actions is None:
                return
            names = {a.strip().upper() for a in re.split(r"[,\s]+", actions.group(1)) if a.strip()}
            self._replying = "REPLY" in names
        if not self._replying:
            return
        opened = _TEXT_OPEN.search(self._raw)
        if opened is None:
            return
        body = self._raw[opened.end() :]
        closed = _TEXT_CLOSE.search(body)
        if closed is not None:
            body = body[: closed.start()]
        else:
            # Hold back what may be the start of the closing tag or of an entity.
            for marker in ("<", "&"):
                cut = body.rfind(marker)
                if cut >= 0 and (marker == "<" or ";" not in body[cut:]):
                    body = body[:cut]
        text = html.unescape(_CDATA.sub("", body))
        if self.placeholders.copied(text) or (closed is None and self.placeholders.may_become(text)):
            return
        if text != self._shown:
            self._shown = text
            self.on_text(text)
