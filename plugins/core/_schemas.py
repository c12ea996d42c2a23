"""The JSON schemas of the answers the built-in templates ask for, for servers that can hold a
model to one (``TextParams["schema"]``).

Each has the fields of its template's ``<output>`` block, in the same order, shaped so that
:func:`plugins.core._parse.parse_response` reads the JSON answer into what it reads from the XML:
lists of names as lists, ``facts`` and ``relationships`` as lists of objects. Every field is
required and no other allowed (OpenAI's strict mode); one that may be empty is an empty string
or list. A character that replaces a template gets no schema for it: its own format may differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.sdk import ResponseSchema

from ._should_respond import ShouldRespond
from ._templates import DEFAULT_TEMPLATES, own_template

__all__ = ["REFLECTION", "SHOULD_RESPOND", "plan_schema", "schema_for", "troupe_decision_schema"]

_TEXT: dict[str, Any] = {"type": "string"}
# The built-in templates show the answer's format in an <output> section: an XML example whose
# values are placeholders, left out when a server holds the answer to the schema.
_OUTPUT = "output"


def _names(choices: Sequence[str] = ()) -> dict[str, Any]:
    """A list of names: any strings, or only ``choices`` when there are some."""
    item: dict[str, Any] = {"type": "string", "enum": list(dict.fromkeys(choices))} if choices else _TEXT
    return {"type": "array", "items": item}


def _object(**properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def plan_schema(actions: Sequence[str] = ()) -> ResponseSchema:
    """The plan (``messageHandlerTemplate``): thought, actions, providers, text, imagePrompt, emoji.
    With ``actions`` (the names offered), no other action can be written."""
    return ResponseSchema(
        "plan",
        _object(thought=_TEXT, actions=_names(actions), providers=_names(), text=_TEXT, imagePrompt=_TEXT, emoji=_TEXT),
        _OUTPUT,
    )


#: Whether to answer (``shouldRespondTemplate``).
SHOULD_RESPOND = ResponseSchema(
    "should_respond",
    _object(name=_TEXT, reasoning=_TEXT, action={"type": "string", "enum": [choice.value for choice in ShouldRespond]}),
    _OUTPUT,
)


def troupe_decision_schema(names: Sequence[str]) -> ResponseSchema:
    """Who of ``names`` answers, in order, and who is asked to stay out (``troupeDecisionTemplate``)."""
    return ResponseSchema(
        "troupe_decision", _object(reasoning=_TEXT, answer=_names(names), stop=_names(names)), _OUTPUT
    )


_FACT = _object(
    claim=_TEXT,
    type={"type": "string", "enum": ["fact", "opinion", "status"]},
    about=_TEXT,
    in_bio={"type": "boolean"},
    already_known={"type": "boolean"},
)
_RELATIONSHIP = _object(sourceEntityId=_TEXT, targetEntityId=_TEXT, tags=_names())

#: What a reflection learned (``reflectionTemplate``).
REFLECTION = ResponseSchema(
    "reflection",
    _object(
        thought=_TEXT,
        facts={"type": "array", "items": _FACT},
        relationships={"type": "array", "items": _RELATIONSHIP},
    ),
    _OUTPUT,
)


def schema_for(templates: Mapping[str, str], name: str, schema: ResponseSchema) -> ResponseSchema | None:
    """``schema`` for a prompt made of template ``name``; None when the character replaced that
    template (its answer's fields are its own)."""
    override = own_template(templates, name)
    return None if override is not None and override != DEFAULT_TEMPLATES.get(name) else schema
