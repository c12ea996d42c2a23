"""A turn that uses tools, through the whole pipeline: the model (TEXT_TOOLS) calls tools from an
in-memory Toolbox, the results go back, and its final text is the one reply; bounded, with
the rules on who may run what, and every call in the message's trace."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bot.kernel.buttons import Press
from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import ModelContextExceeded, ToolsRefused
from bot.kernel.messages import Status
from bot.kernel.models import ModelType
from bot.kernel.tools import ToolAccess, ToolCall, ToolTurn
from bot.kernel.trace_text import describe
from bot.kernel.traces import ToolRunState
from bot.kernel.types import ChannelType, Memory
from bot.runtime.components import TOOLBOX
from bot.sdk import Role
from tests.fakes.toolbox import MemoryToolbox, spec

from .harness import HUMAN, OTHER_BOT, Harness, plan
from .test_presses import press


@dataclass
class ToolModel:
    """A scripted TEXT_TOOLS model: each request takes the next answer (a ToolTurn, a callable of
    the params, or an exception); the last one repeats."""

    answers: list[Any]
    asked: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, runtime: Any, params: dict[str, Any]) -> ToolTurn:
        self.asked.append(params)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer(params) if callable(answer) else answer


async def with_tools(h: Harness, *answers: Any, context_length: int | None = None) -> tuple[MemoryToolbox, ToolModel]:
    box = MemoryToolbox()

    async def forecast(args: Mapping[str, Any]) -> str:
        return f"sunny, 21 C in {args.get('city')}"

    box.add(spec("weather__forecast", "The forecast for a city."), forecast)
    h.rt.register_service(TOOLBOX, box)
    model = ToolModel(list(answers))
    window = None if context_length is None else (lambda: context_length)
    h.rt.register_model(ModelType.TEXT_TOOLS, model, "script", context_length=window)
    return box, model


def calls(*pairs: tuple[str, dict[str, Any]]) -> ToolTurn:
    return ToolTurn(calls=tuple(ToolCall(f"c{n}", name, args) for n, (name, args) in enumerate(pairs)))


def results_of(params: dict[str, Any]) -> list[tuple[str, bool, str]]:
    return [(r.call.name, r.ok, r.text) for done in params.get("rounds") or [] for r in done.results]


def answer_with_results(params: dict[str, Any]) -> ToolTurn:
    """The model's final text, made of what the tools gave it."""
    return ToolTurn(text="Here you go: " + "; ".join(text for _, _, text in results_of(params)))


async def test_one_tool_call_then_an_answer_that_used_its_result(harness) -> None:
    h = await harness(ChannelType.DM)
    box, model = await with_tools(h, calls(("weather__forecast", {"city": "Oslo"})), answer_with_results)
    outcome = await h.say("what's the weather in Oslo?", id="m-1")
    assert outcome.status is Status.REPLIED and outcome.actions == ("REPLY",)
    (sent,) = h.sent  # one reply, through REPLY
    assert sent["text"] == "Here you go: sunny, 21 C in Oslo"
    assert [c.arguments for c in box.calls] == [{"city": "Oslo"}]
    (context,) = box.contexts  # the call knows the message it answers, and can fetch its files
    assert context is not None and context.message.id == "m-1" and context.fetch is not None
    assert len(model.asked) == 2 and h.large_calls == 0  # two requests for the turn, no plan
    first = model.asked[0]
    assert [t.name for t in first["tools"]] == ["weather__forecast"]
    assert "what's the weather in Oslo?" in first["prompt"] and "untrusted" in first["prompt"]
    # The trace keeps each call: name, arguments, duration, ok and the start of its result.
    trace = await h.rt.store.get_trace("m-1")
    assert trace is not None
    (run,) = trace.tool_calls
    assert (run.name, run.arguments, run.ok, run.result) == (
        "weather__forecast", '{"city": "Oslo"}', True, "sunny, 21 C in Oslo",
    )  # fmt: skip
    assert [c.model_type for c in trace.model_calls] == ["TEXT_TOOLS", "TEXT_TOOLS"]
    assert 'tool      weather__forecast {"city": "Oslo"}' in describe(trace)


async def test_a_message_without_a_tool_call_takes_one_request(harness) -> None:
    h = await harness(ChannelType.DM)
    box, model = await with_tools(h, ToolTurn(text="Hi Sam!"))
    assert (await h.say("hi")).status is Status.REPLIED
    assert h.sent[0]["text"] == "Hi Sam!" and len(model.asked) == 1 and not box.calls and h.large_calls == 0


