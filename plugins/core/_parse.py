"""Reading what a model answered: the XML-ish ``<response>`` block, or JSON.

Models are asked for ``<response><key>value</key>…</response>`` (elizaOS's format) and answer
with whatever they like around it: prose, code fences, ``<think>`` sections, a missing wrapper,
entities, sometimes JSON instead. :func:`parse_response` reads all of those and never raises.
"""

from __future__ import annotations

import json
import logging
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LIST_KEYS", "parse_response"]

_log = logging.getLogger(__name__)

LIST_KEYS = frozenset({"actions", "providers", "evaluators"})
# Free text: never read as nested elements, even when the model wrote markup inside it.
_TEXT_KEYS = frozenset(
    {"text", "thought", "message", "reasoning", "post", "claim", "description", "summary", "imagePrompt", "emoji"}
)
# Always lists, so a single <fact> and an empty <facts/> have the same shape as many.
_COLLECTION_KEYS = frozenset({"facts", "relationships", "assignments"})
_MAX_DEPTH = 16
_MAX_JSON_STARTS = 20

_OPEN = re.compile(r"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*?)?(/?)>")
_CLOSE = re.compile(r"</([A-Za-z_][\w.:-]*)\s*>")
_RESPONSE_OPEN = re.compile(r"<response(?:\s[^<>]*)?>", re.I)
_RESPONSE_CLOSE = re.compile(r"</response\s*>", re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?(?:\s[^<>]*)?>", re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?\s*>", re.I)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_ENTITY = re.compile(r"&(lt|gt|amp|quot|apos|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _entity(match: re.Match[str]) -> str:
    ref = match.group(1)
    if ref in _NAMED:
        return _NAMED[ref]
    code = int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:])
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF or code == 0:
        return match.group(0)
    return chr(code)


def _unescape(text: str) -> str:
    # Only XML's entities and numeric references: html.unescape would turn "&notes" into "¬es".
    return _ENTITY.sub(_entity, text)


def _drop_thinking(text: str) -> str:
    # A scan, not one regex: a lazy ".*?" between the tags is quadratic on many unclosed openers.
    kept: list[str] = []
    pos = 0
    while (opener := _THINK_OPEN.search(text, pos)) is not None:
        closer = _THINK_CLOSE.search(text, opener.end())
        if closer is None:
            break
        kept.append(text[pos : opener.start()])
        pos = closer.end()
    text = "".join(kept) + text[pos:]
    # A lone tag counts only before the answer: inside <response> it is part of the message.
    answer = _RESPONSE_OPEN.search(text)
    closes = list(_THINK_CLOSE.finditer(text, 0, answer.start() if answer else len(text)))
    if closes:  # the opener was cut off (or sent as a separate channel): all before it is thought
        text = text[closes[-1].end() :]
        answer = _RESPONSE_OPEN.search(text)
    opener = _THINK_OPEN.search(text, 0, answer.start() if answer else len(text))
    if opener:  # never closed: thinking runs to the answer, or to the end
        text = text[: opener.start()] + (text[answer.start() :] if answer else "")
    return text


# -- XML ----------------------------------------------------------------------------------------


def _elements(text: str) -> tuple[list[tuple[str, str]], str]:
    """Top-level ``<name>inner</name>`` elements of ``text``, and the text outside them."""
    found: list[tuple[str, str]] = []
    residual: list[str] = []
    # Every closer up front: finding an element's end is a bisect, so no input is quadratic.
    closers: dict[str, list[tuple[int, int]]] = {}
    for close in _CLOSE.finditer(text):
        closers.setdefault(close.group(1), []).append((close.start(), close.end()))
    pos = 0
    while (match := _OPEN.search(text, pos)) is not None:
        name = match.group(1)
        if match.group(2):  # <name/>
            residual.append(text[pos : match.start()])
            found.append((name, ""))
            pos = match.end()
            continue
        spans = closers.get(name, [])
        i = bisect_left(spans, (match.end(), -1))
        if i == len(spans):  # never closed: not an element, just text
            residual.append(text[pos : match.end()])
            pos = match.end()
            continue
        start, end = spans[i]
        residual.append(text[pos : match.start()])
        found.append((name, text[match.end() : start]))
        pos = end
    residual.append(text[pos:])
    return found, "".join(residual)


