"""The answers' JSON schemas: strict in shape, read by parse_response into what the XML gives,
asked for by the plan, the decisions and the reflection, and the parse rate counted."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bot.kernel.models import ResponseSchema
from bot.kernel.types import ChannelType
from plugins.core._parse import parse_response
from plugins.core._plan import Plan
from plugins.core._schemas import REFLECTION, SHOULD_RESPOND, plan_schema, troupe_decision_schema
from plugins.core._troupe import parse_decision

from .harness import HUMAN, plan
from .test_troupe import DECIDING, hear, script, small_model, troupe


def strict_errors(schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Where ``schema`` breaks OpenAI's strict mode: an object whose properties are not all
    required, or that allows others."""
    errors = []
    if schema.get("type") == "object":
        if list(schema["required"]) != list(schema["properties"]):
            errors.append(f"{where}: not every property required")
        if schema.get("additionalProperties") is not False:
            errors.append(f"{where}: other properties allowed")
        for name, inner in schema["properties"].items():
            errors += strict_errors(inner, f"{where}.{name}")
    if schema.get("type") == "array":
        errors += strict_errors(schema["items"], f"{where}[]")
    return errors


def conforms(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``value`` follows ``schema`` (the parts of JSON Schema these use)."""
    kind = schema["type"]
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "object":
        return (
            isinstance(value, dict)
            and set(value) == set(schema["properties"])
            and all(conforms(value[k], s) for k, s in schema["properties"].items())
        )
    if kind == "array":
        return isinstance(value, list) and all(conforms(v, schema["items"]) for v in value)
    return isinstance(value, {"string": str, "boolean": bool}[kind])


PLAN_ANSWER = {
    "thought": "Sam asks for a picture.",
    "actions": ["REPLY", "GENERATE_IMAGE"],
    "providers": ["FACTS"],
    "text": "Here is <b>a cat</b> & more",
    "imagePrompt": "a cat on a mat",
    "emoji": "",
}
REFLECTION_ANSWER = {
    "thought": "Going well.",
    "facts": [{"claim": "Sam likes tea", "type": "fact", "about": HUMAN, "in_bio": False, "already_known": False}],
    "relationships": [{"sourceEntityId": HUMAN, "targetEntityId": "ada", "tags": ["dm_interaction"]}],
}


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        (plan_schema(["REPLY", "GENERATE_IMAGE", "IGNORE"]), PLAN_ANSWER),
        (SHOULD_RESPOND, {"name": "Ada", "reasoning": "named", "action": "RESPOND"}),
        (troupe_decision_schema(["Ada", "Brann"]), {"reasoning": "why", "answer": ["Brann", "Ada"], "stop": []}),
        (REFLECTION, REFLECTION_ANSWER),
    ],
)
def test_each_schema_is_strict_and_its_sample_answer_follows_it(schema: ResponseSchema, answer: dict) -> None:
    assert strict_errors(schema.schema) == []
    assert conforms(answer, schema.schema)
    assert parse_response(json.dumps(answer)) == answer  # already the shape the callers read
    assert ", ".join(answer) in schema.note()


def test_the_plan_schema_offers_only_the_actions_given_and_any_without() -> None:
    assert plan_schema(["REPLY", "IGNORE", "REPLY"]).schema["properties"]["actions"]["items"] == {
        "type": "string",
        "enum": ["REPLY", "IGNORE"],
    }
    assert plan_schema().schema["properties"]["actions"]["items"] == {"type": "string"}
    assert not conforms({**PLAN_ANSWER, "actions": ["FIRST_ACTION"]}, plan_schema(["REPLY"]).schema)


def test_a_json_plan_reads_as_the_xml_plan_does() -> None:
    xml = (
        "<response><thought>Sam asks for a picture.</thought><actions>REPLY,GENERATE_IMAGE</actions>"
        "<providers>FACTS</providers><text>Here is <b>a cat</b> &amp; more</text>"
        "<imagePrompt>a cat on a mat</imagePrompt></response>"
    )
    assert Plan.of(parse_response(json.dumps(PLAN_ANSWER))) == Plan.of(parse_response(xml))


def test_a_json_reflection_reads_as_the_xml_one_does_and_collections_are_lists() -> None:
    parsed = parse_response(json.dumps(REFLECTION_ANSWER))
    assert parsed is not None and parsed["facts"][0]["claim"] == "Sam likes tea"
    # What a model writes without a schema, in XML's shape or with one item alone, is a list too.
    fact = REFLECTION_ANSWER["facts"][0]
    for facts in ({"fact": fact}, {"fact": [fact]}, fact):
        assert parse_response(json.dumps({"thought": "t", "facts": facts}))["facts"] == [fact]  # type: ignore[index]
    assert parse_response('{"thought": "t", "facts": null, "relationships": ""}') == {
        "thought": "t",
        "facts": [],
        "relationships": [],
    }


def test_a_json_troupe_decision_reads_as_the_xml_one_does() -> None:
    answer = json.dumps({"reasoning": "why", "answer": ["brann", "Ada", "Zed"], "stop": ["Cleo"]})
    assert parse_decision(answer, ["Ada", "Brann", "Cleo"]) == (["Brann", "Ada"], ["Cleo"])


def answers(h: Any) -> dict[tuple[str, str], float]:
    """``troupe_model_answers_total`` of the harness's agent, by call and outcome."""
    found = re.findall(
        r'^troupe_model_answers_total\{agent="[^"]*",call="(\w+)",outcome="(\w+)"\} (\S+)$',
        h.rt.metrics.render(),
        re.MULTILINE,
    )
    return {(call, outcome): float(value) for call, outcome, value in found}


def recording(seen: list[dict], answer: str) -> Callable[[dict], str]:
    """A scripted model that answers ``answer`` and keeps the params it was given in ``seen``."""

    def reply(params: dict) -> str:
        seen.append(params)
        return answer

    return reply


async def test_the_plan_and_the_decision_ask_for_their_schemas_and_their_answers_are_counted(harness) -> None:
    h = await harness(settings={"conversationLength": 64})
    seen: list[dict] = []
    record = functools.partial(recording, seen)
    h.small.append(record(json.dumps({"name": "Ada", "reasoning": "asked", "action": "RESPOND"})))
    h.large += [record("no idea"), record(json.dumps({**PLAN_ANSWER, "actions": ["REPLY"]}))]
    assert (await h.say("what do you think?")).status == "replied"
    assert h.sent[0]["text"] == PLAN_ANSWER["text"]
    decide, first, second = seen
    assert decide["schema"] is SHOULD_RESPOND
    offered = first["schema"].schema["properties"]["actions"]["items"]["enum"]
    assert {"REPLY", "IGNORE"} <= set(offered) and "FIRST_ACTION" not in offered
    assert second["schema"] is first["schema"]  # asked again the same way
    assert answers(h) == {
        ("should_respond", "parsed"): 1,
        ("plan", "unparsed"): 1,
        ("plan", "parsed"): 1,
    }


async def test_a_streamed_json_plan_is_spoken_as_it_arrives(harness) -> None:
    h = await harness(ChannelType.DM)
    answer = json.dumps({**PLAN_ANSWER, "actions": ["REPLY"], "text": "Hello there, Sam."})

    def streaming(params: dict) -> str:
        assert params["schema"].name == "plan"
        for start in range(0, len(answer), 5):
            params["on_delta"](answer[start : start + 5])
        return answer

    h.large.append(streaming)
    outcome, channel = await h.say_streamed("hi")
    assert outcome.status == "replied"
    assert channel.streamed[-1] == "Hello there, Sam." == h.sent[0]["text"]
    assert all("Hello there, Sam.".startswith(shown) for shown in channel.streamed)


async def test_a_character_with_its_own_template_gets_no_schema_for_it(harness) -> None:
    own = "<task>Answer as {{agentName}}.</task> {{providers}} <output><response><say>…</say></response></output>"
    h = await harness(ChannelType.DM, templates={"messageHandlerTemplate": own})
    seen: list[dict] = []
    h.large.append(recording(seen, plan("hi")))
    assert (await h.say("hello")).status == "replied"
    assert "schema" not in seen[0]


async def test_the_reflection_asks_for_its_schema_and_learns_from_json(harness) -> None:
    h = await harness(ChannelType.DM, settings={"conversationLength": 8})
    h.large += [plan("ok")] * 3
    seen: list[dict] = []
    h.small.append(recording(seen, json.dumps(REFLECTION_ANSWER)))
    for text in ("I love tea", "every day", "with milk"):
        await h.say(text)
    assert seen[0]["schema"] is REFLECTION
    facts = await h.rt.store.get_memories(table="facts")
    assert [f.content.text for f in facts] == ["Sam likes tea"]
    assert answers(h)[("reflection", "parsed")] == 1


async def test_the_troupe_decision_asks_for_its_schema_of_the_names(harness) -> None:
    members = await troupe(harness, "Ada", "Brann")
    script(members, small_model("Brann"))
    seen: list[dict] = []
    for h in members.values():
        h.small.insert(0, recording(seen, json.dumps({"reasoning": "", "answer": ["Brann"], "stop": []})))
    outcomes = await hear(members, "anyone know a good book about bees?")
    assert {n: o.status for n, o in outcomes.items()} == {"Ada": "ignored", "Brann": "replied"}
    (asked,) = [p for p in seen if DECIDING in p["prompt"]]
    assert asked["schema"].schema["properties"]["answer"]["items"]["enum"] == ["Ada", "Brann"]
    counted = [answers(h).get(("troupe_decision", "parsed")) for h in members.values()]
    assert sorted(counted, key=str) == [1, None]