async def test_a_prompt_refused_as_too_long_is_asked_again_smaller_once(harness) -> None:
    h = await harness(ChannelType.DM)
    too_long = ModelContextExceeded("prompt too long", limit=1024)
    _, model = await with_tools(h, ToolTurn(text="Mm."), context_length=16_000)
    for n in range(30):  # a long conversation: a prompt that can be cut
        await h.say(f"line {n}: " + "the bees of the meadow are humming along " * 10, id=f"old-{n}")
    model.asked.clear()
    model.answers[:] = [too_long, calls(("weather__forecast", {"city": "Oslo"})), answer_with_results]
    outcome = await h.say("what's the weather in Oslo?")
    assert outcome.status is Status.REPLIED and h.sent[-1]["text"] == "Here you go: sunny, 21 C in Oslo"
    first, second, third = (asked["prompt"] for asked in model.asked)
    assert len(second) < len(first) and third == second  # built again smaller, and kept so for the turn

    model.asked.clear()
    model.answers[:] = [too_long]
    refused = await h.say("and in Bergen?")
    assert refused.status is Status.MODEL_UNREACHABLE and len(model.asked) == 2  # smaller once, then it stands


async def test_two_calls_in_one_round_run_at_the_same_time(harness) -> None:
    h = await harness(ChannelType.DM)
    box, _model = await with_tools(h, calls(("slow_a", {}), ("slow_b", {})), answer_with_results)
    both_started = asyncio.Event()
    started: list[str] = []

    def waiting_for_the_other(name: str) -> Callable[[Mapping[str, Any]], Any]:
        async def run(args: Mapping[str, Any]) -> str:
            started.append(name)
            if len(started) == 2:
                both_started.set()
            await both_started.wait()  # one after the other, this would wait until its timeout
            return f"{name} done"

        return run

    box.add(spec("slow_a"), waiting_for_the_other("a"))
    box.add(spec("slow_b"), waiting_for_the_other("b"))
    assert (await h.say("do both")).status is Status.REPLIED
    assert h.sent[0]["text"] == "Here you go: a done; b done"  # in the calls' order


async def test_a_model_that_keeps_calling_stops_at_the_round_bound_and_says_what_it_could_not_do(harness) -> None:
    h = await harness(ChannelType.DM, settings={"TOOL_MAX_ROUNDS": "2"})
    box, model = await with_tools(h, calls(("weather__forecast", {"city": "Oslo"})))
    assert (await h.say("weather forever")).status is Status.REPLIED
    assert len(box.calls) == 2 and len(model.asked) == 3  # two rounds, then one last word with no tools
    assert model.asked[-1]["tools"] == [] and "No more tools" in model.asked[-1]["prompt"]
    (sent,) = h.sent
    assert "couldn't finish" in sent["text"] and "2 rounds of tool calls" in sent["text"]
    assert "weather__forecast" in sent["text"]


async def test_at_the_bound_the_model_answers_with_what_it_has(harness) -> None:
    h = await harness(ChannelType.DM, settings={"TOOL_MAX_ROUNDS": "1"})

    def last_word(params: dict[str, Any]) -> ToolTurn:
        if params["tools"]:
            return calls(("weather__forecast", {"city": "Oslo"}))
        return ToolTurn(text="Oslo is sunny; I could not check Bergen.")

    _box, model = await with_tools(h, last_word)
    await h.say("Oslo and Bergen?")
    assert h.sent[0]["text"] == "Oslo is sunny; I could not check Bergen." and len(model.asked) == 2


async def test_a_bots_message_runs_no_tool(harness) -> None:
    h = await harness(ChannelType.DM)
    box, model = await with_tools(h, calls(("weather__forecast", {"city": "Oslo"})))
    h.large.append(plan("Hello, Brann."))
    bot = MemoryMetadata(author_is_bot=True, is_mention=True)
    outcome = await h.say("Ada, weather in Oslo?", entity=OTHER_BOT, metadata=bot)
    assert outcome.status is Status.REPLIED
    assert not model.asked and not box.calls and h.large_calls == 1  # planned as without tools


