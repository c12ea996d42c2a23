"""The small mustache renderer that fills prompt templates.

The renderer covers what elizaOS templates use: ``{{name}}`` (unescaped;
``{{{name}}}`` means the same), dotted paths, ``{{#if}}``/``{{#unless}}`` with ``{{else}}``,
``{{#each}}`` with ``{{this}}``/``{{@index}}``/``{{@key}}``, and ``{{! comments }}``. It never
evaluates anything: a tag is a name to look up, nothing more.

Value rendering: ``None`` and missing keys → ``""``; ``True``/``False`` → ``true``/``false`` (as
Handlebars prints them); lists and tuples → items joined with ``", "``; mappings → JSON.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

__all__ = ["fill_placeholders", "render"]

# -- speaker placeholders ------------------------------------------------------------------

# {{nameN}}, {{userN}} and {{user}} stand for conversation participants; {{user}} is participant 1,
# and {{userN}} is the same participant as {{nameN}} (elizaOS v0 files say user, v1 files say name).
_PLACEHOLDER = re.compile(r"\{\{\s*(?:name([1-9][0-9]{0,2})|user([1-9][0-9]{0,2})?)\s*\}\}")
_PLACEHOLDER_NAME = re.compile(r"(?:name[1-9][0-9]{0,2}|user(?:[1-9][0-9]{0,2})?)")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def fill_placeholders(text: str, rng: random.Random, names: dict[int, str]) -> str:
    """Replace speaker placeholders with random 6-char base36 names.

    ``names`` maps participant number → name and is filled as new participants appear, so one
    dict shared across calls keeps a participant's name the same.
    """

    def name_for(match: re.Match[str]) -> str:
        index = int(match.group(1) or match.group(2) or 1)
        if index not in names:
            taken = set(names.values())
            name = "".join(rng.choices(_BASE36, k=6))
            while name in taken:
                name = "".join(rng.choices(_BASE36, k=6))
            names[index] = name
        return names[index]

    return _PLACEHOLDER.sub(name_for, text)


# -- parsing templates ------------------------------------------------------------------------

# Tag bodies may not contain braces, so a stray "{{" in prose never swallows the text after it.
_TAG = re.compile(r"\{\{!--.*?--\}\}|\{\{![^{}]*\}\}|\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\}", re.S)
_PATH = re.compile(r"(?:this|@?[A-Za-z_][\w-]*)(?:\.[\w-]+)*")
_SECTIONS = frozenset({"if", "unless", "each"})
# Deeper sections render literally: keeps recursion bounded whatever a character file holds.
_MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # text, var, open, close, else, comment
    raw: str
    name: str = ""  # section kind for open/close
    path: str = ""


@dataclass(frozen=True, slots=True)
class _Var:
    path: str
    raw: str


@dataclass(frozen=True, slots=True)
class _Section:
    kind: str
    path: str
    body: tuple[_Node, ...]
    alt: tuple[_Node, ...]


#: A compiled template is a tuple of these: literal text, a value to look up, a section.
_Node: TypeAlias = str | _Var | _Section


def _tokenize(template: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    for match in _TAG.finditer(template):
        if match.start() > pos:
            tokens.append(_Token("text", template[pos : match.start()]))
        pos = match.end()
        raw = match.group(0)
        body = match.group(1) if match.group(1) is not None else match.group(2)
        if body is None:
            continue  # a comment
        body = body.strip()
        if match.group(1) is None and body[:1] in ("#", "/"):
            kind, _, arg = body[1:].strip().partition(" ")
            arg = arg.strip()
            if body[0] == "#" and kind in _SECTIONS and _PATH.fullmatch(arg):
                tokens.append(_Token("open", raw, kind, arg))
            elif body[0] == "/" and kind in _SECTIONS and not arg:
                tokens.append(_Token("close", raw, kind))
            else:
                tokens.append(_Token("text", raw))
        elif match.group(1) is None and body == "else":
            tokens.append(_Token("else", raw))
        elif _PATH.fullmatch(body):
            tokens.append(_Token("var", raw, path=body))
        else:
            tokens.append(_Token("text", raw))  # helpers, "else if": not supported, kept as written
    if pos < len(template):
        tokens.append(_Token("text", template[pos:]))
    return tokens


def _pair_sections(tokens: list[_Token]) -> dict[int, int]:
    """Match each section opener to its closer; whatever stays unmatched renders literally."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, token in enumerate(tokens):
        if token.kind == "open":
            stack.append(i)
        elif token.kind == "close":
            for depth in range(len(stack) - 1, -1, -1):
                if tokens[stack[depth]].name == token.name:
                    pairs[stack[depth]] = i
                    del stack[depth:]  # openers inside it were never closed
                    break
    return pairs


