"""What loading one character file gave: the character, or every problem at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bot.config.character._schema import Character
from bot.kernel.errors import CharacterError, Problem

__all__ = ["LoadResult"]


@dataclass(slots=True)
class LoadResult:
    """The outcome of loading one character file."""

    source: Path
    character: Character | None = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)
    """troupe platform names the character runs on (``discord``, ``telegram``)."""
    plugins: list[str] = field(default_factory=list)
    """troupe plugin names, in file order, without duplicates."""
    model_preset: str | None = None
    """``ollama`` or ``openrouter`` when the file selects one of those, else ``None``."""
    missing_plugins: list[str] = field(default_factory=list)
    """Plugins the file lists that troupe does not have; the character runs without them."""

    @property
    def ok(self) -> bool:
        return self.character is not None and not self.problems

    def raise_for_problems(self) -> Character:
        """The character, or :class:`~bot.kernel.errors.CharacterError` listing every problem."""
        if self.problems or self.character is None:
            raise CharacterError(str(self.source), self.problems)
        return self.character
