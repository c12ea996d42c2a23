"""The model benchmarks' assumptions about the prompts: each chat request is sorted by the template
that wrote it, and the scripted answers parse as the pipeline reads them (tests/bench/_common.py).
A reworded template would otherwise be counted as "other" and answered wrongly, silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plugins.core._mustache import render
from plugins.core._parse import parse_response
from plugins.core._templates import DEFAULT_TEMPLATES
from plugins.core._troupe import parse_decision
from tests.bench import bench_vector_search
from tests.bench._common import Script, Tally, chat_kind

CHARACTERS = ("Ada", "Brann")


def request(template: str, received: str = "Sam: hello") -> dict[str, Any]:
    providers = f"# Conversation Messages\n10:00 Sam: earlier\n\n# Received Message\n{received}"
    prompt = render(DEFAULT_TEMPLATES[template], {"agentName": "Ada", "providers": providers, "actionNames": "REPLY"})
    return {"messages": [{"role": "system", "content": "You are Ada."}, {"role": "user", "content": prompt}]}


@pytest.mark.parametrize(
    ("template", "kind"),
    [
        ("shouldRespondTemplate", "should_respond"),
        ("messageHandlerTemplate", "plan"),
        ("reflectionTemplate", "reflection"),
        ("summaryTemplate", "other"),
        ("targetExtractionTemplate", "other"),
    ],
)
def test_a_chat_request_is_sorted_by_the_template_that_wrote_it(template: str, kind: str) -> None:
    assert chat_kind(request(template)["messages"][1]["content"]) == kind


def test_the_troupe_decision_is_told_by_its_question_whatever_else_its_prompt_quotes() -> None:
    prompt = "Which of these characters should answer the newest message?\nWrite the next turn of Ada"
    assert chat_kind(prompt) == "troupe_decision"


@pytest.mark.parametrize(
    ("received", "chosen"),
    [("Sam: What does everyone make of bees?", ["Ada", "Brann"]), ("Brann: Brann here, on it.", [])],
)
def test_the_troupe_decision_picks_everyone_for_a_persons_message_that_names_nobody(
    received: str, chosen: list[str]
) -> None:
    providers = f"# Received Message\n{received}"
    values = {
        "agentName": "Ada",
        "providers": providers,
        "troupeNames": "Ada, Brann",
        "troupeMembers": "- Ada: a\n- Brann: b",
    }
    prompt = render(DEFAULT_TEMPLATES["troupeDecisionTemplate"], values)
    body = {"messages": [{"role": "user", "content": prompt}]}
    assert chat_kind(prompt) == "troupe_decision"
    assert parse_decision(Script(CHARACTERS).answer(body), CHARACTERS) == (chosen, [])


@pytest.mark.parametrize(
    ("received", "action"),
    [
        ("Sam: What does everyone make of bees?", "RESPOND"),
        ("Sam: Brann, what do you make of bees?", "IGNORE"),
        ("Brann: Brann here, on it.", "IGNORE"),
    ],
)
def test_a_character_deciding_alone_answers_only_a_persons_message_that_names_no_character(
    received: str, action: str
) -> None:
    answer = Script(CHARACTERS).answer(request("shouldRespondTemplate", received))
    assert (parse_response(answer) or {}).get("action") == action


def test_a_plan_is_a_reply_in_the_characters_name() -> None:
    parsed = parse_response(Script(CHARACTERS).answer(request("messageHandlerTemplate"))) or {}
    assert (parsed["actions"], parsed["text"]) == (["REPLY"], "Ada here, on it.")


def test_each_reflection_parses_and_learns_a_new_fact() -> None:
    script = Script(CHARACTERS)
    claims = [
        (parse_response(script.answer(request("reflectionTemplate"))) or {})["facts"][0]["claim"] for _ in range(2)
    ]
    assert claims[0] != claims[1]


def test_a_tally_counts_chat_requests_by_kind_and_subtracts() -> None:
    tally = Tally()
    tally.add("chat", request("shouldRespondTemplate"))
    before = Tally(tally.endpoints.copy(), tally.kinds.copy())
    tally.add("chat", request("messageHandlerTemplate"))
    tally.add("embeddings", {"input": "hello"})
    assert (tally - before).per(2) == ("1.00 model requests per message (chat 0.50, embeddings 0.50; chat: plan 0.50)")


def test_a_reflection_told_not_to_parse_answers_prose_the_pipeline_cannot_read() -> None:
    answer = Script(CHARACTERS, reflections_parse=False).answer(request("reflectionTemplate"))
    assert parse_response(answer) is None


async def test_the_vector_search_benchmark_runs_every_case_on_both_backends(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("TROUPE_TEST_DATABASE_URL", postgres_server)
    args = ["--memories", "600", "--agents", "2,1", "--dims", "384", "--queries", "10", "--inserts", "50"]
    await bench_vector_search.main(bench_vector_search.parse_args([*args, "--data", str(tmp_path)]))
    out = capsys.readouterr().out
    for kind in ("SQLite (exact", "PostgreSQL exact", "PostgreSQL HNSW"):
        assert out.count(kind) == 2, out
    assert out.count("recall@10 1.000") >= 4, out  # both exact searches, both cases
    assert "HNSW builds: 2 x 300 vectors" in out and "HNSW builds: 1 x 600 vectors" in out
    assert out.count("memories/s") == 4
