"""Text meant for the ear: Markdown removed, and cut into sentences as the model writes them.

A reply is spoken sentence by sentence so the first sentence can be heard while the model is
still writing the rest. :class:`SentenceStream` takes the reply as it grows and hands out each
sentence once it is complete; :func:`spoken_text` makes Markdown readable aloud (no asterisks,
no URLs read out character by character, code blocks skipped).
"""

from __future__ import annotations

import re

__all__ = ["SentenceStream", "spoken_text"]

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\)")
_URL = re.compile(r"https?://\S+")
_MARKS = re.compile(r"(\*\*|__|~~|`|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.M)
_QUOTE = re.compile(r"^\s*>\s?", re.M)
_SPACES = re.compile(r"[ \t]+")
# A sentence ends at . ! ? … (with closing quotes or brackets) followed by a space, or at a line
# break. "e.g. " and "3.5" are not ends: an abbreviation or a number continues the sentence.
_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*(?=\s)|\n+")
_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "etc.", "mr.", "mrs.", "ms.", "dr.", "st.", "vs.", "no.", "p.s."})
_MIN_CHARS = 12  # very short pieces ("Hi.") are joined to what follows: one TTS call, natural prosody


def spoken_text(markdown: str) -> str:
    """``markdown`` as something to say: code skipped, links by their text, no formatting marks."""
    text = _FENCE.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    text = _URL.sub("a link", text)
    text = _HEADING.sub("", text)
    text = _BULLET.sub("", text)
    text = _QUOTE.sub("", text)
    text = _MARKS.sub("", text)
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.splitlines()).strip()


class SentenceStream:
    """Sentences out of a text that arrives in growing prefixes.

    ``feed(text_so_far)`` returns the sentences completed since the last call;
    ``finish(final_text)`` returns what is left. Sentences are already :func:`spoken_text`.
    A text that does not go on from what was handed out (the model's text was taken back, as a
    tool turn's before its calls) starts afresh: what was handed out stays said.
    """

    def __init__(self) -> None:
        self._said = 0  # characters of the raw text already handed out
        self._handed = ""  # those characters

    def feed(self, text: str) -> list[str]:
        if not text.startswith(self._handed):
            self._said, self._handed = 0, ""
        sentences: list[str] = []
        start = self._said
        for match in _END.finditer(text, start):
            end = match.end()
            piece = text[start:end]
            if self._continues(piece) or len(piece.strip()) < _MIN_CHARS:
                continue
            spoken = spoken_text(piece)
            if spoken:
                sentences.append(spoken)
            start = end
        self._said, self._handed = start, text[:start]
        return sentences

    def finish(self, text: str) -> list[str]:
        """The rest of ``text`` after what was handed out (all of it if it no longer matches)."""
        rest = spoken_text(text[self._said :])
        self._said, self._handed = len(text), text
        return [rest] if rest else []

    @staticmethod
    def _continues(piece: str) -> bool:
        stripped = piece.rstrip()
        if not stripped or "\n" in piece[len(stripped) :]:
            return False  # a line break always ends a sentence
        last = stripped.rsplit(None, 1)[-1].lower()
        return last in _ABBREVIATIONS or bool(re.fullmatch(r"\d+\.", last))