def _value(name: str, inner: str, depth: int) -> Any:
    stripped = inner.strip()
    cdata = _CDATA.fullmatch(stripped)
    if cdata:
        value: Any = cdata.group(1).strip()
    elif name in _TEXT_KEYS or depth >= _MAX_DEPTH or "<" not in stripped:
        value = _unescape(stripped)
    else:
        children, residual = _elements(stripped)
        value = _group(name, children, depth + 1) if children and not residual.strip() else _unescape(stripped)
    if name in _COLLECTION_KEYS and not isinstance(value, list):
        value = [value] if value else []
    return value


def _plural_of(name: str, child: str) -> bool:
    return name in (child + "s", child + "es") or (child.endswith("y") and name == child[:-1] + "ies")


def _group(name: str, children: list[tuple[str, str]], depth: int) -> Any:
    """Children as a dict (a repeated child → list), or a list when ``name`` is their plural."""
    grouped: dict[str, list[Any]] = {}
    for child, inner in children:
        grouped.setdefault(child, []).append(_value(child, inner, depth))
    if len(grouped) == 1:
        [(child, values)] = grouped.items()
        if _plural_of(name, child):
            return values
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


def _cut_off(text: str) -> tuple[str, str] | None:
    """The free-text element an answer cut off at its token bound was still writing, after all
    its finished ones: its name and what it holds so far."""
    last_close = max((m.end() for m in _CLOSE.finditer(text)), default=0)
    writing = None
    for match in _OPEN.finditer(text, last_close):
        if match.group(1) in _TEXT_KEYS and not match.group(2):
            writing = match
            break
    if writing is None:
        return None
    # Not a half-written closing tag or entity ("…</te", "&am"), nor a half-written sentence.
    so_far = re.sub(r"(?:<[^<>]*|&[#\w]*)$", "", text[writing.end() :])
    sentences = list(_SENTENCE_END.finditer(so_far))
    return writing.group(1), so_far[: sentences[-1].end()] if sentences else so_far


def _from_xml(text: str) -> dict[str, Any] | None:
    opener = _RESPONSE_OPEN.search(text)
    closed = False
    if opener:
        closer = _RESPONSE_CLOSE.search(text, opener.end())
        closed = closer is not None
        # An answer cut off by the token limit still has its finished elements.
        text = text[opener.end() : closer.start() if closer else len(text)]
    children, _ = _elements(text)
    cut = None if closed else _cut_off(text)
    if cut is not None and cut[1].strip() and all(name != cut[0] for name, _ in children):
        children.append(cut)  # the reply so far is still a reply
    if not children:
        return None
    result = _group("response", children, 0)
    return result if isinstance(result, dict) else None


# -- JSON ---------------------------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``, trying a bounded number of ``{`` positions."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(_MAX_JSON_STARTS):
        if start < 0:
            return None
        try:
            value, _end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


@dataclass(slots=True)
class _Cut:
    """Where a JSON text stops short: what it leaves open, and where its members ended."""

    closers: str
    """What closes everything still open at the end, innermost first (``"]}"``)."""
    in_string: bool
    """The text stops inside a string."""
    commas: list[tuple[int, str]]
    """Where a member ended, and what closes the object there."""


def _cut_at(text: str) -> _Cut | None:
    """Where ``text`` stops short of the end of its JSON; None when it does not (a whole object,
    or a broken one)."""
    stack: list[str] = []
    in_string = escaped = False
    commas: list[tuple[int, str]] = []
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack or stack.pop() != char or not stack:
                return None
        elif char == ",":
            commas.append((i, "".join(reversed(stack))))
    return _Cut("".join(reversed(stack)), in_string, commas) if stack else None


