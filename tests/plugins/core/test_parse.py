"""Reading model answers: every tolerance of parse_response, and that it never raises."""

import random

import pytest

from plugins.core._parse import parse_response

HANDLER = (
    "<response><thought>greet</thought><actions>REPLY</actions><providers></providers><text>Hello!</text></response>"
)
EXPECTED = {"thought": "greet", "actions": ["REPLY"], "providers": [], "text": "Hello!"}


def test_reads_the_response_block() -> None:
    assert parse_response(HANDLER) == EXPECTED


@pytest.mark.parametrize(
    "answer",
    [
        f"Sure, here it is:\n{HANDLER}\nHope that helps!",
        f"```xml\n{HANDLER}\n```",
        f"```\n{HANDLER}\n```",
        f"<think>The user said hi. <response><text>draft</text></response></think>\n{HANDLER}",
        f"<THINKING>hmm</THINKING>{HANDLER}",
        f"they greeted me, I should answer.</think>{HANDLER}",
        HANDLER.replace("<response>", "<response>\n  ").replace("</text>", "</text>\n"),
        HANDLER.replace("<response>", '<response lang="en">'),
    ],
)
def test_tolerates_prose_fences_and_thinking_around_the_block(answer) -> None:
    assert parse_response(answer) == EXPECTED


def test_unclosed_thinking_runs_to_the_answer() -> None:
    assert parse_response(f"<think>let me see... {HANDLER}") == EXPECTED
    assert parse_response("<think>still thinking when the tokens ran out") is None


def test_think_tags_inside_the_message_are_text() -> None:
    assert parse_response("<response><text>I <think> so</text></response>") == {"text": "I <think> so"}
    assert parse_response("<response><text>done</think> here</text></response>") == {"text": "done</think> here"}


def test_missing_wrapper_reads_top_level_tags() -> None:
    assert parse_response("<action>REPLY</action>") == {"action": "REPLY"}
    assert parse_response("I'd say <name>Ada</name> and <action>IGNORE</action>.") == {
        "name": "Ada",
        "action": "IGNORE",
    }


def test_first_response_block_wins() -> None:
    assert parse_response("<response><a>1</a></response><response><a>2</a></response>") == {"a": "1"}


def test_unclosed_response_keeps_its_finished_elements_and_the_reply_so_far() -> None:
    # Cut at its token bound: the finished elements, and the text it was writing, to its last
    # whole sentence (no half-written tag or word).
    cut = "<response><thought>t</thought><actions>REPLY</actions><text>Hello there. I am Iris &amp; I li"
    assert parse_response(cut) == {"thought": "t", "actions": ["REPLY"], "text": "Hello there."}
    assert parse_response("<response><thought>t</thought><actions>REPLY</actions><text>cut of</te") == {
        "thought": "t",
        "actions": ["REPLY"],
        "text": "cut of",
    }
    assert parse_response("<response><thought>t</thought><actions>REPLY</actions><text>") == {
        "thought": "t",
        "actions": ["REPLY"],
    }
    # A tag named inside a finished element is not one being written.
    assert parse_response("<response><thought>a <text> tag</thought><actions>IGNORE</actions>") == {
        "thought": "a <text> tag",
        "actions": ["IGNORE"],
    }


def test_entities_are_unescaped_once() -> None:
    out = parse_response(
        "<response><text>a &lt;b&gt; &amp;amp; &quot;q&quot; &apos;s&apos; &#65;&#x42; &notes</text></response>"
    )
    assert out == {"text": "a <b> &amp; \"q\" 's' AB &notes"}


def test_cdata_is_taken_verbatim() -> None:
    assert parse_response("<response><text><![CDATA[x < y && <b>]]></text></response>") == {"text": "x < y && <b>"}


def test_actions_providers_evaluators_split_on_commas() -> None:
    out = parse_response(
        "<response><actions> REPLY , FOLLOW_ROOM,,</actions><providers>FACTS</providers><evaluators/></response>"
    )
    assert out == {"actions": ["REPLY", "FOLLOW_ROOM"], "providers": ["FACTS"], "evaluators": []}


