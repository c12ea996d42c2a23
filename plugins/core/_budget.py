"""Prompts built to a token budget: the model's context window, less the reply and the system
prompt, filled by the most useful parts.

A prompt is a template and its values; some values are made of :class:`Section` s of
:class:`Piece` s, each marked with what it is (:class:`Cut`). While the rendered prompt is over
the budget (by :func:`~plugins.core._tokens.estimate_tokens`), pieces go in this order:

1. older messages of the conversation, oldest first;
2. example conversations and posts (the character's, the actions');
3. other long sections (knowledge, facts, relationships …), longest first;
4. the actions' descriptions (their names stay in the prompt);
5. the message being answered is shortened, with a note saying so; never dropped.

The character's core (bio, directions), the rules and the output format are never cut: a prompt
that is still over the budget goes as it is, and the server's refusal says so
(:class:`~bot.kernel.errors.ModelContextExceeded`). :class:`FittedPrompt` answers such a refusal by
building the prompt again, smaller, once.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from bot.sdk import ModelContextExceeded, ModelType, ResponseSchema, State

from ._prompts import render, template
from ._schemas import schema_for
from ._tokens import estimate_tokens

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "Cut",
    "fit_prompt",
    "FittedPrompt",
    "Piece",
    "prompt_budget",
    "prompt_for",
    "provider_sections",
    "reply_reserve",
    "Section",
    "sections_of",
]

_log = logging.getLogger(__name__)


# What the chat format adds around the system prompt and the prompt (role markers, a template's
# special tokens), and what the estimate may miss: kept free.
_OVERHEAD = 64
# Below this a prompt cannot say anything useful; a budget is never smaller.
_MIN_BUDGET = 256
# A reply takes at most 1/_REPLY_SHARE of the window; the newest message keeps at least
# 1/_NEWEST_SHARE of the budget when it has to be shortened.
_REPLY_SHARE = 4
_NEWEST_SHARE = 4
# The window of a server that refused a prompt without saying its size: the smallest in common
# use (llama.cpp's default), so the one retry fits.
_SMALLEST_WINDOW = 2048
# Re-renders while fitting: each pass cuts what the last one was over by; a few settle it.
_PASSES = 4
_CUT_NOTE = "[… {count} more characters of this message were cut to fit the model's context]"
_SECTIONS = "sections"  # where a provider's result keeps its sections (``ProviderResult.data``)


class Cut(IntEnum):
    """What a piece of a prompt is, in the order pieces are given up to fit the budget."""

    OLD_MESSAGE = 1
    EXAMPLES = 2
    LONG_SECTION = 3
    DESCRIPTIONS = 4
    NEWEST_MESSAGE = 5
    """Shortened, never dropped."""
    NEVER = 6


@dataclass(slots=True)
class Piece:
    """A part of a section that is cut as one (``text`` emptied, or shortened)."""

    text: str
    cut: Cut = Cut.NEVER


@dataclass(slots=True)
class Section:
    """Pieces joined by ``joiner`` under an optional heading (shown while a piece remains);
    ``before`` is what separates it from the section before it in its value."""

    pieces: list[Piece]
    heading: str = ""
    joiner: str = "\n"
    before: str = "\n\n"

    def render(self) -> str:
        body = self.joiner.join(p.text for p in self.pieces if p.text)
        return f"{self.heading}\n{body}" if self.heading and body else body

    @classmethod
    def of(cls, text: str, cut: Cut = Cut.NEVER, *, before: str = "\n\n") -> Section:
        return cls([Piece(text, cut)], before=before)


def _join(sections: Sequence[Section]) -> str:
    """The sections' texts, each after its separator; an empty one hands its separator on when it
    is the shorter (a provider's first section, joined to the one before by a single line break)."""
    out = ""
    pending: str | None = None
    for section in sections:
        before = section.before if pending is None or len(section.before) < len(pending) else pending
        text = section.render()
        if not text:
            pending = before
            continue
        out = f"{out}{before}{text}" if out else text
        pending = None
    return out


def sections_of(name: str, text: str, data: Mapping[str, object], *, before: str) -> list[Section]:
    """The sections of one provider's text: those it gave (``data["sections"]``), else the whole
    text as one, never cut when ``name`` is protected and a long section otherwise."""
    given = data.get(_SECTIONS)
    if isinstance(given, list) and given and all(isinstance(s, Section) for s in given):
        copied = [replace(s, pieces=[replace(p) for p in s.pieces]) for s in given]
        copied[0].before = before
        return copied
    return [Section.of(text, Cut.NEVER if name in _PROTECTED else Cut.LONG_SECTION, before=before)]


# Providers whose text is the character's core or what the model must know to answer at all.
_PROTECTED = frozenset({"ACTIONS", "CHARACTER", "ANXIETY", "TIME"})


def provider_sections(state: State) -> list[Section]:
    """``state.values["providers"]`` as sections, provider by provider, as the state joined them."""
    sections: list[Section] = []
    for name in state.order:
        result = state.providers.get(name)
        if result is not None and result.text:
            sections += sections_of(name, result.text, result.data, before="\n")
    return sections


def prompt_budget(runtime: AgentRuntime, kind: ModelType, reply_tokens: int) -> int | None:
    """How many tokens the prompt of a ``kind`` call may take: the context window its model's
    plugin says, less the reply (:func:`reply_reserve`), the system prompt and the chat format's
    overhead; None when the window is unknown (nothing is cut)."""
    window = runtime.context_length(kind)
    return None if window is None else _window_budget(runtime, reply_tokens, window)


def _window_budget(runtime: AgentRuntime, reply_tokens: int, window: int) -> int:
    system = estimate_tokens(runtime.character.system or "")
    return max(window - reply_reserve(reply_tokens, window) - system - _OVERHEAD, _MIN_BUDGET)


def reply_reserve(reply_tokens: int, window: int) -> int:
    """What of ``window`` is kept for the reply: ``reply_tokens``, but no more than a quarter of a
    small window (2,048 tokens cannot hold a character, its rules and 1,024 tokens of reply)."""
    return min(reply_tokens, window // _REPLY_SHARE)


def fit_prompt(
    template: str,
    values: Mapping[str, object],
    slots: Mapping[str, Sequence[Section]],
    budget: int | None,
    *,
    rng: random.Random | None = None,
) -> str:
    """``template`` rendered from ``values``, each key of ``slots`` the join of its sections,
    cut to ``budget`` tokens as the module docstring says (no cut when ``budget`` is None)."""
    owned = {key: [replace(s, pieces=[replace(p) for p in s.pieces]) for s in value] for key, value in slots.items()}

    def rendered() -> str:
        filled = {**values, **{key: _join(sections) for key, sections in owned.items()}}
        return render(template, filled, rng=rng)

    prompt = rendered()
    if budget is None:
        return prompt
    for _ in range(_PASSES):
        over = estimate_tokens(prompt) - budget
        if over <= 0:
            break
        pieces = [p for sections in owned.values() for s in sections for p in s.pieces if p.text]
        if not _cut(pieces, over, floor=budget // _NEWEST_SHARE):
            break  # only what is never cut is left
        prompt = rendered()
    return prompt


def _cut(pieces: list[Piece], over: int, *, floor: int) -> bool:
    """Take ``over`` tokens out of ``pieces`` in the order of :class:`Cut`, the newest message
    kept to ``floor`` tokens at least; whether anything was cut."""
    cut_any = False
    for kind in (Cut.OLD_MESSAGE, Cut.EXAMPLES, Cut.LONG_SECTION, Cut.DESCRIPTIONS):
        candidates = [p for p in pieces if p.cut is kind]
        if kind is not Cut.OLD_MESSAGE:  # the conversation goes oldest first, the rest longest first
            candidates.sort(key=lambda p: -len(p.text))
        for piece in candidates:
            if over <= 0:
                return True
            over -= estimate_tokens(piece.text) + 1
            piece.text = ""
            cut_any = True
    if over <= 0:
        return cut_any
    for piece in pieces:
        if piece.cut is Cut.NEWEST_MESSAGE and over > 0:
            before = len(piece.text)
            piece.text = _shorten(piece.text, over, floor)
            cut_any = cut_any or len(piece.text) < before
            over = 0
    return cut_any


def _shorten(text: str, over: int, floor: int) -> str:
    """``text`` shortened by about ``over`` tokens and the note's length (to ``floor`` tokens
    at the least), with the note."""
    tokens = estimate_tokens(text)
    note_tokens = estimate_tokens(_CUT_NOTE.format(count=len(text)))
    keep_tokens = max(tokens - over - note_tokens, floor)
    if keep_tokens >= tokens:
        return text
    keep = max(0, len(text) * max(keep_tokens, 0) // max(tokens, 1))
    kept = text[:keep]
    if keep < len(text):
        return f"{kept} {_CUT_NOTE.format(count=len(text) - keep)}"
    return text


@dataclass(slots=True)
class FittedPrompt:
    """A prompt for one model call, built to the budget, and built again smaller, once, when the
    server refuses it as too long for the context window. The reply's bound goes with it
    (:meth:`params`): on a small window the budget left the reply less than ``reply_tokens``, and
    a server counts the bound as part of the request."""

    runtime: AgentRuntime
    kind: ModelType
    reply_tokens: int
    build: Callable[[int | None], str]
    """The prompt for a budget (None: no budget)."""
    schema: ResponseSchema | None = None
    """The JSON schema the answer is asked to follow (bot/kernel/models.py), if any."""
    prompt: str = field(init=False)
    window: int | None = field(init=False)
    """The context window the prompt was built to; None when unknown."""
    budget: int | None = field(init=False)
    _shrunk: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.window = self.runtime.context_length(self.kind)
        self.budget = None if self.window is None else _window_budget(self.runtime, self.reply_tokens, self.window)
        self.prompt = self.build(self.budget)

    @property
    def max_tokens(self) -> int:
        """The bound on the reply the budget left room for (``reply_tokens``, less on a small window)."""
        return self.reply_tokens if self.window is None else reply_reserve(self.reply_tokens, self.window)

    def params(self, **extra: object) -> dict[str, Any]:
        """What ``use_model`` is given: the prompt, the reply's bound, its schema and ``extra``."""
        params = {**extra, "prompt": self.prompt, "max_tokens": self.max_tokens}
        if self.schema is not None:
            params["schema"] = self.schema
        return params

    def shrink(self, refusal: ModelContextExceeded) -> bool:
        """Build the prompt again to the window the server named, else to half the size of the
        one it refused and no more than the smallest window in common use; False when that was
        done already (the refusal then stands)."""
        if self._shrunk:
            return False
        self._shrunk = True
        size = estimate_tokens(self.prompt)
        self.window = (
            refusal.limit if refusal.limit is not None else min(self.window or _SMALLEST_WINDOW, _SMALLEST_WINDOW)
        )
        fits = _window_budget(self.runtime, self.reply_tokens, self.window)
        # Half the size when the named window does not make it smaller (the estimate was low), and
        # when the server did not say (at most what the smallest window takes).
        smaller = fits if refusal.limit is not None and fits < size else min(size // 2, fits)
        _log.info(
            "%s: the model refused a prompt of about %d tokens as too long; building one of %d",
            self.runtime.character.name,
            size,
            smaller,
        )
        self.budget = smaller
        self.prompt = self.build(smaller)
        return True

    async def ask(self) -> Any:
        """Call the model with the prompt; refused as too long, once more with a smaller one.
        Raises what ``use_model`` raises."""
        try:
            return await self.runtime.use_model(self.kind, self.params())
        except ModelContextExceeded as exc:
            if not self.shrink(exc):
                raise
        return await self.runtime.use_model(self.kind, self.params())


def prompt_for(
    runtime: AgentRuntime,
    state: State,
    name: str,
    kind: ModelType,
    reply_tokens: int,
    values: Mapping[str, object] | None = None,
    *,
    schema: ResponseSchema | None = None,
) -> FittedPrompt:
    """The character's template ``name`` over ``state`` (and ``values``), its providers cut to
    the budget of ``kind``'s model; the answer asked to follow ``schema`` unless the character
    replaced the template."""
    templates = runtime.character.templates
    text = template(templates, name)
    merged = {**state.values, **(values or {})}
    slots = {"providers": provider_sections(state)}
    return FittedPrompt(
        runtime,
        kind,
        reply_tokens,
        lambda budget: fit_prompt(text, merged, slots, budget, rng=runtime.rng),
        schema_for(templates, name, schema) if schema is not None else None,
    )