async def test_an_admin_only_tool_is_refused_for_a_member_and_run_for_an_admin(harness) -> None:
    h = await harness(ChannelType.GROUP)
    box, model = await with_tools(h, calls(("ban", {"who": "Cleo"})), answer_with_results)

    async def ban(args: Mapping[str, Any]) -> str:
        return f"banned {args['who']}"

    box.add(spec("ban", access=ToolAccess.ADMINS), ban)
    await h.say("Ada, ban Cleo")
    assert not box.calls
    ((name, ok, text),) = results_of(model.asked[1])
    assert (name, ok) == ("ban", False) and "only the owner or an admin" in text
    assert "only the owner or an admin" in h.sent[0]["text"]  # the model told the person

    world = await h.rt.store.get_world(h.world)
    assert world is not None
    world.metadata = replace(world.metadata, roles={HUMAN: Role.ADMIN})
    await h.rt.store.update_world(world)
    model.answers[:] = [calls(("ban", {"who": "Cleo"})), answer_with_results]
    await h.say("Ada, ban Cleo now")
    assert [c.arguments for c in box.calls] == [{"who": "Cleo"}]
    assert h.sent[-1]["text"] == "Here you go: banned Cleo"


async def test_a_tool_that_changes_things_asks_with_buttons_and_runs_on_yes(harness) -> None:
    h = await harness(ChannelType.DM)
    box, model = await with_tools(
        h, calls(("notes__write", {"text": "buy milk"})), answer_with_results, ToolTurn(text="Saved your note.")
    )

    async def write(args: Mapping[str, Any]) -> str:
        return f"wrote {args['text']!r}"

    box.add(spec("notes__write", changes_things=True), write)
    assert (await h.say("note: buy milk", id="m-ask")).status is Status.REPLIED
    assert not box.calls  # not before the yes
    reply, question = h.sent
    assert "asked to confirm" in reply["text"]
    asked = await h.rt.store.get_trace("m-ask")  # the call waits: neither run nor failed
    assert asked is not None and [(t.name, t.state, t.result) for t in asked.tool_calls] == [
        ("notes__write", ToolRunState.WAITING, "")
    ]
    assert 'notes__write {"text": "buy milk"}, not run: waiting for the person to press yes' in describe(asked)
    assert "notes__write" in question["text"] and "buy milk" in question["text"]
    yes, no = question["buttons"]
    assert yes.label == "Yes: notes__write" and no.label == "No: notes__write"

    pressed = Content(text=yes.label, button=Press(yes.value, yes.label), source="discord")
    outcome = await h.deliver(Memory(id="m-yes", entity_id=HUMAN, room_id=h.room, content=pressed))
    assert outcome.status is Status.REPLIED
    assert [c.arguments for c in box.calls] == [{"text": "buy milk"}]
    trace = await h.rt.store.get_trace("m-yes")  # the press's trace has the call
    assert trace is not None and [(t.name, t.arguments, t.ok) for t in trace.tool_calls] == [
        ("notes__write", '{"text": "buy milk"}', True)
    ]
    assert h.sent[-1]["text"] == "Saved your note."  # the model's words on what came of it
    (confirming,) = [p for p in model.asked if not p["tools"]]
    assert results_of(confirming) == [("notes__write", True, "wrote 'buy milk'")]

    # Pressed again, it does not run twice.
    await press(h, yes.value, yes.label)
    assert len(box.calls) == 1 and "no longer open" in h.sent[-1]["text"]


async def test_no_on_a_confirmation_runs_nothing(harness) -> None:
    h = await harness(ChannelType.DM)
    box, _ = await with_tools(h, calls(("notes__write", {"text": "x"})), answer_with_results)

    async def write(args: Mapping[str, Any]) -> str:
        return "wrote"

    box.add(spec("notes__write", changes_things=True), write)
    await h.say("note x")
    no = h.sent[-1]["buttons"][1]
    await press(h, no.value, no.label)
    assert not box.calls and h.sent[-1]["text"] == "OK, I won't run notes__write."