def test_actions_written_as_nested_elements_are_flattened() -> None:
    out = parse_response("<response><actions><action>REPLY</action><action>MUTE_ROOM</action></actions></response>")
    assert out == {"actions": ["REPLY", "MUTE_ROOM"]}


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), (" TRUE ", True), ("false", False), ("yes", False), ("", False)]
)
def test_simple_becomes_a_bool(raw, expected) -> None:
    out = parse_response(f"<response><simple>{raw}</simple><text>x</text></response>")
    assert out is not None and out["simple"] is expected


def test_other_keys_stay_strings() -> None:
    out = parse_response("<response><action>STOP</action><in_bio>false</in_bio><count>3</count></response>")
    assert out == {"action": "STOP", "in_bio": "false", "count": "3"}


def test_markup_in_free_text_stays_text() -> None:
    out = parse_response(
        "<response><text><b>bold</b></text><thought>a <i>b</i> c</thought><misc>x <y>z</y></misc></response>"
    )
    assert out == {"text": "<b>bold</b>", "thought": "a <i>b</i> c", "misc": "x <y>z</y>"}


def test_code_fence_inside_text_is_kept_and_not_read_as_json() -> None:
    text = 'Try this:\n```json\n{"a": 1}\n```\nand `a < b`'
    assert parse_response(f"<response><actions>REPLY</actions><text>{text}</text></response>") == {
        "actions": ["REPLY"],
        "text": text,
    }


REFLECTION = """<response>
  <thought>I was helpful.</thought>
  <facts>
    <fact><claim>User likes coffee</claim><type>fact</type><in_bio>false</in_bio><already_known>false</already_known></fact>
    <fact><claim>User is tired today</claim><type>status</type><in_bio>false</in_bio><already_known>false</already_known></fact>
  </facts>
  <relationships>
    <relationship><sourceEntityId>u-1</sourceEntityId><targetEntityId>a-1</targetEntityId><tags>dm_interaction,friendly</tags></relationship>
  </relationships>
</response>"""


def test_reflection_output_becomes_lists_of_dicts() -> None:
    out = parse_response(REFLECTION)
    assert out == {
        "thought": "I was helpful.",
        "facts": [
            {"claim": "User likes coffee", "type": "fact", "in_bio": "false", "already_known": "false"},
            {"claim": "User is tired today", "type": "status", "in_bio": "false", "already_known": "false"},
        ],
        "relationships": [{"sourceEntityId": "u-1", "targetEntityId": "a-1", "tags": "dm_interaction,friendly"}],
    }


def test_reflection_collections_are_lists_even_when_empty_or_single() -> None:
    out = parse_response("<response><thought>t</thought><facts></facts><relationships/></response>")
    assert out == {"thought": "t", "facts": [], "relationships": []}
    single = parse_response("<response><facts><fact><claim>c</claim></fact></facts></response>")
    assert single == {"facts": [{"claim": "c"}]}


def test_nested_elements_become_dicts_and_repeated_children_lists() -> None:
    out = parse_response(
        "<response><identifiers><username>dev</username><roomName>general</roomName></identifiers>"
        "<tags><tag>a</tag><tag>b</tag></tags><group><item>1</item><item>2</item><note>n</note></group></response>"
    )
    assert out == {
        "identifiers": {"username": "dev", "roomName": "general"},
        "tags": ["a", "b"],
        "group": {"item": ["1", "2"], "note": "n"},
    }


def test_role_assignments_are_a_list() -> None:
    out = parse_response(
        "<response><assignments><assignment><entityId>John</entityId><newRole>ADMIN</newRole></assignment></assignments></response>"
    )
    assert out == {"assignments": [{"entityId": "John", "newRole": "ADMIN"}]}


@pytest.mark.parametrize(
    "answer",
    [
        '{"thought": "t", "actions": "REPLY, X", "simple": "true"}',
        '```json\n{"thought": "t", "actions": ["REPLY", "X"], "simple": true}\n```',
        'Here you go:\n```json\n{"thought": "t", "actions": ["REPLY", "X"], "simple": true}\n```',
        'Answer: {"response": {"thought": "t", "actions": ["REPLY,X"], "simple": "TRUE"}} done',
    ],
)
def test_json_answers_are_read(answer) -> None:
    assert parse_response(answer) == {"thought": "t", "actions": ["REPLY", "X"], "simple": True}


def test_json_with_markup_in_strings_is_not_read_as_xml() -> None:
    assert parse_response('{"text": "<b>hi</b>"}') == {"text": "<b>hi</b>"}


