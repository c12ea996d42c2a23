"""What the large model planned for a message: its thought, the actions, the providers it asked
to see, the reply's text (what to draw, the emoji to react with), read from its parsed answer."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
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
    emoji: str = ""
    """The reaction to put on the message, when the actions include REACT."""

    @classmethod
    def of(cls, parsed: Mapping[str, Any] | None) -> Plan | None:
        """The plan in a parsed answer; None when it plans nothing (no actions, no text), or
        only to reply and has nothing to say."""
        if not parsed or not (parsed.get("actions") or parsed.get("text")):
            return None
        text = str(parsed.get("text") or "")
        if not text.strip() and all(str(a).strip().upper() == "REPLY" for a in parsed["actions"]):
            return None
        return cls(
            thought=str(parsed.get("thought") or ""),
            actions=_settle_actions([str(a) for a in parsed.get("actions") or [] if a], text),
            providers=[str(p) for p in parsed.get("providers") or []],
            text=text,
            image_prompt=str(parsed.get("imagePrompt") or "").strip(),
            emoji=str(parsed.get("emoji") or "").strip(),
        )

    def without_actions(self, dropped: Collection[str]) -> Plan | None:
        """This plan without ``dropped``; REPLY with its text when no action is left, ``None``
        when it has no text either."""
        kept = [a for a in self.actions if a not in dropped]
        if not kept:
            if not self.text.strip():
                return None
            kept = ["REPLY"]
        return replace(self, actions=kept)


def _settle_actions(actions: list[str], text: str) -> list[str]:
    """IGNORE only makes sense alone: with text, drop it; without, keep only it. NONE means no
    action beyond replying: with text and nothing else to do, the text is the reply."""
    text = text.strip()
    if not actions:
        return ["REPLY"] if text else ["IGNORE"]
    if len(actions) > 1 and any(a.upper() == "IGNORE" for a in actions):
        if not text:
            return ["IGNORE"]
        actions = [a for a in actions if a.upper() != "IGNORE"] or ["REPLY"]
    if text and all(a.upper() == "NONE" for a in actions):
        return ["REPLY"]
    return actions
