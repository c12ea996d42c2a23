"""A TEXT call with a schema: asked in the form the server takes, falling back (and learning it)
when the server refuses one, down to the prompt's own format."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.kernel.errors import ConfigError, ModelContextExceeded, ModelRequestRejected
from bot.kernel.models import ModelType
from bot.runtime.shared import Shared
from plugins.core._parse import parse_response
from plugins.core._plan import Plan
from plugins.core._schemas import plan_schema
from plugins.openai._config import resolve_config
from plugins.openai._structured import OutputForm
from tests.fakes.openai_server import Fail, FakeOpenAIServer

from ..fake_runtime import FakeRuntime
from .conftest import KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]

SCHEMA = plan_schema(["REPLY", "IGNORE"])
PLAN = {"prompt": "Plan the turn.\n\n<output>\n<text>the message to send</text>\n</output>\n", "schema": SCHEMA}
JSON_PLAN = json.dumps(
    {"thought": "hm", "actions": ["REPLY"], "providers": [], "text": "Hi!", "imagePrompt": "", "emoji": ""}
)
XML_PLAN = "<response><thought>hm</thought><actions>REPLY</actions><text>Hi!</text></response>"


def asked(server: FakeOpenAIServer) -> list[str]:
    """The ``response_format`` form of each chat request, in order."""
    forms = []
    for request in server.requests_for("chat"):
        found = request.json.get("response_format")
        if found is None:
            forms.append("none")
        elif found["type"] == "json_schema":
            forms.append("json_schema")
        else:
            assert found == {"type": "json_object", "schema": SCHEMA.schema}
            forms.append("json_object_schema")
    return forms


def taking(*forms: str, answer: str = JSON_PLAN) -> Callable[[dict[str, Any]], Any]:
    """A server that answers requests in ``forms`` and refuses the others with HTTP 500, as
    llama-cpp-python's server refuses json_schema."""

    def reply(body: dict[str, Any]) -> Any:
        found = body.get("response_format")
        form = "none" if found is None else "json_schema" if found["type"] == "json_schema" else "json_object_schema"
        if form not in forms:
            return Fail(500, message="Internal Server Error")
        return answer if form != "none" else XML_PLAN

    return reply


async def start(server: FakeOpenAIServer, make_runtime: MakeRuntime, **settings: str) -> FakeRuntime:
    return await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0", **settings}
    )


async def planned(runtime: FakeRuntime) -> Plan:
    """The plan the large model answered to PLAN, read as the pipeline reads it."""
    plan = Plan.of(parse_response(await runtime.use(ModelType.TEXT_LARGE, PLAN)))
    assert plan is not None
    return plan


async def test_a_server_that_takes_json_schema_gets_it_and_the_answer_parses(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    server.script_chat(taking("json_schema"))
    plan = await planned(runtime)
    assert (plan.actions, plan.text) == (["REPLY"], "Hi!")
    (request,) = server.requests_for("chat")
    assert request.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": SCHEMA.schema, "strict": True},
    }
    # The prompt's XML format, with its placeholders, gives way to a line naming the keys.
    prompt = request.json["messages"][-1]["content"]
    assert prompt == "Plan the turn.\n\n" + SCHEMA.note()
    assert "thought, actions, providers, text, imagePrompt, emoji" in SCHEMA.note()