def test_dict_from_a_mock_is_returned_normalised_without_mutating_it() -> None:
    mock = {"thought": "Responding to greeting", "actions": ["REPLY"], "text": "Hello!", "simple": True}
    assert parse_response(mock) == mock
    assert parse_response({"thought": "User greeted me", "message": "Hello!"}) == {
        "thought": "User greeted me",
        "message": "Hello!",
    }
    raw = {"actions": "REPLY,IGNORE"}
    assert parse_response(raw) == {"actions": ["REPLY", "IGNORE"]} and raw == {"actions": "REPLY,IGNORE"}


def test_dict_reflection_mock_passes_through_with_real_booleans() -> None:
    mock = {
        "thought": "t",
        "facts": [{"claim": "User likes coffee", "type": "fact", "in_bio": False, "already_known": False}],
        "relationships": [],
    }
    assert parse_response(mock) == mock


@pytest.mark.parametrize(
    "answer",
    [None, "", "   ", "garbage", "no tags at all.", "<>", "<1>x</1>", "[1, 2]", {}, 42, ["x"], "<think>only thinking"],
)
def test_answers_without_pairs_are_none(answer) -> None:
    assert parse_response(answer) is None


def test_bytes_are_decoded() -> None:
    # parse_response decodes bytes, though its signature does not name them yet
    assert parse_response(b"<action>RESPOND</action>") == {"action": "RESPOND"}  # type: ignore[arg-type]


def test_random_input_never_raises() -> None:
    rng = random.Random(20240601)
    alphabet = "<>/{}[]\"':,&;#!-_ \n\tabcxyzACTIONS0123`"
    words = [
        "<response>",
        "</response>",
        "<think>",
        "</think>",
        "<actions>",
        "</actions>",
        "<a>",
        "</a>",
        "<facts>",
        "<fact>",
        "</fact>",
        "```json\n",
        "```",
        '{"a":',
        "}",
        "&lt;",
        "&#99999999;",
        "<![CDATA[",
        "]]>",
        "<x/>",
    ]
    for _ in range(2000):
        parts = [rng.choice(words) if rng.random() < 0.3 else rng.choice(alphabet) for _ in range(rng.randint(0, 80))]
        result = parse_response("".join(parts))
        assert result is None or isinstance(result, dict)


def test_pathological_input_is_handled_quickly() -> None:
    nested = "<a>" * 5000 + "x" + "</a>" * 5000
    assert parse_response(nested) is not None
    assert parse_response("<a " * 20000) is None
    assert parse_response("{" * 5000) is None
    assert parse_response("<x>" * 20000) is None
    assert parse_response("".join(f"<a{i}>" for i in range(20000))) is None
    assert parse_response("<think>" * 20000) is None
    assert parse_response("```json\n" * 5000) is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # Cut in the reply: kept to its last whole sentence.
        (
            '{"thought": "ok", "actions": ["REPLY"], "providers": [], "text": "Hello there. How are yo',
            {"thought": "ok", "actions": ["REPLY"], "providers": [], "text": "Hello there."},
        ),
        # Cut after the reply, in what to draw: the reply is whole.
        (
            '{"thought": "ok", "actions": ["REPLY"], "text": "Hi!", "imagePrompt": "a cat on a',
            {"thought": "ok", "actions": ["REPLY"], "text": "Hi!", "imagePrompt": "a cat on a"},
        ),
        # Cut in a name or a key: back to the last whole member.
        ('{"thought": "ok", "actions": ["REPLY", "GENER', {"thought": "ok", "actions": ["REPLY"]}),
        (
            '{"thought": "ok", "actions": ["REPLY"], "text": "Hi", "imageProm',
            {"thought": "ok", "actions": ["REPLY"], "text": "Hi"},
        ),
        ('{"thought": "an escape \\u00', {"thought": "an escape "}),
    ],
)
def test_a_json_answer_cut_off_by_the_token_bound_is_read_as_far_as_it_got(
    answer: str, expected: dict[str, object]
) -> None:
    assert parse_response(answer) == expected


def test_a_json_answer_that_is_broken_not_cut_is_not_repaired() -> None:
    assert parse_response('{"text": "hi"}} and more') == {"text": "hi"}
    assert parse_response('{"text": "hi" "oops": 1}') is None
    assert parse_response("{") is None