@lru_cache(maxsize=128)
def _compile(template: str) -> tuple[_Node, ...]:
    tokens = _tokenize(template)
    pairs = _pair_sections(tokens)

    def build(lo: int, hi: int, in_section: bool, depth: int) -> tuple[tuple[_Node, ...], tuple[_Node, ...]]:
        main: list[_Node] = []
        alt: list[_Node] | None = None
        out = main
        i = lo
        while i < hi:
            token = tokens[i]
            if token.kind == "open" and i in pairs and depth < _MAX_DEPTH:
                end = pairs[i]
                body, other = build(i + 1, end, True, depth + 1)
                out.append(_Section(token.name, token.path, body, other))
                i = end + 1
                continue
            if token.kind == "else" and in_section and alt is None:
                alt = out = []
            elif token.kind == "var":
                out.append(_Var(token.path, token.raw))
            else:
                out.append(token.raw)
            i += 1
        return tuple(main), tuple(alt or ())

    return build(0, len(tokens), False, 0)[0]


# -- rendering ---------------------------------------------------------------------------------

_MISSING = object()


@dataclass(frozen=True, slots=True)
class _Frame:
    this: object
    data: Mapping[str, object]


def _lookup(path: str, frames: list[_Frame]) -> object:
    first, *rest = path.split(".")
    if first == "this":
        value = frames[-1].this
    elif first.startswith("@"):
        value = frames[-1].data.get(first, _MISSING)
    else:
        # Look outwards through enclosing {{#each}} items, then the top-level values.
        for frame in reversed(frames):
            if isinstance(frame.this, Mapping) and first in frame.this:
                value = frame.this[first]
                break
        else:
            return _MISSING
    for part in rest:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _text(value: object) -> str:
    if value is None or value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(item) for item in value)
    return str(value)


def _truthy(value: object) -> bool:
    return value is not _MISSING and bool(value)


def _items(value: object) -> list[tuple[object, object]]:
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return []  # a string or a scalar has nothing to iterate: {{else}} renders


def _render_nodes(nodes: tuple[_Node, ...], frames: list[_Frame], out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, _Var):
            value = _lookup(node.path, frames)
            if value is _MISSING and _PLACEHOLDER_NAME.fullmatch(node.path):
                out.append(node.raw)  # left for the speaker-name pass
            else:
                out.append(_text(value))
        elif node.kind == "each":
            items = _items(_lookup(node.path, frames))
            if not items:
                _render_nodes(node.alt, frames, out)
            for index, (key, item) in enumerate(items):
                data = {"@index": index, "@key": key, "@first": index == 0, "@last": index == len(items) - 1}
                _render_nodes(node.body, [*frames, _Frame(item, data)], out)
        else:
            shown = _truthy(_lookup(node.path, frames)) == (node.kind == "if")
            _render_nodes(node.body if shown else node.alt, frames, out)


def render(template: str, values: Mapping[str, object], *, rng: random.Random | None = None) -> str:
    """Fill ``template`` from ``values``, then give speaker placeholders random names.

    Missing keys render ``""``. ``{{name1}}``…, ``{{user}}`` and ``{{userN}}`` that are not keys
    of ``values`` — in the template or inside a substituted value — become random 6-char base36
    names, the same name for the same placeholder throughout this render (drawn from ``rng``).

    Never raises for a malformed template (character files may override templates): a section
    that is never closed, a closer without an opener, a stray ``{{else}}``, an unsupported helper
    such as ``{{else if x}}`` or ``{{#with x}}`` all render literally, as written.
    """
    out: list[str] = []
    _render_nodes(_compile(template), [_Frame(values, {})], out)
    return fill_placeholders("".join(out), rng or random.Random(), {})
