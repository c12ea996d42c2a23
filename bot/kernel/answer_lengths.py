"""How many tokens a model may write for each kind of call troupe makes.

Every text call passes ``max_tokens`` sized for what it asks for: a weak model that runs on past
its answer (a 135M model wrote 2,011 tokens, 161 s, for one line) then stops where a good answer
would have ended, and what it wrote is still read. A model handler bounds the calls of other
plugins that give none (the openai plugin: ``OPENAI_MAX_TOKENS``).
"""

from __future__ import annotations

__all__ = [
    "DECISION_TOKENS",
    "EXTRACTION_TOKENS",
    "PLAN_TOKENS",
    "REFLECTION_TOKENS",
    "SHORT_ANSWER_TOKENS",
    "words_tokens",
]

#: Who answers (RESPOND, IGNORE or STOP; the troupe's names), with a sentence on why.
DECISION_TOKENS = 200
#: The plan: a thought, the actions, the providers and the reply. ``PLAN_MAX_TOKENS`` changes it
#: for a character whose replies are longer.
PLAN_TOKENS = 1024
#: The facts and relationships found in a stretch of conversation.
REFLECTION_TOKENS = 800
#: What a request asks for, picked out of it: roles, settings, a contact, an option, a target.
EXTRACTION_TOKENS = 400
#: A name or a word: which voice channel to join.
SHORT_ANSWER_TOKENS = 50

# English runs at about 1.3 tokens a word, and models asked for "at most N words" often write
# more: twice the words, and room for the XML around the answer.
_TOKENS_PER_WORD = 2
_WRAPPING_TOKENS = 200


def words_tokens(max_words: int) -> int:
    """The bound for an answer asked to be at most ``max_words`` words long."""
    return max(0, max_words) * _TOKENS_PER_WORD + _WRAPPING_TOKENS
