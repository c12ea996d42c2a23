"""Prompt rendering: substitution, sections, malformed templates, speaker names, templates."""

import random
import re

import pytest

from plugins.core._prompts import DEFAULT_TEMPLATES, render, template

NAME = re.compile(r"[0-9a-z]{6}")


def test_substitutes_values_unescaped_and_tolerates_spaces_in_braces() -> None:
    out = render("{{agentName}} says {{ text }} / {{{text}}}", {"agentName": "Ada", "text": "<b>&</b>"})
    assert out == "Ada says <b>&</b> / <b>&</b>"


def test_missing_keys_and_none_render_empty() -> None:
    assert render("[{{nothing}}][{{none}}][{{a.b.c}}]", {"none": None}) == "[][][]"


def test_values_are_rendered_as_documented() -> None:
    values = {"items": ["a", 1, True], "flag": False, "obj": {"k": "v"}, "n": 0}
    assert render("{{items}}|{{flag}}|{{obj}}|{{n}}", values) == 'a, 1, true|false|{"k": "v"}|0'


def test_dotted_paths_read_nested_mappings() -> None:
    assert render("{{user.profile.name}}", {"user": {"profile": {"name": "Bo"}}}) == "Bo"


def test_values_are_not_rendered_as_templates() -> None:
    assert render("{{x}}", {"x": "{{#if y}}{{y}}{{/if}}", "y": "no"}) == "{{#if y}}{{y}}{{/if}}"


@pytest.mark.parametrize(
    ("value", "expected"), [(True, "yes"), ("x", "yes"), (False, "no"), ("", "no"), ([], "no"), (None, "no")]
)
def test_if_else_follows_truthiness(value, expected) -> None:
    assert render("{{#if v}}yes{{else}}no{{/if}}", {"v": value}) == expected


def test_if_on_a_missing_key_takes_the_else_branch() -> None:
    assert render("{{#if nope}}yes{{else}}no{{/if}}", {}) == "no"
    assert render("{{#unless nope}}shown{{/unless}}", {}) == "shown"


def test_each_iterates_lists_with_this_and_index() -> None:
    assert render("{{#each xs}}{{@index}}={{this}};{{/each}}", {"xs": ["a", "b"]}) == "0=a;1=b;"


def test_each_over_dicts_reads_item_keys_and_outer_values() -> None:
    values = {"people": [{"name": "Al"}, {"name": "Bea"}], "greeting": "hi"}
    assert render("{{#each people}}{{greeting}} {{name}}/{{this.name}} {{/each}}", values) == "hi Al/Al hi Bea/Bea "


def test_nested_each_and_if() -> None:
    values = {"rows": [["a", "b"], []]}
    out = render("{{#each rows}}[{{#each this}}{{#if @first}}^{{/if}}{{this}}{{/each}}]{{/each}}", values)
    assert out == "[^ab][]"


def test_each_else_renders_for_empty_or_non_list() -> None:
    assert render("{{#each xs}}{{this}}{{else}}none{{/each}}", {"xs": []}) == "none"
    assert render("{{#each xs}}{{this}}{{else}}none{{/each}}", {"xs": "abc"}) == "none"


def test_comments_render_nothing() -> None:
    assert render("a{{! note }}b{{!-- has }} inside --}}c", {}) == "abc"


@pytest.mark.parametrize(
    "malformed",
    [
        "start {{#if x}} never closed",
        "start {{#each xs}} never closed {{this}}",
        "stray {{/if}} closer",
        "stray {{else}} else",
        "{{#if x}}{{#each xs}}inner{{/if}}",
        "unsupported {{#with x}}helper{{/with}} and {{else if y}}",
        "unterminated {{ tag",
        "{{#if}}no key{{/if}}",
    ],
)
def test_malformed_templates_render_literally_without_raising(malformed) -> None:
    out = render(malformed, {"x": True, "xs": [1]})
    assert "{{" in out


def test_random_templates_never_raise() -> None:
    rng = random.Random(7)
    pieces = [
        "{{",
        "}}",
        "{{{",
        "}}}",
        "#if ",
        "#each ",
        "#unless ",
        "/if",
        "/each",
        "else",
        "this",
        "x",
        "xs",
        "@index",
        "name1",
        "user",
        "!",
        "--",
        " ",
        "a",
        ".",
        "\n",
    ]
    for _ in range(2000):
        tpl = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert isinstance(render(tpl, {"x": True, "xs": [1, {"x": 2}]}, rng=rng), str)


def test_unclosed_section_keeps_its_tag_and_still_substitutes_inside() -> None:
    assert render("{{#if x}} hi {{who}}", {"x": False, "who": "Al"}) == "{{#if x}} hi Al"


def test_closer_matches_the_nearest_opener_of_its_kind() -> None:
    assert render("{{#if x}}{{#each xs}}in{{/if}}", {"x": True, "xs": []}) == "{{#each xs}}in"


def test_deeply_nested_sections_do_not_raise() -> None:
    depth = 500
    out = render("{{#if x}}" * depth + "core" + "{{/if}}" * depth, {"x": True})
    assert "core" in out