async def test_a_server_refusing_json_schema_gets_json_object_from_then_on(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.openai")
    runtime = await start(server, make_runtime)
    server.script_chat(taking("json_object_schema"))
    assert await runtime.use(ModelType.TEXT_LARGE, PLAN) == JSON_PLAN  # the turn is not lost
    assert asked(server) == ["json_schema", "json_object_schema"]
    assert await runtime.use(ModelType.TEXT_LARGE, PLAN) == JSON_PLAN
    assert asked(server) == ["json_schema", "json_object_schema", "json_object_schema"]
    note = server.requests_for("chat")[-1].json["messages"][-1]["content"]
    assert note.endswith(SCHEMA.note())
    (said,) = [r for r in caplog.records if "refused response_format" in r.getMessage()]
    assert said.levelno == logging.INFO
    assert said.getMessage() == (
        f"Ada: gpt-4o at {server.url} refused response_format json_schema (HTTP 500); "
        "asking it for JSON schemas as json_object_schema from now on"
    )


async def test_what_a_server_takes_is_learned_for_the_daemons_other_characters(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    shared = Shared()
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0"}
    ada = await make_runtime(settings, shared=shared)
    bob = await make_runtime(settings, agent_id="agent-bob", shared=shared)
    server.script_chat(taking("json_object_schema"))
    await ada.use(ModelType.TEXT_LARGE, PLAN)
    await bob.use(ModelType.TEXT_LARGE, PLAN)
    assert asked(server) == ["json_schema", "json_object_schema", "json_object_schema"]
    await bob.use(ModelType.TEXT_SMALL, PLAN)  # another model is another server
    assert asked(server)[3:] == ["json_schema", "json_object_schema"]


async def test_a_server_refusing_both_forms_gets_the_prompt_alone_and_answers_xml(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.openai")
    runtime = await start(server, make_runtime)
    server.script_chat(taking("none"))
    assert (await planned(runtime)).text == "Hi!"
    assert asked(server) == ["json_schema", "json_object_schema", "none"]
    assert [m for m in caplog.messages if "refused" in m] == [
        f"Ada: gpt-4o at {server.url} refused response_format json_schema (HTTP 500) and "
        "json_object_schema (HTTP 500); asking it for no JSON schema from now on"
    ]
    await runtime.use(ModelType.TEXT_LARGE, PLAN)
    assert asked(server)[3:] == ["none"]
    # Without a schema, the prompt is as the caller wrote it.
    assert server.requests_for("chat")[-1].json["messages"][-1]["content"] == PLAN["prompt"]


async def test_a_refusal_of_every_form_is_the_callers_error_and_teaches_nothing(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    server.script_chat(Fail(400, times=3, message="the request is malformed"), JSON_PLAN)
    with pytest.raises(ModelRequestRejected, match="the request is malformed"):
        await runtime.use(ModelType.TEXT_LARGE, PLAN)
    assert asked(server) == ["json_schema", "json_object_schema", "none"]
    # The refusal was about the request, not the schema: the next request asks for it again.
    assert await runtime.use(ModelType.TEXT_LARGE, PLAN) == JSON_PLAN
    assert asked(server)[3:] == ["json_schema"]


async def test_a_prompt_too_long_is_refused_once_not_in_every_form(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    wording = "This model's maximum context length is 2048 tokens. However, you requested 3000 tokens."
    server.script_chat(Fail(400, times=1, message=wording), JSON_PLAN)
    with pytest.raises(ModelContextExceeded):
        await runtime.use(ModelType.TEXT_LARGE, PLAN)
    assert asked(server) == ["json_schema"]  # the caller builds a smaller prompt; no form is to blame


async def test_other_failures_are_not_taken_for_a_refused_form(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    server.script_chat(Fail(404, times=1), JSON_PLAN)
    with pytest.raises(Exception, match="HTTP 404"):
        await runtime.use(ModelType.TEXT_LARGE, PLAN)
    assert asked(server) == ["json_schema"]


async def test_a_server_refusing_every_form_gets_the_prompts_own_format(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    server.script_chat(taking("none"))
    assert await runtime.use(ModelType.TEXT_LARGE, PLAN) == XML_PLAN
    assert server.requests_for("chat")[-1].json["messages"][-1]["content"] == PLAN["prompt"]


async def test_setting_none_sends_no_schema(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await start(server, make_runtime, OPENAI_STRUCTURED_OUTPUT="none")
    server.script_chat(XML_PLAN)
    assert await runtime.use(ModelType.TEXT_LARGE, PLAN) == XML_PLAN
    (request,) = server.requests_for("chat")
    assert "response_format" not in request.json
    assert request.json["messages"][-1]["content"] == PLAN["prompt"]


async def test_setting_json_object_schema_starts_there(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await start(server, make_runtime, OPENAI_STRUCTURED_OUTPUT="JSON_OBJECT_SCHEMA")
    server.script_chat(taking("json_object_schema"))
    await runtime.use(ModelType.TEXT_SMALL, PLAN)
    assert asked(server) == ["json_object_schema"]


async def test_a_streamed_answer_falls_back_too_and_streams_the_json(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await start(server, make_runtime)
    server.script_chat(taking("json_object_schema"))
    pieces: list[str] = []
    answer = await runtime.use(ModelType.TEXT_LARGE, {**PLAN, "on_delta": pieces.append})
    assert answer == JSON_PLAN == "".join(pieces)
    assert asked(server) == ["json_schema", "json_object_schema"]
    assert all(r.json["stream"] for r in server.requests_for("chat"))


async def test_a_call_without_a_schema_is_as_before(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await start(server, make_runtime)
    await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
    await runtime.use(ModelType.OBJECT_SMALL, {"prompt": "hi", "schema": SCHEMA})  # OBJECT asks for json_object
    first, second = server.requests_for("chat")
    assert "response_format" not in first.json
    assert second.json["response_format"] == {"type": "json_object"}


def test_the_setting_is_checked_and_every_preset_starts_at_json_schema() -> None:
    class Settings:
        agent_id = "agent-ada"

        def __init__(self, preset: str | None, **values: str) -> None:
            self.model_preset, self.values = preset, values

        def get_setting(self, key: str) -> str | None:
            return self.values.get(key)

    keys = {"OPENAI_API_KEY": KEY, "OPENROUTER_API_KEY": KEY}
    for preset in (None, "ollama", "openrouter"):
        assert resolve_config(Settings(preset, **keys), agent="Ada").structured_output is OutputForm.JSON_SCHEMA
    config = resolve_config(Settings(None, OPENAI_STRUCTURED_OUTPUT=" None ", **keys), agent="Ada")
    assert config.structured_output is OutputForm.NONE
    with pytest.raises(ConfigError, match=r"OPENAI_STRUCTURED_OUTPUT is 'grammar'; use one of json_schema, "):
        resolve_config(Settings(None, OPENAI_STRUCTURED_OUTPUT="grammar", **keys), agent="Ada")
