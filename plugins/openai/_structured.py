"""Structured output: how a chat request asks the server to hold the answer to a JSON schema.

Servers differ in the form they take. OpenAI, vLLM, llama.cpp's ``llama-server`` and Ollama
take ``{"type": "json_schema", "json_schema": {…}}``; llama-cpp-python's server refuses that
(HTTP 500) and takes ``{"type": "json_object", "schema": …}``; others take neither. A request
whose form is refused is asked again in the next form (:meth:`OutputForm.next`), down to none
(the prompt's own format); what a server (base URL and model) accepted is kept in
:class:`OutputForms`, one per daemon, so later requests go straight to it.

Pure: no SDK, no network.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from bot.sdk import ResponseSchema

__all__ = ["REFUSING_STATUSES", "OutputForm", "OutputForms", "Server", "response_format"]

#: The statuses of a server refusing a form of ``response_format``: 400/422 from those that check
#: the request, 500 from llama-cpp-python, whose check fails inside.
REFUSING_STATUSES = frozenset({400, 422, 500})

Server = tuple[str, str]
"""A base URL and a model: what takes a form or refuses it."""


class OutputForm(StrEnum):
    """The forms of ``response_format`` that carry a schema, in the order they are tried
    (``OPENAI_STRUCTURED_OUTPUT`` names where to start)."""

    JSON_SCHEMA = "json_schema"
    """``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``: OpenAI, vLLM,
    llama-server, Ollama."""
    JSON_OBJECT_SCHEMA = "json_object_schema"
    """``{"type": "json_object", "schema": …}``: llama-cpp-python's server."""
    NONE = "none"
    """No schema: the prompt asks for its format in words."""

    def next(self) -> OutputForm:
        """The form to try when this one is refused (none stays none)."""
        order = list(OutputForm)
        return order[min(order.index(self) + 1, len(order) - 1)]


def response_format(form: OutputForm, schema: ResponseSchema) -> dict[str, Any] | None:
    """The ``response_format`` of a request asking for ``schema`` in ``form``; None for none."""
    if form is OutputForm.JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True}}
    if form is OutputForm.JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": schema.schema}
    return None


class OutputForms:
    """Per server, the form it was last seen to accept after refusing an earlier one; shared
    by the daemon's agents (``runtime.shared.instance_of(OutputForms)``)."""

    def __init__(self) -> None:
        self._accepted: dict[Server, OutputForm] = {}

    def first(self, server: Server, setting: OutputForm) -> OutputForm:
        """The form to ask ``server`` in: the setting's, or a later one the server fell back to."""
        learned = self._accepted.get(server, setting)
        order = list(OutputForm)
        return max(setting, learned, key=order.index)

    def accepted(self, server: Server, form: OutputForm) -> bool:
        """``server`` refused an earlier form and then took ``form``: ask it in ``form`` from
        now on. Whether that is news (so that it is said once)."""
        if self._accepted.get(server) is form:
            return False
        self._accepted[server] = form
        return True
