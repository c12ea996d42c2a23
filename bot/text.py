"""Text that is safe to send, store and log.

Python strings may hold lone UTF-16 surrogates (``"\\ud800"``): a JSON ``\\ud800`` escape from a
model or a chat platform decodes to one, and no UTF-8 encoder takes it — an HTTP client sending
it, or SQLite storing it, raises ``UnicodeEncodeError``. Text from outside is repaired where
troupe reads it and where it builds what it sends.
"""

from __future__ import annotations

__all__ = ["first_words", "repair_text"]

_WORDS = 6
_WORDS_MAX_CHARS = 40


def repair_text(text: str) -> str:
    """``text`` as valid Unicode: a surrogate pair split into its halves is joined again, a lone
    surrogate becomes U+FFFD (the replacement character). Never raises; valid text comes back as
    the same object."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, paired halves meet again and the decoder replaces what is left alone.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def first_words(text: str) -> str:
    """The first few words of ``text`` on one line (with ``…`` if there is more): enough to
    recognise a message in a log without copying it there."""
    words = repair_text(text).split()
    shown = " ".join(words[:_WORDS])
    if len(shown) > _WORDS_MAX_CHARS:
        return shown[:_WORDS_MAX_CHARS] + "…"
    return shown + ("…" if len(words) > _WORDS else "")
