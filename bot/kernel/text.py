"""Text that is safe to send, store and log.

Python strings may hold lone UTF-16 surrogates (``"\\ud800"``): a JSON ``\\ud800`` escape from a
model or a chat platform decodes to one, and no UTF-8 encoder takes it — an HTTP client sending
it, or SQLite storing it, raises ``UnicodeEncodeError``. Text from outside is repaired where
troupe reads it and where it builds what it sends.
"""

from __future__ import annotations

__all__ = ["first_words", "one_line", "repair_text", "utf16_fit", "utf16_len"]

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


def utf16_len(text: str) -> int:
    """``text``'s length in UTF-16 code units, as Telegram counts its limits: a character past
    U+FFFF (most emoji) counts two."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_fit(text: str, units: int) -> int:
    """How many characters of ``text`` fit in ``units`` UTF-16 code units: a cut there never
    splits a character (nor, in a Python string, a surrogate pair)."""
    if len(text) * 2 <= units or utf16_len(text) <= units:
        return len(text)
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > units:
            return index
    return len(text)  # pragma: no cover - the whole text fits, handled above


def first_words(text: str) -> str:
    """The first few words of ``text`` on one line (with ``…`` if there is more): enough to
    recognise a message in a log without copying it there."""
    words = repair_text(text).split()
    shown = " ".join(words[:_WORDS])
    if len(shown) > _WORDS_MAX_CHARS:
        return shown[:_WORDS_MAX_CHARS] + "…"
    return shown + ("…" if len(words) > _WORDS else "")


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (its whitespace runs made single spaces), at most ``limit`` characters
    (cut with an ellipsis): an error's or a tool's words in a message of troupe's own."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