def test_name_placeholders_get_one_random_name_per_render() -> None:
    out = render("{{name1}} met {{ name2 }}; {{name1}} again, {{user1}} and {{user}}", {}, rng=random.Random(7))
    first, second, third, fourth, fifth = re.findall(r"[0-9a-z]{6}", out)
    assert first == third == fourth == fifth != second
    assert "{{" not in out


def test_name_placeholders_inside_values_share_the_renders_names() -> None:
    out = render("{{name1}} | {{history}}", {"history": "{{name1}}: hello"}, rng=random.Random(1))
    left, right = out.split(" | ")
    assert right == f"{left}: hello" and NAME.fullmatch(left)


def test_name_placeholders_given_as_values_are_substituted_normally() -> None:
    assert render("{{name1}}", {"name1": "Zed"}) == "Zed"


def test_seeded_render_is_deterministic() -> None:
    tpl = "{{name1}} {{name2}} {{user3}}"
    assert render(tpl, {}, rng=random.Random(42)) == render(tpl, {}, rng=random.Random(42))


def test_default_templates_exist_under_upstream_names_with_their_inputs() -> None:
    assert set(DEFAULT_TEMPLATES) == {
        "shouldRespondTemplate",
        "messageHandlerTemplate",
        "reflectionTemplate",
        "targetExtractionTemplate",
        "componentTemplate",
        "optionExtractionTemplate",  # upstream's action templates
        "roleExtractionTemplate",
        "settingsExtractionTemplate",  # inline prompts upstream; named here to override
        "summaryTemplate",  # troupe's: compacting old messages (plugins/core/_retention.py)
        "troupeDecisionTemplate",  # troupe's: one decision for the characters sharing a room (_troupe.py)
        "conversationSummaryTemplate",  # troupe's: SUMMARIZE_CONVERSATION, a chunk (_summaries.py)
        "summaryCombineTemplate",  # troupe's: SUMMARIZE_CONVERSATION, the chunks' summaries combined
        "attachmentsTemplate",  # troupe's: CHAT_WITH_ATTACHMENTS (upstream's is inline in plugin-discord)
        "toolUseTemplate",  # troupe's: a turn that may call tools (_tool_loop.py)
        "toolChoiceTemplate",  # troupe's: CALL_TOOL, the tool and its arguments
        "toolAnswerTemplate",  # troupe's: CALL_TOOL, the reply made of the result
    }
    troupe = DEFAULT_TEMPLATES["troupeDecisionTemplate"]
    for needle in ("{{providers}}", "{{troupeMembers}}", "{{troupeNames}}", "<answer>", "<stop>"):
        assert needle in troupe
    should = DEFAULT_TEMPLATES["shouldRespondTemplate"]
    assert "{{agentName}}" in should and "{{providers}}" in should
    assert "<action>RESPOND | IGNORE | STOP</action>" in should and "stops taking part" in should
    handler = DEFAULT_TEMPLATES["messageHandlerTemplate"]
    for needle in (
        "{{providers}}",
        "{{actionNames}}",
        "<thought>",
        "<actions>",
        "<providers>",
        "<text>",
        "REPLY comes first",
    ):
        assert needle in handler
    reflection = DEFAULT_TEMPLATES["reflectionTemplate"]
    for key in (
        "agentName",
        "recentMessages",
        "entitiesInRoom",
        "existingRelationships",
        "knownFacts",
        "senderName",
        "senderId",
    ):
        assert "{{" + key + "}}" in reflection
    for needle in (
        "<facts>",
        "<fact><claim>",
        "<in_bio>false</in_bio>",
        "<relationships>",
        "<sourceEntityId>",
        "<tags>",
    ):
        assert needle in reflection


@pytest.mark.parametrize("name", sorted(DEFAULT_TEMPLATES))
def test_default_templates_render_every_placeholder(name) -> None:
    keys = re.findall(r"\{\{(\w+)\}\}", DEFAULT_TEMPLATES[name])
    out = render(DEFAULT_TEMPLATES[name], {key: f"<{key.upper()}>" for key in keys})
    assert "{{" not in out and "<AGENTNAME>" in out


def test_character_template_overrides_the_default_and_agent_name_is_substituted() -> None:
    custom = {"messageHandlerTemplate": "Speak as {{agentName}}: {{providers}}"}
    chosen = template(custom, "messageHandlerTemplate")
    assert render(chosen, {"agentName": "Ada", "providers": "ctx"}) == "Speak as Ada: ctx"


def test_blank_or_absent_override_falls_back_to_the_default() -> None:
    assert template({}, "shouldRespondTemplate") == DEFAULT_TEMPLATES["shouldRespondTemplate"]
    assert template({"reflectionTemplate": "  "}, "reflectionTemplate") == DEFAULT_TEMPLATES["reflectionTemplate"]


def test_unknown_template_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="no template 'nope'.*messageHandlerTemplate"):
        template({}, "nope")
    assert template({"nope": "custom"}, "nope") == "custom"