async def test_unknown_tools_bad_arguments_and_the_rate_limit_are_error_results(harness) -> None:
    h = await harness(ChannelType.DM, settings={"TOOL_CALLS_PER_MINUTE": "1"})
    bad = ToolCall("c9", "weather__forecast", {}, problem="the arguments were not a JSON object ('{')")
    first = ToolTurn(
        calls=(
            ToolCall("c1", "nope", {}),
            bad,
            ToolCall("c2", "weather__forecast", {"city": "Oslo"}),
            ToolCall("c3", "weather__forecast", {"city": "Rome"}),
        )
    )
    box, model = await with_tools(h, first, answer_with_results)
    assert (await h.say("weather?")).status is Status.REPLIED
    results = results_of(model.asked[1])
    assert [ok for _, ok, _ in results] == [False, False, True, False]
    assert "no tool named 'nope'" in results[0][2] and "weather__forecast" in results[0][2]
    assert "not a JSON object" in results[1][2]
    assert "more than 1 tool calls in a minute" in results[3][2]
    assert len(box.calls) == 1


async def test_a_huge_result_is_cut_with_a_note(harness) -> None:
    h = await harness(ChannelType.DM, settings={"TOOL_RESULTS_MAX_CHARS": "1000"})
    box, model = await with_tools(h, calls(("big", {})), answer_with_results)

    async def big(args: Mapping[str, Any]) -> str:
        return "x" * 50_000

    box.add(spec("big"), big)
    await h.say("big please")
    ((_, ok, text),) = results_of(model.asked[1])
    assert ok and text.startswith("x" * 1000) and "[cut:" in text and len(text) < 1200


async def test_a_server_that_refuses_tools_is_planned_as_without_them(harness) -> None:
    h = await harness(ChannelType.DM)
    box, _model = await with_tools(h, ToolsRefused("takes no tools", provider="script"))
    h.large.append(plan("Hello without tools."))
    assert (await h.say("hi")).status is Status.REPLIED
    assert h.sent[0]["text"] == "Hello without tools." and h.large_calls == 1 and not box.calls


# -- without a model that calls tools: CALL_TOOL in the plan ----------------------------------


def toolbox_only(h: Harness) -> MemoryToolbox:
    box = MemoryToolbox()

    async def forecast(args: Mapping[str, Any]) -> str:
        return f"sunny, 21 C in {args.get('city')}"

    box.add(spec("weather__forecast", "The forecast for a city."), forecast)
    h.rt.register_service(TOOLBOX, box)
    return box


async def test_without_tool_calling_the_plan_picks_call_tool_and_a_second_prompt_answers(harness) -> None:
    h = await harness(ChannelType.DM)
    box = toolbox_only(h)
    h.large += [
        plan("Let me check.", actions="REPLY,CALL_TOOL"),
        '<response><tool>weather__forecast</tool><arguments>{"city": "Oslo"}</arguments></response>',
        "It's sunny in Oslo, 21 C.",
    ]
    outcome = await h.say("weather in Oslo?", id="m-plan")
    assert outcome.status is Status.REPLIED and outcome.actions == ("REPLY", "CALL_TOOL")
    assert "CALL_TOOL" in h.prompts[0]  # offered in the plan
    assert "weather__forecast" in h.prompts[1]  # the tools listed for the choice
    assert 'untrusted="true"' in h.prompts[2] and "sunny, 21 C in Oslo" in h.prompts[2]
    assert [s["text"] for s in h.sent] == ["Let me check.", "It's sunny in Oslo, 21 C."]
    assert [c.arguments for c in box.calls] == [{"city": "Oslo"}]
    trace = await h.rt.store.get_trace("m-plan")
    assert trace is not None and [(t.name, t.ok) for t in trace.tool_calls] == [("weather__forecast", True)]


async def test_call_tool_with_arguments_that_are_not_json_runs_nothing_and_says_so(harness) -> None:
    h = await harness(ChannelType.DM)
    box = toolbox_only(h)
    h.large += [
        plan("", actions="CALL_TOOL"),
        "<response><tool>weather__forecast</tool><arguments>{city: Oslo</arguments></response>",
        "",
    ]
    await h.say("weather in Oslo?")
    assert not box.calls
    assert "not a JSON object" in h.prompts[2]
    assert h.sent[-1]["text"].startswith("I couldn't use weather__forecast")


async def test_call_tool_is_not_offered_for_a_bots_message(harness) -> None:
    h = await harness(ChannelType.DM)
    toolbox_only(h)
    h.large.append(plan("Hi Brann."))
    await h.say("Ada?", entity=OTHER_BOT, metadata=MemoryMetadata(author_is_bot=True, is_mention=True))
    assert "CALL_TOOL" not in h.prompts[0]