def _json_dict(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object with something in it, else None."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def _free_text_so_far(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """An object cut inside its last string, kept only when that string is free text (a name cut
    short is not worth its part), and then to its last whole sentence."""
    if value is None:
        return None
    last = next(reversed(value))
    if last not in _TEXT_KEYS or not isinstance(value[last], str):
        return None
    ends = list(_SENTENCE_END.finditer(value[last]))
    value[last] = value[last][: ends[-1].end()] if ends else value[last]
    return value


def _cut_json(text: str) -> dict[str, Any] | None:
    """A JSON object cut off where the token bound stopped it, closed there: the member being
    written is kept when it can be (a string so far, to its last whole sentence when it is free
    text), else dropped back to the last whole one. None when it does not read even so."""
    cut = _cut_at(text)
    if cut is None:
        return None
    if cut.in_string:
        so_far = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", text) + '"'
        kept = _free_text_so_far(_json_dict(so_far + cut.closers))
    else:
        kept = _json_dict(text.rstrip() + cut.closers)
    if kept is not None:
        return kept
    for i, closers in reversed(cut.commas[-3:]):
        member_back = _json_dict(text[:i] + closers)
        if member_back is not None:
            return member_back
    return None


def _from_json(text: str, *, whole: bool) -> dict[str, Any] | None:
    """JSON the answer consists of (``whole``), or any JSON object found in it."""
    text = text.strip()
    fences = [m for m in _FENCE.finditer(text) if m.group(1).lower() in ("json", "")]
    if whole:
        # Only an answer that *is* JSON: a fence inside <text> is part of the message.
        if fences and fences[0].start() == 0:
            text = fences[0].group(2).strip()
        return (_json_object(text) or _cut_json(text)) if text.startswith("{") else None
    for candidate in [*(m.group(2) for m in fences), text]:
        found = _json_object(candidate)
        if found:
            return found
    return None


# -- normalising --------------------------------------------------------------------------------


def _names(value: Any, depth: int = 0) -> list[str]:
    if value is None or depth > _MAX_DEPTH:
        return []
    if isinstance(value, Mapping):
        return [n for item in value.values() for n in _names(item, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [n for item in value for n in _names(item, depth + 1)]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _collection(name: str, value: Any) -> list[Any]:
    """``facts`` and the like as a list, as JSON writes them too: ``[…]`` as it is, one item
    alone or wrapped in its singular (``{"fact": …}``, as XML would be) as a list, nothing as ``[]``."""
    if isinstance(value, Mapping) and len(value) == 1:
        [(child, inner)] = value.items()
        if _plural_of(name, child):
            value = inner
    if isinstance(value, list):
        return value
    return [value] if value else []


def _normalise(result: Mapping[str, Any]) -> dict[str, Any] | None:
    out = dict(result)
    if len(out) == 1 and isinstance(out.get("response"), Mapping):
        out = dict(out["response"])
    for key in LIST_KEYS & out.keys():
        out[key] = _names(out[key])
    for key in _COLLECTION_KEYS & out.keys():
        out[key] = _collection(key, out[key])
    if "simple" in out and not isinstance(out["simple"], bool):
        simple = out["simple"]
        out["simple"] = simple.strip().lower() == "true" if isinstance(simple, str) else bool(simple)
    return out or None


def parse_response(text: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The keys and values a model answered, or ``None`` when it answered none.

    Reads the first ``<response>…</response>`` (to the end if never closed), else the top-level
    elements of the whole text; prose, code fences and ``<think>`` sections around them are
    dropped, and XML entities unescaped. An element holding only elements becomes a dict (a
    repeated child → a list), or a list when its name is their plural (``<facts><fact>``);
    ``facts``, ``relationships`` and ``assignments`` are always lists, in JSON too. ``text``,
    ``thought`` and other free-text keys stay strings even if they hold markup. ``actions``,
    ``providers`` and ``evaluators`` become lists of names; ``simple`` becomes a bool. Other XML
    leaves stay strings (``tags``, ``in_bio`` included); JSON keeps its own (a list of tags, a bool).

    A JSON object (bare or in a fence) is read too, and a dict — a test's mock model — comes back
    with the same normalising. Never raises: anything unreadable is ``None``.
    """
    try:
        if isinstance(text, Mapping):
            return _normalise(text)
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str) or not text.strip():
            return None
        text = _drop_thinking(text)
        # JSON first only when the answer *is* JSON: "<b>" inside a JSON string is not an element.
        found = _from_json(text, whole=True) or _from_xml(text) or _from_json(text, whole=False)
        return _normalise(found) if found else None
    except RecursionError:  # pathological nesting in a mock's dict
        _log.debug("model answer nested too deeply to read")
        return None
