"""The CHARACTER provider's text: who the character is, sampled afresh for every prompt.

Follows elizaOS plugin-bootstrap's ``providers/character.ts``: a shuffled
slice of the bio, one adjective, one topic plus up to five others, the style directions for chat
or posts, and a few example conversations (or posts). All randomness comes from the ``rng``
passed in, so a seeded ``random.Random`` gives byte-identical output.

Unlike upstream, the text leaves out the system prompt: every model call sends it as the system
message already (bot/kernel/models.py), and a second copy in the prompt only costs tokens. It stays in
the values (``system``) for templates that name it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._mustache import fill_placeholders

if TYPE_CHECKING:
    from bot.sdk import Character

__all__ = ["CharacterContext", "character_context"]

_BIO_LINES = 10
_LORE_LINES = 10
_OTHER_TOPICS = 5
_CONVERSATIONS = 5
_POSTS = 50


@dataclass(frozen=True, slots=True)
class CharacterContext:
    """What the CHARACTER provider contributes to a prompt."""

    text: str
    """The sections that are not empty, joined with a blank line."""
    sections: tuple[str, ...] = ()
    """Those sections, in order (``examples`` among them: what a prompt short of room gives up)."""
    values: dict[str, str] = field(default_factory=dict)
    """Template values: ``agentName``, ``bio``, ``topic``, ``examples`` and the rest, plus ``lore``."""


def _header(title: str, body: str) -> str:
    # elizaOS's addHeader, trailing newline included, so prompts match upstream's layout.
    return f"{title}\n{body}\n" if body else ""


def _sample(items: Sequence[str], count: int, rng: random.Random) -> list[str]:
    shuffled = list(items)
    rng.shuffle(shuffled)
    return shuffled[:count]


def _and_list(items: Sequence[str]) -> str:
    """``a, b, c and d``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _conversations(character: Character, rng: random.Random) -> str:
    conversations = list(character.message_examples)
    rng.shuffle(conversations)
    rendered = []
    for conversation in conversations[:_CONVERSATIONS]:
        names: dict[int, str] = {}  # one set of speaker names per conversation
        lines = []
        for message in conversation:
            line = f"{message.name}: {message.content.text or ''}"
            if message.content.actions:
                line += f" (actions: {', '.join(message.content.actions)})"
            lines.append(fill_placeholders(line, rng, names))
        rendered.append("\n".join(lines))
    return "\n\n".join(rendered)


def character_context(character: Character, *, rng: random.Random, is_post: bool = False) -> CharacterContext:
    """Sample the character into prompt text and template values.

    ``is_post`` selects the post context (a FEED room): post examples and
    ``style.all + style.post`` instead of example conversations and ``style.all + style.chat``.
    Reads only the character's persona fields: never settings, secrets or templates.
    """
    name = character.name

    bio_lines = [line for line in character.bio if line.strip()]
    bio = _header(f"# About {name}", " ".join(_sample(bio_lines, _BIO_LINES, rng)))

    topic = rng.choice(character.topics) if character.topics else ""
    others = _sample([t for t in character.topics if t != topic], _OTHER_TOPICS, rng)
    topics = f"{name} is also interested in {_and_list(others)}" if others else ""

    adjective = rng.choice(character.adjectives) if character.adjectives else ""

    post_examples = message_examples = post_directions = message_directions = ""
    if is_post:
        posts = "\n".join(_sample(character.post_examples, _POSTS, rng))
        if posts.replace("\n", ""):
            post_examples = _header(f"# Example Posts for {name}", posts)
        post_directions = _header(
            f"# Post Directions for {name}", "\n".join([*character.style.all, *character.style.post])
        )
    else:
        conversations = _conversations(character, rng)
        if conversations.replace("\n", ""):
            message_examples = _header(f"# Example Conversations for {name}", conversations)
        message_directions = _header(
            f"# Message Directions for {name}", "\n".join([*character.style.all, *character.style.chat])
        )
    directions = post_directions if is_post else message_directions
    examples = post_examples if is_post else message_examples

    # Not in upstream v1; sampled last so the other sections draw the same numbers with or without lore.
    lore = _header(f"# Lore of {name}", "\n".join(_sample(character.lore, _LORE_LINES, rng)))
    system = character.system or ""

    sections = [
        bio,
        lore,
        f"{name} is {adjective}" if adjective else "",
        f"{name} is currently interested in {topic}" if topic else "",
        topics,
        directions,
        examples,
    ]
    values = {
        "agentName": name,
        "bio": bio,
        "system": system,
        "topic": topic,
        "topics": topics,
        "adjective": adjective,
        "messageDirections": message_directions,
        "postDirections": post_directions,
        "directions": directions,
        "examples": examples,
        "characterPostExamples": post_examples,
        "characterMessageExamples": message_examples,
        "lore": lore,
    }
    shown = tuple(s for s in sections if s)
    return CharacterContext(text="\n\n".join(shown), sections=shown, values=values)
