"""Characters: the JSON file that defines one AI character, validated.

The schema is elizaOS's (name, bio, system, templates, adjectives, topics, knowledge,
messageExamples, postExamples, style, plugins, settings, settings.secrets, secrets), and files
written for elizaOS load unchanged, including the older format many published characters use
(``clients``, ``modelProvider``, ``lore``, message examples keyed by ``user``). Every other field
of either generation (``twitterSpaces``, ``people`` …) is known and kept; a plugin troupe does not
have is a warning and the character starts without it, as elizaOS starts an agent whose plugin
failed to import.

Loading never raises a traceback at the user, whatever the file holds: every problem becomes a
:class:`~bot.kernel.errors.Problem` with the JSON path of the field and what to do. See :func:`load_character`.
"""

from __future__ import annotations

from bot.config.character._finding import CharacterFiles, find_character, scan_character_files
from bot.config.character._loading import load_character, load_characters
from bot.config.character._reading import MAX_DEPTH, MAX_FILE_BYTES
from bot.config.character._result import LoadResult
from bot.config.character._schema import ELIZAOS_FIELDS, Character, ExampleMessage, KnowledgeSource, Style

__all__ = [
    "Character",
    "CharacterFiles",
    "ELIZAOS_FIELDS",
    "ExampleMessage",
    "KnowledgeSource",
    "LoadResult",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "Style",
    "find_character",
    "load_character",
    "load_characters",
    "scan_character_files",
]
