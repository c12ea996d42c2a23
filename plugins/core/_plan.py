"""What the large model planned for a message: its thought, the actions, the providers it asked
to see, the reply's text (and what to draw), read from its parsed answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What the large model planned for a message."""

    thought: str
    actions: list[str]
    """Settled: IGNORE comes alone or not at all."""
    providers: list[str]
    """Providers the model asked to see before the actions run."""
    text: str
    image_prompt: str = ""
    """What to draw, when the actions include GENERATE_IMAGE."""

    @classmethod
    def of(cls, parsed: Mapping[str, Any] | None) -> Plan | None:
        """The plan in a parsed answer; None when it plans nothing (no actions, no text)."""
        if not parsed or not (parsed.get("actions") or parsed.get("text")):
            return None
        text = str(parsed.get("text") or "")
        return cls(
            thought=str(parsed.get("thought") or ""),
            actions=_settle_actions([str(a) for a in parsed.get("actions") or [] if a], text),
            providers=[str(p) for p in parsed.get("providers") or []],
            text=text,
            image_prompt=str(parsed.get("imagePrompt") or "").strip(),
        )


def _settle_actions(actions: list[str], text: str) -> list[str]:
    """IGNORE only makes sense alone: with text, drop it; without, keep only it."""
    text = text.strip()
    if not actions:
        return ["REPLY"] if text else ["IGNORE"]
    if len(actions) > 1 and any(a.upper() == "IGNORE" for a in actions):
        if not text:
            return ["IGNORE"]
        actions = [a for a in actions if a.upper() != "IGNORE"] or ["REPLY"]
    return actions
