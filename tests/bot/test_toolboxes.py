"""A character's tools from every plugin (bot/runtime/toolboxes.py): toolboxes and troupe's own
tools as one toolbox, who gets troupe's own tools (``TROUPE_TOOLS``), and how an own tool's call
ends whatever the tool does."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from bot.config import plugins as plugin_registry
from bot.config.character import Character, load_character
from bot.daemon.platform_plans import preflight
from bot.kernel.content import Content
from bot.kernel.errors import ConfigError
from bot.kernel.tools import ToolCall, ToolContext, ToolFailed, ToolSpec
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX
from bot.runtime.toolboxes import MAX_TOOLS, OwnTool, OwnToolChoice, Toolboxes
from bot.store import Database
from tests.fakes.toolbox import MemoryToolbox, spec

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def own(name: str, run: Any = None, parameters: Mapping[str, Any] = CITY) -> OwnTool:
    async def echo(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        return f"{name}: {dict(arguments)}"

    return OwnTool(ToolSpec(name, f"The {name} tool.", parameters, "troupe"), run or echo)


def toolboxes(**options: Any) -> Toolboxes:
    """Toolboxes of a runtime that is only a name (its tools here need no more)."""
    return Toolboxes(cast(AgentRuntime, SimpleNamespace(character=SimpleNamespace(name="Ada"))), **options)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall("c1", name, arguments)


async def test_own_tools_come_first_and_a_call_reaches_the_toolbox_that_offers_it() -> None:
    box = MemoryToolbox()

    async def from_box(arguments: Mapping[str, Any]) -> str:
        return "from the box"

    box.add(spec("weather"), from_box)
    box.add(spec("search_knowledge"), from_box)  # the same name as an own tool: the own one is offered
    tools = toolboxes()
    tools.add(box)
    tools.add_tool(own("search_knowledge"))
    assert [t.name for t in tools.tools()] == ["search_knowledge", "weather"]
    asked = ToolContext(Memory(entity_id="e", room_id="r", content=Content(text="hi")))
    result = await tools.call(call("weather"), timeout=5, context=asked)
    assert result.ok and result.text == "from the box" and box.contexts == [asked]
    mine = await tools.call(call("search_knowledge", city="Oslo"), timeout=5)
    assert mine.ok and mine.text == "search_knowledge: {'city': 'Oslo'}" and len(box.calls) == 1
    missing = await tools.call(call("snow"), timeout=5)
    assert not missing.ok and "no tool named 'snow'" in missing.text and "weather" in missing.text
    with pytest.raises(ValueError, match="already offered"):
        tools.add_tool(own("search_knowledge"))


async def test_an_own_tools_call_ends_in_a_result_whatever_the_tool_does(caplog: pytest.LogCaptureFixture) -> None:
    async def refuses(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        raise ToolFailed("nothing to learn: give text, a link or an attachment")

    async def breaks(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        raise KeyError("bug")

    async def hangs(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        await asyncio.Event().wait()
        return ""

    async def talks(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        return "x" * 50_000

    tools = toolboxes(max_result_chars=1000)
    for name, run in [("refuses", refuses), ("breaks", breaks), ("hangs", hangs), ("talks", talks)]:
        tools.add_tool(own(name, run, {"type": "object"}))
    tools.add_tool(own("strict"))
    refused = await tools.call(call("refuses"), timeout=5)
    assert (refused.ok, refused.text) == (False, "nothing to learn: give text, a link or an attachment")
    with caplog.at_level(logging.WARNING, "bot.runtime.toolboxes"):
        broken = await tools.call(call("breaks"), timeout=5)
    assert not broken.ok and "breaks failed (KeyError)" in broken.text
    assert "Ada: tool breaks failed" in caplog.text and "Traceback" in caplog.text  # the operator sees the bug
    hung = await tools.call(call("hangs"), timeout=0.2)
    assert not hung.ok and "did not finish within 0.2 s" in hung.text
    long = await tools.call(call("talks"), timeout=5)
    assert long.ok and long.truncated and len(long.text) <= 1000 and "50,000 characters" in long.text
    wrong = await tools.call(call("strict", town="Oslo"), timeout=5)
    assert not wrong.ok and "'city' is a required property" in wrong.text


async def test_a_character_is_offered_at_most_max_tools(caplog: pytest.LogCaptureFixture) -> None:
    box = MemoryToolbox()

    async def nothing(arguments: Mapping[str, Any]) -> str:
        return ""

    for n in range(MAX_TOOLS + 10):
        box.add(spec(f"t{n}"), nothing)
    tools = toolboxes()
    tools.add_tool(own("search_knowledge"))
    tools.add(box)
    with caplog.at_level(logging.WARNING):
        assert len(tools.tools()) == MAX_TOOLS
        assert len(tools.tools()) == MAX_TOOLS
    assert caplog.text.count(f"more than {MAX_TOOLS}") == 1
    late = await tools.call(call(f"t{MAX_TOOLS + 5}"), timeout=5)
    assert not late.ok  # one not offered is not run


@pytest.mark.parametrize(
    ("value", "uses_tools", "allowed"),
    [
        (None, True, {"search_knowledge", "read_link"}),
        (None, False, set()),
        ("", False, set()),
        ("all", False, {"search_knowledge", "read_link"}),
        ("none", True, set()),
        ("Search_Knowledge, read_link", False, {"search_knowledge", "read_link"}),
        ("read_link", True, {"read_link"}),
    ],
)
def test_troupe_tools_chooses_the_own_tools(value: str | None, uses_tools: bool, allowed: set[str]) -> None:
    choice = OwnToolChoice.parse(value, uses_tools=uses_tools, agent="Ada")
    assert {name for name in ("search_knowledge", "read_link") if choice.allows(name)} == allowed


def test_troupe_tools_that_is_not_a_list_of_names_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"Ada: TROUPE_TOOLS has 'read link!'.*all, none, or names"):
        OwnToolChoice.parse("read link!", uses_tools=False, agent="Ada")


def character(tmp_path: Path, **data: Any) -> Character:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x", **data}))
    return load_character(path, environ={}).raise_for_problems()


async def test_a_runtime_offers_the_own_tools_its_settings_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with Database(tmp_path / "t.db") as db:
        c = character(tmp_path, settings={"TROUPE_TOOLS": "tides, serch_knowledge"})
        rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})
        rt.register_tool(own("tides"))
        rt.register_tool(own("stars"))
        with caplog.at_level(logging.WARNING):
            await rt.start()  # core and knowledge offer theirs: read_link, search_knowledge …
        try:
            box = rt.get_service(TOOLBOX)
            assert box is not None and [t.name for t in box.tools()] == ["tides"]
            assert "Ada: TROUPE_TOOLS names serch_knowledge, which no plugin of this character offers" in caplog.text
        finally:
            await rt.close()
        plain = AgentRuntime(c.model_copy(update={"settings": {}}), db.for_agent(c.agent_id), environ={})
        plain.register_tool(own("tides"))
        assert plain.get_service(TOOLBOX) is None  # no tools: it plans its replies with its actions


async def test_each_plugin_declares_the_own_tools_it_registers(tmp_path: Path) -> None:
    async with Database(tmp_path / "t.db") as db:
        c = character(tmp_path, settings={"TROUPE_TOOLS": "all"})
        rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})
        await rt.start()
        try:
            box = rt.get_service(TOOLBOX)
            assert isinstance(box, Toolboxes)
            declared = [tool for name in rt.loaded_plugins for tool in plugin_registry.available()[name].tools]
            assert sorted(box.own_names) == sorted(declared) and declared  # troupe check lists what is offered
        finally:
            await rt.close()


@pytest.mark.parametrize(
    ("plugins", "setting", "notes"),
    [
        (["@elizaos/plugin-mcp"], None, ["troupe's own tools: read_link, search_knowledge, process_knowledge"]),
        ([], None, []),
        ([], "search_knowledge", ["troupe's own tools: search_knowledge"]),
        (
            [],
            "read_link, serch",
            [
                "troupe's own tools: read_link",
                "TROUPE_TOOLS names serch, which none of its plugins offers (they offer: read_link, "
                "search_knowledge, process_knowledge)",
            ],
        ),
    ],
)
def test_troupe_check_names_the_own_tools_a_character_is_offered(
    tmp_path: Path, plugins: list[str], setting: str | None, notes: list[str]
) -> None:
    settings: dict[str, Any] = {"secrets": {"OPENAI_API_KEY": "sk-test-1234567"}}
    if setting is not None:
        settings["TROUPE_TOOLS"] = setting
    if plugins:
        settings["mcp"] = {"servers": {"weather": {"command": "true"}}}
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x", "plugins": plugins, "settings": settings}))
    checked = preflight(load_character(path, environ={}), {})
    assert not checked.problems and [n for n in checked.notes if "tools" in n or "TOOLS" in n] == notes


def test_troupe_check_says_what_is_wrong_with_troupe_tools(tmp_path: Path) -> None:
    path = tmp_path / "ada.json"
    body = {"name": "Ada", "bio": "x", "settings": {"TROUPE_TOOLS": "read link!", "OPENAI_API_KEY": "sk-test-1234567"}}
    path.write_text(json.dumps(body))
    (problem,) = preflight(load_character(path, environ={}), {}).problems
    assert "TROUPE_TOOLS has 'read link!', which is not a tool's name" in problem
