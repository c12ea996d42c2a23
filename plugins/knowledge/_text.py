"""Counting tokens and splitting documents into overlapping chunks. Pure functions.

Token counts are an estimate, not a tokenizer: ``ceil(utf8_bytes / 3.5)``. For English (and
code) that is upstream's 3.5 characters a token, about 10–15% above what OpenAI's cl100k and
o200k tokenizers count, which errs on the safe side for budgets; counting bytes rather than
characters keeps other scripts honest (Cyrillic and Greek come out near two characters a token,
CJK near one, roughly what the real tokenizers give). No tokenizer package is needed, and the
estimate is the same whichever model is configured.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["chunk_text", "estimate_tokens", "query_terms", "stem"]

_BYTES_PER_TOKEN = 3.5

# Sentence ends: ., ! or ? (and their CJK forms, and an ellipsis) followed by white space.
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])[ \t]+(?=\S)")
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_WORD = re.compile(r"\w+")

# Function words that say nothing about what a question is about. A query made only of these
# keeps them (so "who are you" still searches something).
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each else ever few for from further
    get got had has have having he her here hers herself him himself his how i if in into is it its itself
    just know let like me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own please same she should so some such tell than that the their theirs them
    themselves then there these they this those through to too under until up us very want was we were
    what when where which while who whom why will with would you your yours yourself yourselves""".split()
)


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is for a language model (see the module docstring)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return math.ceil(size / _BYTES_PER_TOKEN)


def stem(word: str) -> str:
    """A crude English stem (lower case, common suffixes off): enough to match "eats" with "eat"."""
    word = word.lower()
    for suffix in ("ing", "ed", "s"):
        if len(word) - len(suffix) >= 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def query_terms(text: str) -> list[str]:
    """The words of ``text`` that say what it is about, lower-cased, each once, in order.

    Function words ("what", "the", "is") are left out unless nothing else is left.
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    content = [w for w in words if w not in _STOPWORDS]
    return content or words


@dataclass(frozen=True, slots=True)
class _Unit:
    """A piece no chunk boundary falls inside: a sentence, a line, or a run of words."""

    text: str
    sep: str  # what joins it to the unit before: "\n\n" (new paragraph), "\n", " " or "" (a cut word)
    tokens: int


def _prefix_within(word: str, max_tokens: int) -> int:
    """How many leading characters of ``word`` fit in ``max_tokens`` (at least one)."""
    budget = int(max_tokens * _BYTES_PER_TOKEN)
    if word.isascii():
        return max(1, min(len(word), budget))
    used = 0
    for i, char in enumerate(word):
        used += len(char.encode("utf-8"))
        if used > budget:
            return max(1, i)
    return len(word)


def _hard_split(text: str, max_tokens: int) -> list[tuple[str, str]]:
    """Cut text with no sentence or line break into ``(piece, glue)`` of at most ``max_tokens``:
    at spaces (glue " ") where there are any; a giant word is cut anywhere (glue "")."""
    pieces: list[tuple[str, str]] = []
    current: list[str] = []
    size = 0
    glue = " "
    for word in text.split(" "):
        cost = estimate_tokens(word) + 1
        if current and size + cost > max_tokens:
            pieces.append((" ".join(current), glue))
            current, size, glue = [], 0, " "
        while estimate_tokens(word) > max_tokens:  # one "word" longer than a chunk
            if current:
                pieces.append((" ".join(current), glue))
                current, size, glue = [], 0, " "
            cut = _prefix_within(word, max_tokens)
            pieces.append((word[:cut], glue))
            word, glue = word[cut:], ""
        current.append(word)
        size += cost
    if current:
        pieces.append((" ".join(current), glue))
    return [(p, g) for p, g in pieces if p.strip()]


def _units(text: str, max_tokens: int) -> list[_Unit]:
    units: list[_Unit] = []
    for paragraph in _BLANK_LINES.split(text):
        for line_no, line in enumerate(paragraph.split("\n")):
            line = line.rstrip()
            if not line.strip():
                continue
            for s, sentence in enumerate(_SENTENCE_END.split(line)):
                sep = "\n\n" if line_no == 0 and s == 0 else "\n" if s == 0 else " "
                tokens = estimate_tokens(sentence)
                if tokens <= max_tokens:
                    units.append(_Unit(sentence, sep, tokens))
                    continue
                for i, (piece, glue) in enumerate(_hard_split(sentence, max_tokens)):
                    units.append(_Unit(piece, sep if i == 0 else glue, estimate_tokens(piece)))
    return units


def _join(units: list[_Unit]) -> str:
    return "".join((u.sep if i else "") + u.text for i, u in enumerate(units)).strip()


def chunk_text(text: str, max_tokens: int = 500, overlap_tokens: int = 100) -> list[str]:
    """Split ``text`` into chunks of at most about ``max_tokens``, each starting with up to
    ``overlap_tokens`` of the end of the one before.

    Chunks end between paragraphs where one ends in the second half of the chunk, else between
    sentences (or lines), and only inside a sentence longer than a whole chunk; the overlap is
    whole sentences. A text that fits in one chunk is one chunk. Returns [] for blank text.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    units = _units(text, max_tokens)
    if not units:
        return []
    if sum(u.tokens for u in units) <= max_tokens:
        return [_join(units)]

    chunks: list[str] = []
    current: list[_Unit] = []
    size = 0
    fresh = 0  # how many units at the end of ``current`` no chunk holds yet
    i = 0
    while i < len(units):
        unit = units[i]
        if current and fresh and size + unit.tokens > max_tokens:
            # End the chunk; at a paragraph break in its second half if it has one.
            cut, running, first_fresh = len(current), 0, len(current) - fresh
            for j, u in enumerate(current):
                if j > first_fresh and u.sep == "\n\n" and running >= max_tokens // 2:
                    cut = j
                running += u.tokens
            chunks.append(_join(current[:cut]))
            carried = current[cut:]
            overlap: list[_Unit] = []
            room = overlap_tokens
            for u in reversed(current[:cut]):
                if u.tokens > room:
                    break
                overlap.insert(0, u)
                room -= u.tokens
            current, fresh = overlap + carried, len(carried)
            size = sum(u.tokens for u in current)
            # The overlap gives way when it and the next unit would not fit together.
            while len(current) > fresh and size + unit.tokens > max_tokens:
                size -= current.pop(0).tokens
            continue  # the same unit again: what was carried over may still leave no room
        current.append(unit)
        size += unit.tokens
        fresh += 1
        i += 1
    if fresh:
        chunks.append(_join(current))
    return [c for c in chunks if c]
