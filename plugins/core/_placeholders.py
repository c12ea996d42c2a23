"""The stand-ins a template's example answer shows, which a weak model copies as its answer.

A template shows the shape of the answer with stand-ins: ``<text>the message to send</text>``,
``<actions>FIRST_ACTION,SECOND_ACTION</actions>``. A small model copies them, and a copied
stand-in sent as a reply comes back in later prompts, where it is copied again. They are read
from the template in use (a character's own included), so a copied one counts as no answer:
never sent, never stored.

What counts: every value of the example's ``<response>`` block that describes rather than shows
(several words, or alternatives such as ``fact|opinion|status``), and every name in the list
keys (``actions``, ``providers``). A single word is a real answer the example happens to show
(``ADMIN``, ``email``), and a value that is only a template tag (``{{agentName}}``) is filled in.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._mustache import render
from ._parse import LIST_KEYS, parse_response

__all__ = ["Placeholders"]

_log = logging.getLogger(__name__)

_EXAMPLE_OPEN = re.compile(r"<response(?:\s[^<>]*)?>", re.I)
_EXAMPLE_CLOSE = re.compile(r"</response\s*>", re.I)
_ONLY_A_TAG = re.compile(r"\{\{\{?[^{}]*\}?\}\}")
_AROUND_SEPARATORS = re.compile(r"\s*([,|;])\s*")
_MAX_DEPTH = 16


def _normal(value: str) -> str:
    """Case, spacing and the quotes or full stop a model adds around a copy do not matter."""
    text = " ".join(value.casefold().split()).strip(" .!?\"'`")
    return _AROUND_SEPARATORS.sub(r"\1", text)


def _leaves(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of every string in a parsed answer, however deep."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for name, inner in value.items():
            yield from _leaves(inner, str(name), depth + 1)
    elif isinstance(value, list):
        for inner in value:
            yield from _leaves(inner, key, depth + 1)
    elif isinstance(value, str):
        yield key, value


def _describes(key: str, value: str) -> bool:
    return key in LIST_KEYS or bool(re.search(r"[\s|]", value.strip()))


@dataclass(frozen=True, slots=True)
class Placeholders:
    """The stand-ins of one template, as filled in for one prompt."""

    values: frozenset[str]
    """Normalised: lower case, single spaces, no spaces around commas."""

    @classmethod
    def of(cls, template_text: str, values: Mapping[str, object]) -> Placeholders:
        """The stand-ins of the first ``<response>`` block in ``template_text`` (none when it has
        none), with template tags in them (``what {{agentName}} is thinking``) filled from
        ``values``."""
        opener = _EXAMPLE_OPEN.search(template_text)
        closer = _EXAMPLE_CLOSE.search(template_text, opener.end()) if opener else None
        if opener is None or closer is None:
            return cls(frozenset())
        example = parse_response(template_text[opener.start() : closer.end()]) or {}
        found: set[str] = set()
        for key, raw in _leaves(example):
            if _ONLY_A_TAG.fullmatch(raw.strip()) or not _describes(key, raw):
                continue
            found.add(_normal(render(raw, values)))
        # A copied list also lands whole in a text key: "FIRST_ACTION,SECOND_ACTION".
        for key in LIST_KEYS & example.keys():
            names = example[key]
            if isinstance(names, list) and names:
                found.add(_normal(",".join(render(str(n), values) for n in names)))
        found.discard("")
        return cls(frozenset(found))

    def copied(self, value: object) -> bool:
        """Whether ``value`` is one of the stand-ins."""
        return isinstance(value, str) and bool(value.strip()) and _normal(value) in self.values

    def may_become(self, partial: str) -> bool:
        """Whether ``partial``, an answer still being written, may yet turn out to be a stand-in."""
        start = _normal(partial)
        return any(v.startswith(start) for v in self.values)

    def without(self, parsed: Mapping[str, Any] | None, *, agent: str, kind: str) -> dict[str, Any] | None:
        """``parsed`` with every copied stand-in taken out (a string becomes empty, a list loses
        the item); ``None`` when nothing else was in it. What was taken out is logged."""
        if not parsed:
            return None
        dropped: list[str] = []
        cleaned = self._clean(parsed, dropped, 0)
        if dropped:
            _log.info(
                "%s: %s: the model copied the template's example (%s); not taken as an answer",
                agent,
                kind,
                ", ".join(repr(d) for d in dropped),
            )
        assert isinstance(cleaned, dict)
        return cleaned if any(v.strip() for _, v in _leaves(cleaned)) else None

    def _clean(self, value: Any, dropped: list[str], depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return value
        if isinstance(value, Mapping):
            return {key: self._clean(inner, dropped, depth + 1) for key, inner in value.items()}
        if isinstance(value, list):
            kept = []
            for inner in value:
                if self.copied(inner):
                    dropped.append(inner)
                else:
                    kept.append(self._clean(inner, dropped, depth + 1))
            return kept
        if self.copied(value):
            dropped.append(value)
            return ""
        return value
