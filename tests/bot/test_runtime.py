"""AgentRuntime: settings, registration, models, events, state, plugin loading, tasks."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import types
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import plugins as plugin_registry
from bot.config.character import Character, load_character
from bot.config.plugins import PluginMeta
from bot.config.plugins import load_order as _load_order
from bot.kernel.content import Content
from bot.kernel.errors import ConfigError, ModelError, PluginLoadError
from bot.kernel.messages import IncomingMessage, Outcome, QuietChannel, Status
from bot.kernel.models import ModelType
from bot.kernel.record_metadata import TaskMetadata
from bot.kernel.redact import SecretFilter
from bot.kernel.time_limits import time_left
from bot.kernel.types import Memory, Task
from bot.runtime.agent import AgentRuntime, RuntimeState
from bot.runtime.components import Action, Provider, ProviderResult, TaskWorker
from bot.runtime.events import CustomEvent, MessageReceived, ModelFailed, ModelUsed
from bot.store import Database


def character(tmp_path: Path, **data) -> Character:
    path = tmp_path / "c.json"
    import json

    path.write_text(json.dumps({"name": "Ada", "bio": "x", **data}))
    result = load_character(path, environ={})
    return result.raise_for_problems()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(tmp_path / "t.db") as database:
        yield database


@pytest.fixture
async def runtime(tmp_path: Path, db: Database) -> AsyncIterator[AgentRuntime]:
    c = character(tmp_path)
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={"FROM_ENV": "env"})
    await rt.start()
    yield rt
    await rt.close()


def message(rt: AgentRuntime, text: str = "hi", id: str | None = "00000000-0000-0000-0000-0000000000aa") -> Memory:
    return Memory(entity_id=rt.agent_id, room_id=rt.agent_id, content=Content(text=text), id=id)


# -- settings --------------------------------------------------------------------------


async def test_settings_follow_the_character_then_the_environment(tmp_path: Path, db: Database) -> None:
    c = character(tmp_path, settings={"TEMP": "0.5", "FLAG": "yes", "secrets": {"KEY": "k-1234567"}})
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={"KEY": "env-key", "OTHER": "o"})
    assert rt.get_setting("KEY") == "k-1234567"
    assert rt.get_setting("OTHER") == "o"
    assert rt.get_setting("NOPE") is None
    assert rt.get_number("TEMP", 1.0) == 0.5 and rt.get_bool("FLAG") and rt.get_int("NOPE", 7) == 7
    rt.set_setting("OTHER", "override")
    assert rt.get_setting("OTHER") == "override"


async def test_a_setting_that_is_not_a_number_warns_and_uses_the_default(runtime: AgentRuntime, caplog) -> None:
    runtime.set_setting("MODEL_TIMEOUT_S", "soon")
    assert runtime.get_number("MODEL_TIMEOUT_S", 3.0) == 3.0
    assert "MODEL_TIMEOUT_S='soon' is not a number" in caplog.text


async def test_secrets_are_scrubbed_from_log_lines(tmp_path: Path, db: Database) -> None:
    c = character(tmp_path, settings={"secrets": {"OPENAI_API_KEY": "sk-never-in-logs"}})
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "key is %s", ("sk-never-in-logs",), None)
    SecretFilter(rt.shared.secrets).filter(record)
    assert record.getMessage() == "key is <redacted>"


# -- registration and models ------------------------------------------------------------


async def test_duplicate_names_are_errors(runtime: AgentRuntime) -> None:
    async def noop(*_):
        return None

    runtime.register_action(Action("X", noop))
    with pytest.raises(ValueError, match="Action X already registered"):
        runtime.register_action(Action("X", noop))
    runtime.register_provider(Provider("P", noop))
    with pytest.raises(ValueError, match="Provider P already registered"):
        runtime.register_provider(Provider("P", noop))


async def test_use_model_prefers_priority_and_falls_back_on_failure(runtime: AgentRuntime) -> None:
    calls: list[str] = []
    events: list[ModelUsed | ModelFailed] = []

    async def failing(rt, params):
        calls.append("high")
        raise RuntimeError("boom")

    async def working(rt, params):
        calls.append("low")
        return f"ok:{params['prompt']}"

    async def first_registered(rt, params):
        calls.append("tie")
        return "tie"

    async def record(event: ModelUsed | ModelFailed) -> None:
        events.append(event)

    runtime.on(ModelUsed, record)
    runtime.on(ModelFailed, record)
    runtime.register_model(ModelType.TEXT_LARGE, working, "low", priority=10)
    runtime.register_model("text:large", failing, "high", priority=50)
    runtime.register_model(ModelType.TEXT_LARGE, first_registered, "tie", priority=10)
    assert await runtime.use_model(ModelType.TEXT_LARGE, {"prompt": "p"}) == "ok:p"
    assert calls == ["high", "low"]
    assert [(e.provider, isinstance(e, ModelUsed)) for e in events] == [("high", False), ("low", True)]
    # When each provider last answered or failed, for the console's model health.
    last = {key: child.value for key, child in runtime.metrics.model_last_call.items()}
    assert set(last) == {(runtime.character.name, "high", "error"), (runtime.character.name, "low", "ok")}
    assert all(abs(at - time.time()) < 600 for at in last.values())
    logs = await runtime.store.get_logs(type="useModel:TEXT_LARGE")
    assert {(log.body["provider"], log.body["ok"]) for log in logs} == {("high", False), ("low", True)}
    assert "prompt" not in str([log.body for log in logs])
    assert await runtime.use_model(ModelType.TEXT_LARGE, {"prompt": "p"}, provider="tie") == "tie"


async def test_use_model_without_a_handler_says_what_to_add(runtime: AgentRuntime) -> None:
    with pytest.raises(ModelError, match=r"Ada: no model serves TEXT_SMALL; add a model plugin") as info:
        await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": "x"})
    assert info.value.agent == "Ada" and info.value.message.startswith("no model serves TEXT_SMALL")


async def test_a_handler_that_fails_is_the_original_of_the_model_error(runtime: AgentRuntime) -> None:
    async def single(rt, params):
        return params["text"]  # a handler that knows only {"text": ...}

    runtime.register_model(ModelType.TEXT_EMBEDDING, single, "one-at-a-time")
    with pytest.raises(ModelError, match=r"^Ada: every TEXT_EMBEDDING model failed \(KeyError\)$") as info:
        await runtime.use_model(ModelType.TEXT_EMBEDDING, {"texts": ["a"]})
    assert isinstance(info.value.original, KeyError)


async def test_use_model_times_out_and_reports_when_all_fail(runtime: AgentRuntime) -> None:
    async def slow(rt, params):
        await asyncio.sleep(10)

    runtime.set_setting("MODEL_TIMEOUT_S", "0.05")
    runtime.register_model(ModelType.TEXT_SMALL, slow, "slow")
    with pytest.raises(ModelError, match="every TEXT_SMALL model failed") as info:
        await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": "x"})
    assert isinstance(info.value.__cause__, TimeoutError)


async def test_a_handler_that_needs_longer_is_given_it_unless_model_timeout_s_says(runtime: AgentRuntime) -> None:
    async def left(rt, params):
        return time_left()

    runtime.register_model(ModelType.TEXT_SMALL, left, "slow-server", timeout_s=900)
    runtime.register_model(ModelType.TEXT_LARGE, left, "quick-server", timeout_s=10)
    runtime.register_model(ModelType.OBJECT_SMALL, left, "unsaid")
    assert 899 < await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": "x"}) <= 900
    assert 119 < await runtime.use_model(ModelType.TEXT_LARGE, {"prompt": "x"}) <= 120  # never below the default
    assert 119 < await runtime.use_model(ModelType.OBJECT_SMALL, {"prompt": "x"}) <= 120
    runtime.set_setting("MODEL_TIMEOUT_S", "5")  # set, it is the limit
    assert 4 < await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": "x"}) <= 5


async def test_model_error_from_the_handler_is_kept(runtime: AgentRuntime) -> None:
    async def auth(rt, params):
        raise ModelError("key refused by openai", agent="Ada", provider="openai")

    runtime.register_model(ModelType.TEXT_SMALL, auth, "openai")
    with pytest.raises(ModelError, match="key refused"):
        await runtime.use_model(ModelType.TEXT_SMALL, {"prompt": "x"})


# -- events ----------------------------------------------------------------------------


async def test_emit_runs_handlers_concurrently_and_survives_failures(runtime: AgentRuntime, caplog) -> None:
    seen: list[str] = []

    async def bad(event: MessageReceived) -> None:
        raise RuntimeError("handler broke")

    async def slow(event: MessageReceived) -> None:
        await asyncio.sleep(0.01)
        seen.append("slow")

    async def good(event: MessageReceived) -> None:
        seen.append(event.message.content.text or "")

    for handler in (bad, slow, good):
        runtime.on(MessageReceived, handler)
    message = Memory(entity_id="e", room_id="r", content=Content(text="m"))
    await runtime.emit(MessageReceived(message=message, source="test"))
    assert sorted(seen) == ["m", "slow"]
    assert "MESSAGE_RECEIVED handler" in caplog.text and "handler broke" in caplog.text
    await runtime.emit(CustomEvent("NOTHING_LISTENS"))


async def test_custom_events_go_by_name_and_typed_names_by_class(runtime: AgentRuntime) -> None:
    heard: list[CustomEvent] = []

    async def joined(event: CustomEvent) -> None:
        heard.append(event)

    runtime.on("discord:voice:joined", joined)
    await runtime.emit(CustomEvent("discord:voice:joined", {"channel": "General"}))
    await runtime.emit(CustomEvent("discord:voice:left"))
    assert heard == [CustomEvent("discord:voice:joined", {"channel": "General"})]
    with pytest.raises(ValueError, match="MESSAGE_RECEIVED is a typed event"):
        runtime.on("message:received", joined)
    with pytest.raises(ValueError, match="MESSAGE_SENT is a typed event"):
        CustomEvent("MESSAGE_SENT", {})
    with pytest.raises(TypeError, match="under its name"):
        runtime.on(CustomEvent, joined)


# -- state -----------------------------------------------------------------------------


async def test_compose_state_orders_filters_and_caches(runtime: AgentRuntime, caplog) -> None:
    runs: list[str] = []

    def provider(name: str, position: int, **flags) -> Provider:
        async def get(rt, msg, state):
            runs.append(name)
            if name == "BROKEN":
                raise RuntimeError("provider broke")
            return ProviderResult(text=f"[{name}]", values={name.lower(): name})

        return Provider(name, get, position=position, **flags)

    runtime.providers.clear()  # only this test's providers, not the core plugin's
    for p in (
        provider("LATE", 100),
        provider("EARLY", -10),
        provider("FACTS", 0, dynamic=True),
        provider("SECRETIVE", 0, private=True),
        provider("BROKEN", 5),
    ):
        runtime.register_provider(p)

    msg = message(runtime)
    state = await runtime.compose_state(msg)
    assert state.text == "[EARLY]\n[LATE]"
    assert state.values["providers"] == state.text and state.values["early"] == "EARLY"
    assert "provider BROKEN failed" in caplog.text

    state = await runtime.compose_state(msg, ["FACTS"])
    assert state.text == "[EARLY]\n[FACTS]\n[LATE]"
    only = await runtime.compose_state(msg, ["SECRETIVE"], only_include=True)
    assert only.text == "[SECRETIVE]"
    assert set(only.providers) == {"EARLY", "LATE", "FACTS", "SECRETIVE", "BROKEN"}  # accumulated per message
    fresh = await runtime.compose_state(msg, ["SECRETIVE"], only_include=True, skip_cache=True)
    assert set(fresh.providers) == {"SECRETIVE"}


# -- lifecycle and plugins -------------------------------------------------------------


@pytest.fixture
def fake_plugins(monkeypatch: pytest.MonkeyPatch):
    """Install fake plugin packages; returns the list their setups append to."""

    class Order(list):
        add: object

    order = Order()
    metas = dict(plugin_registry.available())

    def add(name: str, *, depends: tuple[str, ...] = (), fail: bool = False) -> None:
        metas[name] = PluginMeta(name=name, description="fake", depends=depends)
        module = types.ModuleType(f"plugins.{name}")

        async def setup(rt):
            order.append(name)
            if fail:
                raise RuntimeError(f"{name} setup broke")

        module.setup = setup  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"plugins.{name}", module)

    monkeypatch.setattr(plugin_registry, "available", lambda: metas)
    order.add = add
    return order


async def test_plugins_load_dependencies_first(tmp_path: Path, db: Database, fake_plugins) -> None:
    fake_plugins.add("p1")
    fake_plugins.add("p2", depends=("p1",))
    c = character(tmp_path)
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={}, plugins=["p2", "p1"])
    await rt.start()
    assert fake_plugins == ["p1", "p2"]
    assert rt.loaded_plugins[-2:] == ["p1", "p2"] and rt.state is RuntimeState.RUNNING
    await rt.close()


def test_cycles_and_unknown_dependencies_name_the_plugin(fake_plugins) -> None:
    fake_plugins.add("a", depends=("b",))
    fake_plugins.add("b", depends=("a",))
    fake_plugins.add("c", depends=("ghost",))
    with pytest.raises(PluginLoadError, match="dependency cycle: a -> b -> a"):
        _load_order(["a"])
    with pytest.raises(PluginLoadError, match=r"plugin ghost failed to load: unknown plugin \(needed by c\)"):
        _load_order(["c"])


async def test_failing_plugin_setup_closes_the_runtime(tmp_path: Path, db: Database, fake_plugins) -> None:
    fake_plugins.add("bad", fail=True)
    c = character(tmp_path)
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={}, plugins=["bad"])
    closed: list[str] = []

    async def on_close():
        closed.append("closed")

    rt.on_close(on_close)
    with pytest.raises(PluginLoadError, match="plugin bad for Ada failed to load: bad setup broke"):
        await rt.start()
    assert rt.state is RuntimeState.CLOSED and closed == ["closed"]


def test_plugin_load_error_names_the_agent_once() -> None:
    error = PluginLoadError("openai", "Iris", ConfigError("no endpoint; set OPENAI_API_KEY", agent="Iris"))
    assert str(error) == "plugin openai for Iris failed to load: no endpoint; set OPENAI_API_KEY"
    assert error.agent == "Iris" and error.reason_for("Iris") == str(error)


def test_plugin_load_error_names_another_agent_its_original_is_about() -> None:
    error = PluginLoadError("openai", "Iris", ConfigError("no endpoint", agent="Ada"))
    assert str(error) == "plugin openai for Iris failed to load: Ada: no endpoint"


async def test_start_records_the_agent_and_its_own_room(runtime: AgentRuntime) -> None:
    agent = await runtime.store.get_agent()
    entity = await runtime.store.get_entity(runtime.agent_id)
    assert agent is not None and agent.name == "Ada"
    assert entity is not None and entity.names == ["Ada"]
    assert await runtime.store.is_room_participant(runtime.agent_id, runtime.agent_id)


async def test_lifecycle_misuse(runtime: AgentRuntime) -> None:
    with pytest.raises(RuntimeError, match="cannot start: it is running"):
        await runtime.start()
    order: list[int] = []
    for i in range(3):

        async def cb(i=i):
            order.append(i)

        runtime.on_close(cb)
    await runtime.close()
    await runtime.close()
    assert order == [2, 1, 0]
    with pytest.raises(RuntimeError, match="cannot start: it is closed"):
        await runtime.start()


async def test_embedding_dimension_follows_the_embedding_model(tmp_path: Path, db: Database, fake_plugins) -> None:
    c = character(tmp_path)
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})

    async def embed(runtime, params):
        return [0.1] + [0.0] * 767

    rt.register_model(ModelType.TEXT_EMBEDDING, embed, "fake")
    await rt.start()
    assert await rt.store.get_embedding_dimension() == 768
    await rt.close()


async def test_task_loop_runs_stored_tasks_in_the_background(tmp_path: Path, db: Database) -> None:
    c = character(tmp_path, settings={"TASK_TICK_S": 0.01})
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})
    done = asyncio.Event()

    async def execute(runtime, options, task):
        assert options == {"n": 1}
        done.set()

    rt.register_task_worker(TaskWorker("ping", execute))
    await rt.start()
    await rt.store.create_task(Task("ping", tags=["queue"], metadata=TaskMetadata.from_json({"options": {"n": 1}})))
    await asyncio.wait_for(done.wait(), 5)
    await rt.close()


async def test_background_tasks_are_named_and_cancelled_on_close(runtime: AgentRuntime) -> None:
    task = runtime.create_task(asyncio.sleep(60), "nap")
    assert task.get_name() == "troupe:Ada:nap"
    await runtime.close()
    assert task.cancelled()


async def test_close_cancels_the_tasks_before_the_close_callbacks_run(runtime: AgentRuntime) -> None:
    calls: list[str] = []

    async def connection() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            calls.append("task cancelled")

    async def disconnect() -> None:
        calls.append("on_close")

    runtime.on_close(disconnect)
    runtime.create_task(connection(), "discord:client")
    await asyncio.sleep(0)
    await asyncio.gather(runtime.close(), runtime.close())
    await runtime.close()
    assert calls == ["task cancelled", "on_close"]
    assert runtime.state is RuntimeState.CLOSED and str(runtime.state) == "closed"


async def test_a_closed_runtime_starts_no_background_task(runtime: AgentRuntime) -> None:
    await runtime.close()
    with pytest.raises(RuntimeError, match="cannot start troupe:Ada:telegram:recovery: its owner is closed"):
        runtime.create_task(asyncio.sleep(0), "telegram:recovery")


# -- stored tasks ----------------------------------------------------------------------


def task_runtime(tmp_path: Path, db: Database, now: list[int]) -> AgentRuntime:
    """A runtime on the clock ``now[0]``, with memory retention off: the core plugin then
    registers no task worker of its own."""
    off = {"MEMORY_MAX_AGE_DAYS": 0, "MEMORY_ROOM_CAP": 0, "MEMORY_SUMMARY_CAP": 0, "MEMORY_LOG_DAYS": 0}
    c = character(tmp_path, settings=off)
    return AgentRuntime(c, db.for_agent(c.agent_id), environ={}, clock=lambda: now[0])


async def test_one_shot_and_repeating_tasks(tmp_path: Path, db: Database) -> None:
    now = [1_000_000]
    rt = task_runtime(tmp_path, db, now)
    ran: list[str] = []
    failures = [1]

    async def execute(runtime, options, task):
        ran.append(task.name)
        if task.name == "flaky" and failures[0]:
            failures[0] -= 1
            raise RuntimeError("not yet")

    async def never(runtime, task):
        return False

    await rt.start()  # no workers yet, so no background loop: this test drives the ticks
    for name in ("once", "flaky", "every", "skipped"):
        rt.register_task_worker(TaskWorker(name, execute, validate=never if name == "skipped" else None))
    store = rt.store
    await store.create_task(Task("once", tags=["queue"]))
    await store.create_task(Task("flaky", tags=["queue"]))
    await store.create_task(
        Task("every", tags=["queue", "repeat"], metadata=TaskMetadata.from_json({"updateInterval": 60_000}))
    )
    await store.create_task(Task("skipped", tags=["queue"]))
    await store.create_task(Task("unqueued", tags=[]))
    await store.create_task(Task("no-worker", tags=["queue"]))

    assert await rt.run_due_tasks() == 2  # once, every (flaky failed)
    now[0] += 30_000
    assert await rt.run_due_tasks() == 1  # flaky retried; every not due
    now[0] += 31_000
    assert await rt.run_due_tasks() == 1  # every again
    assert sorted(ran) == ["every", "every", "flaky", "flaky", "once"]
    names = sorted(t.name for t in await store.get_tasks())
    assert names == ["every", "no-worker", "skipped", "unqueued"]
    await rt.close()


async def test_a_failing_task_is_not_retried_on_every_tick(tmp_path: Path, db: Database) -> None:
    now = [1_000_000]
    rt = task_runtime(tmp_path, db, now)
    ran: list[str] = []

    async def failing(runtime, options, task):
        ran.append(task.name)
        raise RuntimeError("the service is down")

    await rt.start()
    for name in ("hourly", "once"):
        rt.register_task_worker(TaskWorker(name, failing))
    await rt.store.create_task(
        Task("hourly", tags=["queue", "repeat"], metadata=TaskMetadata.from_json({"updateInterval": 3_600_000}))
    )
    await rt.store.create_task(
        Task("once", tags=["queue"], metadata=TaskMetadata.from_json({"options": {"to": "Sam"}}))
    )

    async def tick(seconds: float) -> None:
        now[0] += int(seconds * 1000)
        await rt.run_due_tasks()

    await tick(0)
    assert sorted(ran) == ["hourly", "once"]
    for _ in range(4):
        await tick(1)
    assert sorted(ran) == ["hourly", "once"]  # neither tried again a second later
    await tick(60)
    assert sorted(ran) == ["hourly", "once", "once"]  # the one-shot task after a back-off
    await tick(45)
    assert sorted(ran) == ["hourly", "once", "once"]  # which grows
    await tick(3_600)
    assert sorted(ran) == ["hourly", "hourly", "once", "once", "once"]  # the repeating one at its next turn
    [once] = await rt.store.get_tasks_by_name("once")
    assert once.metadata.options == {"to": "Sam"}  # what the task carries is kept
    await rt.close()


class _Nowhere(QuietChannel):
    pass


@pytest.fixture
async def bare(tmp_path: Path, db: Database) -> AgentRuntime:
    """A runtime whose plugins are not loaded: nothing handles its messages yet."""
    c = character(tmp_path)
    return AgentRuntime(c, db.for_agent(c.agent_id), environ={})


async def test_a_message_without_a_handler_is_unhandled_and_says_what_to_add(bare: AgentRuntime, caplog) -> None:
    message = Memory(entity_id="e", room_id="r", content=Content(text="hi", source="test"))
    outcome = await bare.receive(IncomingMessage(message, _Nowhere()))
    assert outcome.status is Status.UNHANDLED
    assert 'no plugin handles messages (add "core")' in caplog.text


async def test_received_messages_reach_the_handler_and_the_listeners(bare: AgentRuntime) -> None:
    handled: list[IncomingMessage] = []
    heard: list[tuple[Memory, str]] = []

    class Handler:
        async def handle(self, incoming: IncomingMessage) -> Outcome:
            handled.append(incoming)
            return Outcome(Status.IGNORED, "test")

    async def listener(event: MessageReceived) -> None:
        heard.append((event.message, event.source))

    bare.handle_messages_with(Handler())
    with pytest.raises(ValueError, match="already handles"):
        bare.handle_messages_with(Handler())
    message = Memory(entity_id="e", room_id="r", content=Content(text="hi", source="test"))
    incoming = IncomingMessage(message, _Nowhere())
    assert await bare.receive(incoming) == Outcome(Status.IGNORED, "test")
    bare.on(MessageReceived, listener)
    assert (await bare.receive(incoming)).status is Status.IGNORED
    assert handled == [incoming, incoming] and heard == [(message, "test")]
