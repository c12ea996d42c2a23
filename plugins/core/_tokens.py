"""A cheap count of the tokens a text costs a model, without its tokenizer.

troupe talks to models whose tokenizers it does not have (and should not download): GPT's,
Llama's, SmolLM's … So it estimates, erring high, since a prompt that is estimated short and
refused costs a request, while one estimated long only loses a few old lines:

- a run of ASCII letters costs one token per 4 letters, at least one (common English words are
  one token in every tokenizer; long and rare ones split);
- a digit costs one (many tokenizers split numbers digit by digit; ids and times are full of them);
- a run of other letters (accented, Cyrillic, Greek …) one per 2;
- a Chinese, Japanese or Korean character one (they are a token or more each), and so is every
  other character that is not a space (punctuation, emoji);
- a line break one; spaces nothing (they ride on the next word's token).

English prose comes out about 20% above what GPT's and Llama's tokenizers count; ids and
numbers well above; so ``context window - estimate`` never overfills a window.
"""

from __future__ import annotations

import re

__all__ = ["estimate_tokens"]

# From here on (CJK radicals, kana, Hangul, ideographs …), each character is a token or more.
_CJK = "\u2e80"
_RUNS = re.compile(r"[A-Za-z]+|[^\W\d_]+|\d|\n|\S")


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is, erring high (see the module docstring)."""
    count = 0
    for match in _RUNS.finditer(text):
        run = match.group()
        first = run[0]
        if first.isascii() and first.isalpha():
            count += (len(run) + 3) // 4
        elif len(run) > 1 and first < _CJK:  # letters of another alphabet
            count += (len(run) + 1) // 2
        else:
            count += len(run)
    return count
