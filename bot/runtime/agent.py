"""AgentRuntime: one running character.

A runtime owns the character's plugins (actions, providers, evaluators, models, event handlers,
task workers), resolves its settings, talks to the shared store through its agent-scoped view,
and owns its background tasks. Many runtimes share one event loop and one database.

Lifecycle: ``await runtime.start()`` loads plugins in dependency order and prepares the agent's
own rows; ``await runtime.drain(timeout)`` stops it taking new messages and waits for those it is
answering; ``await runtime.close()`` undoes the start in reverse and can be called any number of
times.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeVar, overload

from bot.config import plugins as plugin_registry
from bot.config.character import Character
from bot.config.settings import character_setting
from bot.kernel.background import BackgroundTasks
from bot.kernel.errors import PluginLoadError
from bot.kernel.ids import unique_uuid
from bot.kernel.lifecycle import RuntimeState
from bot.kernel.links import Links
from bot.kernel.messages import IncomingMessage, MessageHandler, Outcome, Status
from bot.kernel.metrics import Metrics
from bot.kernel.models import ContextLength, ModelType, model_type
from bot.kernel.tables import Table
from bot.kernel.tools import Toolbox
from bot.kernel.types import ChannelType, Entity, Memory, Room, Task, now_ms
from bot.runtime.components import TOOLBOX, Action, Evaluator, PressHandler, Provider, ServiceKey, State, TaskWorker
from bot.runtime.embedding_length import learn_embedding_length
from bot.runtime.events import (
    CustomEvent,
    Event,
    InteractionReceived,
    MessageReceived,
    ServiceStarted,
    ServiceStopped,
    VoiceMessageReceived,
)
from bot.runtime.model_calls import ModelHandler, ModelHandlers
from bot.runtime.shared import Shared
from bot.runtime.state import StateComposer
from bot.runtime.stored_tasks import run_due_tasks, task_loop
from bot.runtime.toolboxes import OwnTool, OwnToolChoice, Toolboxes
from bot.store import PluginTable, Store

__all__ = ["AgentRuntime", "Fence", "RuntimeState"]

_log = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E", bound=Event)

#: What handles one class of event: ``async def on_sent(event: MessageSent) -> None``.
EventHandler = Callable[[E], Awaitable[None]]

_DEFAULT_CONVERSATION_LENGTH = 32
_DEFAULT_RECOVERY_WINDOW_S = 300.0


class Fence(Protocol):
    """Whether this process may still act as a character: when several daemons share a troupe,
    only while it holds the character's lease at the epoch the runtime was started under
    (bot/cluster/placement.py, bot/cluster/host.py)."""

    def allows(self) -> bool: ...


class AgentRuntime:
    """One character, running.

    Args:
        character: the validated character.
        store: the agent-scoped store (``database.for_agent(character.agent_id)``).
        environ: the daemon environment settings fall back to (process env plus ``.env``).
        plugins: troupe plugin names from the character file; ``always`` plugins are added.
        model_preset: ``ollama``/``openrouter`` when the file selects one.
        rng: randomness for prompt sampling; seed it for byte-identical prompts in tests.
        metrics: the daemon's metrics (a private set when not given).
        shared: what the daemon's agents share (its secrets, the platforms' shared objects);
            its own when not given.
    """

    def __init__(
        self,
        character: Character,
        store: Store,
        *,
        environ: Mapping[str, str],
        plugins: Iterable[str] = (),
        model_preset: str | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], int] = now_ms,
        metrics: Metrics | None = None,
        shared: Shared | None = None,
    ) -> None:
        self.character = character
        self.agent_id = character.agent_id
        self.store = store
        self.environ = environ
        self.model_preset = model_preset
        self.rng = rng or random.Random()
        self.clock = clock
        self.plugin_names = list(plugins)
        self.state = RuntimeState.NEW
        self.actions: dict[str, Action] = {}
        self.providers: dict[str, Provider] = {}
        self.evaluators: dict[str, Evaluator] = {}
        self.task_workers: dict[str, TaskWorker] = {}
        self.press_handlers: dict[str, PressHandler] = {}  # by prefix
        self.services: dict[str, object] = {}
        self.loaded_plugins: list[str] = []
        self._overrides: dict[str, str] = {}
        self._models = ModelHandlers(self)
        # By event name; the name fixes the class, so each handler gets only the events it takes.
        self._events: dict[str, list[EventHandler[Any]]] = {}
        self._message_handler: MessageHandler | None = None
        self._on_close: list[Callable[[], Awaitable[None]]] = []
        self._tasks = BackgroundTasks(f"troupe:{character.name}", agent=character.name)
        self._states = StateComposer(self)
        self._closing: asyncio.Task[None] | None = None
        self.metrics = metrics if metrics is not None else Metrics()
        self.shared = shared if shared is not None else Shared()
        self.links = Links()
        self.accepting = True  # False once draining: new messages are refused
        #: Set by the daemon when several daemons share the troupe: sending stops once it refuses.
        self.fence: Fence | None = None
        #: Who this runtime claims messages as (``Store.claim_message``): one token per runtime,
        #: so a claim left by another runtime (a crash, a deposed daemon's) is told from its own,
        #: and a deposed runtime's late writes to a claim taken over change nothing.
        self.claimant = uuid.uuid4().hex
        self._refused_at = float("-inf")  # monotonic: when the fence last refused
        #: False for a runtime serving only some Discord shards of the character for a daemon
        #: other than the one that holds the character itself: the character's own work (its
        #: stored tasks, its knowledge sync) runs once, at home, not in every such runtime.
        self.home = True
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._on_drain: list[Callable[[], Awaitable[None]]] = []
        self._tool_choice: OwnToolChoice | None = None  # TROUPE_TOOLS, read at the first own tool
        self._own_tools_seen: list[str] = []
        # The tables of the plugins loaded (PluginMeta.tables), made before each one's setup.
        self._tables: list[PluginTable] = []
        for key in character.secret_keys():
            secret = character.secret(key)
            if secret is not None:
                self.shared.secrets.add(secret.get_secret_value())

    def __repr__(self) -> str:
        return f"<AgentRuntime {self.character.name} ({self.agent_id}) {self.state.value}>"

    # -- settings -------------------------------------------------------------------------

    def get_setting(self, key: str) -> str | None:
        """A setting as this character sees it (in bot/config/settings.py's order); ``None`` when unset."""
        if key in self._overrides:
            return self._overrides[key]
        return character_setting(self.character, key, self.environ)

    def set_setting(self, key: str, value: str) -> None:
        """Override a setting for this run only; nothing is written to the character file."""
        self._overrides[key] = value

    def get_bool(self, key: str, default: bool = False) -> bool:
        value = self.get_setting(key)
        if value is None:
            return default
        return value.strip().lower() in ("1", "true", "yes", "on")

    def get_int(self, key: str, default: int) -> int:
        return int(self.get_number(key, default))

    def get_number(self, key: str, default: float) -> float:
        """A numeric setting; a value that is not a number logs a warning and gives ``default``."""
        value = self.get_setting(key)
        if value is None:
            return default
        try:
            return float(value)
        except ValueError:
            _log.warning("%s: setting %s=%r is not a number; using %s", self.character.name, key, value, default)
            return default

    @property
    def conversation_length(self) -> int:
        """How many recent messages prompts see: ``CONVERSATION_LENGTH`` or ``conversationLength``, default 32."""
        for key in ("CONVERSATION_LENGTH", "conversationLength"):
            if self.get_setting(key) is not None:
                return max(1, self.get_int(key, _DEFAULT_CONVERSATION_LENGTH))
        return _DEFAULT_CONVERSATION_LENGTH

    @property
    def recovery_window_ms(self) -> int:
        """``RECOVERY_WINDOW_S`` (default 300) in ms: how old a message a crash left unanswered may
        be and still be answered after the restart; older ones are logged and skipped."""
        return int(max(0.0, self.get_number("RECOVERY_WINDOW_S", _DEFAULT_RECOVERY_WINDOW_S)) * 1000)

    # -- registration ---------------------------------------------------------------------

    def register_action(self, action: Action) -> None:
        if action.name in self.actions:
            raise ValueError(f"Action {action.name} already registered")
        self.actions[action.name] = action

    def register_provider(self, provider: Provider) -> None:
        if provider.name in self.providers:
            raise ValueError(f"Provider {provider.name} already registered")
        self.providers[provider.name] = provider

    def register_evaluator(self, evaluator: Evaluator) -> None:
        if evaluator.name in self.evaluators:
            raise ValueError(f"Evaluator {evaluator.name} already registered")
        self.evaluators[evaluator.name] = evaluator

    def register_task_worker(self, worker: TaskWorker) -> None:
        if worker.name in self.task_workers:
            raise ValueError(f"Task worker {worker.name} already registered")
        self.task_workers[worker.name] = worker

    def register_press_handler(self, handler: PressHandler) -> None:
        if handler.prefix in self.press_handlers:
            raise ValueError(f"Presses of buttons starting with {handler.prefix!r} are already handled")
        self.press_handlers[handler.prefix] = handler

    def press_handler_for(self, value: str) -> PressHandler | None:
        """The handler of a press of ``value``: the one with the longest prefix it starts with."""
        claiming = [h for h in self.press_handlers.values() if h.claims(value)]
        return max(claiming, key=lambda h: len(h.prefix), default=None)

    def add_toolbox(self, toolbox: Toolbox) -> None:
        """Offer a toolbox's tools to the character (the MCP plugin's servers), beside its other
        tools: the ``TOOLBOX`` service offers them all."""
        self._toolboxes().add(toolbox)

    def register_tool(self, tool: OwnTool) -> None:
        """Offer one of troupe's own abilities as a tool, when the character's ``TROUPE_TOOLS``
        lets it (bot/runtime/toolboxes.py says which by default).

        Raises:
            ConfigError: ``TROUPE_TOOLS`` is not a list of tool names.
        """
        self._own_tools_seen.append(tool.spec.name)
        if self._own_tool_choice().allows(tool.spec.name):
            self._toolboxes().add_tool(tool)

    def _toolboxes(self) -> Toolboxes:
        box = self.services.get(str(TOOLBOX))
        if not isinstance(box, Toolboxes):
            box = Toolboxes(self)
            self.register_service(TOOLBOX, box)
        return box

    def _own_tool_choice(self) -> OwnToolChoice:
        if self._tool_choice is None:
            self._tool_choice = OwnToolChoice.parse(
                self.get_setting("TROUPE_TOOLS"), uses_tools="mcp" in self.plugin_names, agent=self.character.name
            )
        return self._tool_choice

    def _check_tool_choice(self) -> None:
        """Warn of names in ``TROUPE_TOOLS`` that no plugin of the character offers (a typo)."""
        unknown = self._own_tool_choice().unknown(self._own_tools_seen)
        if unknown:
            _log.warning(
                "%s: TROUPE_TOOLS names %s, which no plugin of this character offers (its own tools: %s)",
                self.character.name,
                ", ".join(unknown),
                ", ".join(self._own_tools_seen) or "none",
            )

    @overload
    def register_service(self, name: ServiceKey[T], service: T) -> None: ...
    @overload
    def register_service(self, name: str, service: object) -> None: ...
    def register_service(self, name: str | ServiceKey[Any], service: object) -> None:
        """Offer ``service`` to other plugins under ``name``; a platform registers its
        :class:`~bot.runtime.components.Messenger` under its source name (``discord``, ``telegram``)."""
        key = str(name)
        if key in self.services:
            raise ValueError(f"Service {key} already registered")
        self.services[key] = service
        self._announce(ServiceStarted(service=key))

    def unregister_service(self, name: str | ServiceKey[Any]) -> None:
        """Withdraw a service (a platform that disconnected); unknown names are ignored."""
        key = str(name)
        if key in self.services:
            del self.services[key]
            self._announce(ServiceStopped(service=key))

    def _announce(self, event: Event) -> None:
        """Emit ``event`` from code that cannot wait for its handlers: in the background, only
        when someone listens and the runtime is open (a service withdrawn as it closes is not)."""
        if event.name in self._events and not self._tasks.closed:
            self.create_task(self.emit(event), f"event:{event.name}")

    @overload
    def get_service(self, name: ServiceKey[T]) -> T | None: ...
    @overload
    def get_service(self, name: str) -> Any: ...
    def get_service(self, name: str | ServiceKey[Any]) -> Any:
        """The service registered under ``name``, or ``None``; typed when ``name`` is a
        :class:`~bot.runtime.components.ServiceKey`."""
        return self.services.get(str(name))

    def table(self, table: Table) -> PluginTable:
        """The agent's rows of ``table``: the :class:`Table` a loaded plugin's meta declares
        (``PluginMeta.tables``), made by the time the plugin's ``setup`` runs.

        Raises:
            LookupError: no plugin loaded so far declares that table.
        """
        for handle in self._tables:
            if handle.table is table:
                return handle
        raise LookupError(
            f"no plugin of {self.character.name} declares the table {table.name!r}: list the Table object "
            "itself in the plugin's PluginMeta(tables=...)"
        )

    def register_model(
        self,
        type: ModelType | str,
        handler: ModelHandler,
        provider: str,
        priority: int = 0,
        *,
        timeout_s: float | None = None,
        context_length: ContextLength | None = None,
    ) -> None:
        """Serve ``type`` with ``handler``; higher priority first, ties by registration order.

        ``timeout_s`` is the longest the handler may take by its own timeouts and retries: unless
        ``MODEL_TIMEOUT_S`` is set, a call to it is given that long when it is above the default.
        ``context_length`` tells how long a prompt the handler's model takes (bot/kernel/models.py).
        """
        self._models.register(model_type(type), handler, provider, priority, timeout_s, context_length)

    def has_model(self, type: ModelType | str) -> bool:
        return self._models.serves(model_type(type))

    def context_length(self, type: ModelType | str) -> int | None:
        """The context window, in tokens, of the model that answers ``type`` first; None when
        its plugin does not say (prompts are then not cut to fit)."""
        return self._models.context_length(model_type(type))

    @overload
    def on(self, event: type[E], handler: EventHandler[E]) -> None: ...
    @overload
    def on(self, event: str, handler: EventHandler[CustomEvent]) -> None: ...
    def on(self, event: type[Event] | str, handler: EventHandler[Any]) -> None:
        """Run ``handler`` on every event of class ``event`` (``runtime.on(MessageSent, h)``), or,
        given a name no class types (``"discord:voice:joined"``), on every such :class:`CustomEvent`.

        Raises:
            ValueError: ``event`` names a typed event: register its class, whose events it gets.
            TypeError: ``event`` is CustomEvent itself, which has no one name.
        """
        if isinstance(event, str):
            name = CustomEvent(event).name
        elif event is CustomEvent:
            raise TypeError("register a custom event's handler under its name: runtime.on(name, handler)")
        else:
            name = event.type.value
        self._events.setdefault(name, []).append(handler)

    def handle_messages_with(self, handler: MessageHandler) -> None:
        """Answer incoming messages with ``handler`` (the core plugin's pipeline); one per runtime."""
        if self._message_handler is not None:
            raise ValueError("a plugin already handles this agent's messages")
        self._message_handler = handler

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` when the runtime closes (reverse order of registration)."""
        self._on_close.append(callback)

    def on_drain(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` when the runtime starts draining: a platform stops fetching new messages
        there, so none is taken from the platform only to be refused."""
        self._on_drain.append(callback)

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Load plugins in dependency order, record the agent, start the task loop.

        Raises:
            PluginLoadError: a plugin's ``setup`` failed; what it registered is left behind
                only in this runtime, which the caller closes.
            RuntimeError: called twice, or after close().
        """
        if self.state is not RuntimeState.NEW:
            raise RuntimeError(f"AgentRuntime {self.character.name} cannot start: it is {self.state.value}")
        self.state = RuntimeState.STARTING
        try:
            for name in plugin_registry.load_order(self.plugin_names):
                module = importlib.import_module(plugin_registry.module_path(name))
                await self._make_tables(plugin_registry.available()[name])
                setup = getattr(module, "setup", None)
                if setup is None:
                    continue
                _log.debug("%s: loading plugin %s", self.character.name, name)
                try:
                    await setup(self)
                except Exception as exc:
                    raise PluginLoadError(name, self.character.name, exc) from exc
                self.loaded_plugins.append(name)
            self._check_tool_choice()
            await self._ensure_self()
            if self.has_model(ModelType.TEXT_EMBEDDING):
                await learn_embedding_length(self)
            if self.task_workers and self.home:
                self.create_task(task_loop(self), "tasks")
        except BaseException:
            await self.close()
            raise
        self.state = RuntimeState.RUNNING
        _log.info(
            "%s started (agent %s; plugins: %s)", self.character.name, self.agent_id, ", ".join(self.loaded_plugins)
        )

    async def _make_tables(self, meta: plugin_registry.PluginMeta) -> None:
        """Make what is missing of the tables a plugin declares (``meta.tables``), before its setup."""
        if not meta.tables:
            return
        try:
            await self.store.ensure_plugin_tables(meta.name, meta.tables)
        except Exception as exc:  # a bad declaration, or the database: this plugin fails to load
            raise PluginLoadError(meta.name, self.character.name, exc) from exc
        self._tables += [self.store.plugin_table(meta.name, table) for table in meta.tables]

    async def _ensure_self(self) -> None:
        await self.store.upsert_agent(self.character.to_record())
        if await self.store.get_entity(self.agent_id) is None:
            await self.store.create_entities([Entity(self.agent_id, self.agent_id, names=[self.character.name])])
        if await self.store.get_room(self.agent_id) is None:
            await self.store.create_rooms(
                [
                    Room(
                        self.agent_id,
                        source="troupe",
                        type=ChannelType.SELF,
                        name=self.character.name,
                        world_id=self.agent_id,
                        server_id=self.agent_id,
                        channel_id=self.agent_id,
                    )
                ]
            )
        await self.store.add_participant(self.agent_id, self.agent_id)

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        """Count a message as being handled for as long as the block runs (what :meth:`drain`
        waits for; the in-flight gauge)."""
        self._in_flight += 1
        self._idle.clear()
        gauge = self.metrics.in_flight.labels(agent=self.character.name)
        gauge.set(self._in_flight)
        try:
            yield
        finally:
            self._in_flight -= 1
            gauge.set(self._in_flight)
            if not self._in_flight:
                self._idle.set()

    @property
    def in_flight(self) -> int:
        """Messages being handled right now."""
        return self._in_flight

    def may_send(self) -> bool:
        """Whether this process may still send as the character (see :class:`Fence`)."""
        if self.fence is None or self.fence.allows():
            return True
        self._refused_at = time.monotonic()
        return False

    def fenced_since(self, moment: float) -> bool:
        """Whether the fence refused since ``moment`` (``time.monotonic()``): a send that sent
        nothing then was refused, not failed, even if the fence allows again (a renewal landed
        late)."""
        return self._refused_at >= moment

    async def drain(self, timeout: float) -> bool:
        """Stop taking new messages, then wait up to ``timeout`` seconds for the ones being handled
        to finish (their replies sent). True when all finished in time."""
        # Platforms stop fetching first: a message fetched before that is still answered.
        for callback in self._on_drain:
            try:
                await callback()
            except Exception:
                _log.exception("%s: error while draining", self.character.name)
        self.accepting = False
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Stop background tasks and run ``on_close`` callbacks in reverse; safe to call again."""
        if self._closing is None:  # one close, awaited by every caller (a cancelled one does not stop it)
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        self.state = RuntimeState.CLOSED
        await self._tasks.close()
        for callback in reversed(self._on_close):
            try:
                await callback()
            except Exception:
                _log.exception("%s: error while closing", self.character.name)
        self._on_close.clear()

    def create_task(self, coro: Coroutine[Any, Any, Any], job: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, named ``troupe:<agent>:<job>`` (``job`` is
        ``<platform>:<what>`` for a platform's), tracked until close() cancels it; a failure is
        logged once. The task (and every task it starts) logs as this agent.

        Raises:
            RuntimeError: the runtime is closed (see :class:`~bot.kernel.background.BackgroundTasks`).
        """
        return self._tasks.start(coro, job)

    # -- events ---------------------------------------------------------------------------

    async def emit(self, event: Event) -> None:
        """Run every handler of ``event``'s name concurrently; a failing handler is logged, never
        raised. Handlers share the event, which is frozen."""
        key = event.name
        handlers = self._events.get(key)
        if not handlers:
            return
        results = await asyncio.gather(*(h(event) for h in handlers), return_exceptions=True)
        for handler, result in zip(handlers, results, strict=True):
            if isinstance(result, Exception):
                _log.error(
                    "%s: %s handler %s failed",
                    self.character.name,
                    key,
                    getattr(handler, "__qualname__", handler),
                    exc_info=result,
                )

    async def receive(self, incoming: IncomingMessage) -> Outcome:
        """Handle a message a platform heard, to its end, and say how it ended; never raises.

        Listeners of MESSAGE_RECEIVED (analytics, third-party plugins) see it too, alongside.
        """
        handler = self._message_handler
        if handler is None:
            _log.warning('%s: a message arrived, but no plugin handles messages (add "core")', self.character.name)
            return Outcome(Status.UNHANDLED, "no plugin handles messages")
        heard = [e for e in self._heard(incoming) if e.name in self._events]
        if not heard:  # the common case: nobody else listens
            return await handler.handle(incoming)
        outcome, _ = await asyncio.gather(handler.handle(incoming), self._emit_in_order(heard))
        return outcome

    @staticmethod
    def _heard(incoming: IncomingMessage) -> list[Event]:
        """MESSAGE_RECEIVED for every message; after it, VOICE_MESSAGE_RECEIVED for a spoken one
        and INTERACTION_RECEIVED for a button press (a menu's choice, a prompt's answer) or a
        slash command."""
        message, source = incoming.message, incoming.source
        heard: list[Event] = [MessageReceived(message=message, source=source)]
        if message.content.is_voice_message:
            heard.append(VoiceMessageReceived(message=message, source=source))
        if message.content.button is not None:
            heard.append(InteractionReceived(message=message, source=source, press=message.content.button))
        elif incoming.command is not None:
            heard.append(InteractionReceived(message=message, source=source, command=incoming.command))
        return heard

    async def _emit_in_order(self, events: list[Event]) -> None:
        for event in events:
            await self.emit(event)

    # -- models ---------------------------------------------------------------------------

    async def use_model(self, type: ModelType | str, params: Any, *, provider: str | None = None) -> Any:
        """Call the best handler for ``type``; on failure try the next one.

        Every attempt has a timeout (``MODEL_TIMEOUT_S``, default 120 s or the handler's own
        longer one; a wait for a busy server's turn not counted), is logged to the logs
        table (type, provider, duration; never params or results) and emits MODEL_USED or
        MODEL_FAILED.

        Raises:
            ModelError: no handler for ``type``, or every handler failed: the last one's
                ModelError, or one whose ``original`` is what the last handler raised.
        """
        return await self._models.call(model_type(type), params, provider)

    # -- state ----------------------------------------------------------------------------

    async def compose_state(
        self,
        message: Memory,
        include: Iterable[str] | None = None,
        *,
        only_include: bool = False,
        skip_cache: bool = False,
    ) -> State:
        """Run providers and merge what they return, as elizaOS's ``composeState`` does.

        Default providers are the non-dynamic, non-private ones; ``include`` adds names (or, with
        ``only_include``, is the whole set). Results accumulate per message in a bounded cache.
        A failing provider contributes nothing and is logged.
        """
        return await self._states.compose(message, include, only_include=only_include, skip_cache=skip_cache)

    # -- ids ------------------------------------------------------------------------------

    def unique_id(self, base: str) -> str:
        """An id for a platform object as this agent sees it (``"discord:<id>"``)."""
        return unique_uuid(self.agent_id, base)

    # -- tasks ----------------------------------------------------------------------------

    async def run_due_tasks(self) -> int:
        """Execute every queued task whose time has come; returns how many ran (see
        :func:`~bot.runtime.stored_tasks.run_due_tasks`)."""
        return await run_due_tasks(self)

    async def create_stored_task(self, task: Task) -> str:
        """Persist ``task`` for this agent; the task loop picks it up."""
        return await self.store.create_task(task)
