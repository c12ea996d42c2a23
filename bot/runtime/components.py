"""What plugins register with a runtime: actions, providers, evaluators, task workers.

Handlers are plain async functions, so a plugin is a module of functions plus a
``setup(runtime)`` that registers them. Actions and evaluators take one :class:`ActionContext`;
the others take the runtime first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from bot.kernel.buttons import Press
from bot.kernel.messages import Reacted
from bot.kernel.outgoing import OutgoingFile, Reply, markdown_file
from bot.kernel.tools import Toolbox
from bot.kernel.types import JSON, Entity, Memory, Room, Task

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = [
    "Action",
    "ActionContext",
    "ActionHandler",
    "ActionResult",
    "CONVERSATION_SUMMARIES",
    "ConversationSummaries",
    "ConversationSummary",
    "Evaluator",
    "EvaluatorHandler",
    "FetchCallback",
    "HandlerCallback",
    "LINK_READER",
    "LinkNotRead",
    "LinkReader",
    "MESSAGE_VECTORS",
    "MessageVectors",
    "Messenger",
    "PageText",
    "PressHandler",
    "PressHandling",
    "Provider",
    "ProviderResult",
    "ReactCallback",
    "Replier",
    "ServiceKey",
    "State",
    "SUMMARY_DEFAULT_COUNT",
    "SUMMARY_MAX_COUNT",
    "TaskWorker",
    "TOOLBOX",
]

T = TypeVar("T")

#: Sends a reply to the room the message came from; returns the memories of what was sent.
HandlerCallback = Callable[[Reply], Awaitable[list[Memory]]]
#: Puts an emoji reaction on the message being answered; says how that ended (never raises).
ReactCallback = Callable[[str], Awaitable[Reacted]]
#: The bytes of one attachment (an Attachment's JSON), downloaded the platform's way; raises
#: LookupError when the platform has no such attachment or no way to download it.
FetchCallback = Callable[[Mapping[str, object]], Awaitable[bytes]]


@dataclass(slots=True)
class ProviderResult:
    """What a provider adds to the state: text for the prompt, values for templates, raw data."""

    text: str = ""
    values: JSON = field(default_factory=dict)
    data: JSON = field(default_factory=dict)


@dataclass(slots=True)
class State:
    """Everything composed for one message: provider texts in order, merged values, per-provider results."""

    text: str = ""
    values: JSON = field(default_factory=dict)
    providers: dict[str, ProviderResult] = field(default_factory=dict)
    data: JSON = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    """The providers whose texts make ``text`` (and ``values["providers"]``), in that order."""


@dataclass(slots=True)
class ActionResult:
    """The outcome of one action."""

    success: bool = True
    text: str = ""
    values: JSON = field(default_factory=dict)
    data: JSON = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ActionContext:
    """What an action or an evaluator works with, for one message."""

    runtime: AgentRuntime
    message: Memory
    """The message being answered, as stored."""
    state: State
    """What the providers composed for it; actions running in a chain share it."""
    options: JSON
    """``previousResults``: the :class:`ActionResult` of each action run before in the chain."""
    reply: HandlerCallback
    """Sends content in the message's room (bounded, counted and recorded by the pipeline);
    returns the memories of what went out, ``[]`` when nothing could be sent."""
    responses: Sequence[Memory] = ()
    """The replies the model planned (their text and actions)."""
    attached: list[OutgoingFile] = field(default_factory=list)
    """Files an action of the chain attached for a later one to send: REPLY and SEND_MESSAGE
    send them with what they say. The actions of one chain share this list."""
    react: ReactCallback | None = None
    """Puts an emoji on the message being answered, as part of the answer (at most once, like a
    reply); None where there is no live message to react on."""
    fetch: FetchCallback | None = None
    """Downloads an attachment the platform's way (:meth:`~bot.kernel.messages.ReplyChannel.fetch`):
    one of the message's, or of a recent message in the room where the platform can (Telegram);
    None where there is no platform to ask."""


#: ``async (context) -> ActionResult | None``: an action's work (None counts as a success).
ActionHandler = Callable[[ActionContext], Awaitable[ActionResult | None]]
#: An evaluator's work, with an action's context; what it returns is not used.
EvaluatorHandler = Callable[[ActionContext], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class Provider:
    """Supplies context for prompts.

    Providers run concurrently and are ordered by ``position`` (lower first). A *dynamic*
    provider runs only when asked for by name; a *private* one only when listed explicitly.
    """

    name: str
    get: Callable[[AgentRuntime, Memory, State], Awaitable[ProviderResult]]
    description: str = ""
    position: int = 0
    dynamic: bool = False
    private: bool = False


@dataclass(frozen=True, slots=True)
class Action:
    """Something the agent can do in reply to a message (REPLY, MUTE_ROOM …)."""

    name: str
    handler: ActionHandler
    description: str = ""
    similes: tuple[str, ...] = ()
    validate: Callable[[AgentRuntime, Memory, State], Awaitable[bool]] | None = None
    """Whether the action is offered to the model for this message; absent means always."""
    examples: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Evaluator:
    """Runs after a reply (or always, with ``always_run``) to learn from the conversation."""

    name: str
    handler: EvaluatorHandler
    description: str = ""
    always_run: bool = False
    validate: Callable[[AgentRuntime, Memory, State], Awaitable[bool]] | None = None


@dataclass(frozen=True, slots=True)
class TaskWorker:
    """Executes stored tasks with its name."""

    name: str
    execute: Callable[[AgentRuntime, JSON, Task], Awaitable[None]]
    validate: Callable[[AgentRuntime, Task], Awaitable[bool]] | None = None


#: ``async (runtime, message, press, callback) -> ActionResult``: what pressing one of a plugin's
#: buttons does; ``message`` is the press as stored, ``callback`` answers in its room.
PressHandling = Callable[["AgentRuntime", Memory, Press, HandlerCallback], Awaitable[ActionResult]]


@dataclass(frozen=True, slots=True)
class PressHandler:
    """Handles the presses of the buttons whose value starts with ``prefix``, without asking a
    model: the pipeline stores the press like any message, then hands it to the handler with the
    longest matching prefix instead of deciding and planning (a press no handler claims is
    answered like any message). A plugin registers it with ``runtime.register_press_handler``."""

    prefix: str
    handle: PressHandling

    def __post_init__(self) -> None:
        if not self.prefix:
            raise ValueError("a press handler needs a prefix (an empty one would claim every press)")

    def claims(self, value: str) -> bool:
        return value.startswith(self.prefix)


@runtime_checkable
class Messenger(Protocol):
    """How a platform sends messages the agent starts itself (SEND_MESSAGE), as opposed to
    replies, which go through the message's callback (or :class:`Replier`).

    A platform registers one per runtime with ``runtime.register_service(source, messenger)``.
    Both methods return the memories of what was sent (already stored) and raise
    :class:`~bot.kernel.errors.SendError` with a message fit for the user when sending is impossible.
    """

    async def send_to_room(self, room: Room, reply: Reply) -> list[Memory]: ...

    async def send_to_entity(self, entity: Entity, reply: Reply) -> list[Memory]: ...


class ServiceKey(Generic[T]):
    """A service's name and the type it is offered as, so that ``runtime.get_service(key)`` is
    typed: ``runtime.get_service(MESSAGE_VECTORS)`` is a :class:`MessageVectors` or None."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


@runtime_checkable
class MessageVectors(Protocol):
    """The vectors of the messages an agent receives, each embedded once (when first needed, at the
    latest once the message is handled); other plugins search with them
    (``runtime.get_service(MESSAGE_VECTORS)``) instead of embedding the message again."""

    async def vector_of(self, memory: Memory) -> list[float] | None:
        """``memory``'s vector, waiting for it if it is being computed; None without an
        embedding model or text, or if the model failed."""
        ...


#: The service under which the conversation pipeline (plugins/core) offers :class:`MessageVectors`.
MESSAGE_VECTORS: ServiceKey[MessageVectors] = ServiceKey("message_vectors")


@dataclass(frozen=True, slots=True)
class PageText:
    """A web page, read as text."""

    url: str
    """Where it was read from, after redirects."""
    title: str
    text: str
    """Its readable text (an HTML page's without its markup), cut to the length asked for."""
    truncated: bool = False
    """The page was longer than what was read; ``text`` ends with a note saying so."""


class LinkNotRead(Exception):
    """A link that could not be read; the message says why ("private address", "no answer within
    10 s", "a video/mp4 file, not read")."""

    def __init__(self, reason: str, *, lasting: bool = True) -> None:
        super().__init__(reason)
        self.lasting = lasting
        """Reading it again soon gives the same (a refusal, a kind of file that is not read); a
        timeout or a network failure may pass."""


@runtime_checkable
class LinkReader(Protocol):
    """Reads the pages links lead to, as the character's links reader does (bounded, refusing
    private addresses unless allowed); the core plugin offers it (``LINK_READER``)."""

    async def read(self, url: str, *, max_chars: int) -> PageText:
        """The text of the page at ``url``, at most ``max_chars`` characters.

        Raises:
            LinkNotRead: not a web link, refused, unreachable, or not a page of text.
        """
        ...


#: The service under which the conversation pipeline (plugins/core) offers its :class:`LinkReader`.
LINK_READER: ServiceKey[LinkReader] = ServiceKey("links")

#: A character's :class:`~bot.kernel.tools.Toolbox`: every tool its plugins offer (``runtime.add_toolbox``,
#: ``runtime.register_tool``); the conversation pipeline lets the model use them when there is one.
TOOLBOX: ServiceKey[Toolbox] = ServiceKey("toolbox")


#: ``/summarize`` without a number covers this many messages; no summary covers more than the maximum.
SUMMARY_DEFAULT_COUNT = 50
SUMMARY_MAX_COUNT = 500


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A summary of a stretch of a room's conversation, ready to show the person who asked."""

    text: str
    """The summary with a line naming what it covers, or why there is none."""
    messages: int = 0
    """How many messages it covers (0: there was nothing to summarise, or it failed)."""
    failed: bool = False
    """The model failed: ``text`` says so."""
    long: bool = False
    """Longer than one chat message: it goes as a file (``filename``) after ``lead``."""
    lead: str = ""
    """What is said inline when it is long: what the summary covers, and that the file holds it."""
    filename: str = "summary.md"

    def reply(self) -> Reply:
        """What to send: the text, or (long) the lead with the text as a Markdown file."""
        if not self.long:
            return Reply(text=self.text)
        return Reply(text=self.lead, files=(markdown_file(f"{self.text}\n", self.filename),))


@runtime_checkable
class ConversationSummaries(Protocol):
    """Summaries of what was said in a room, for the platforms' ``/summarize`` commands."""

    async def summarize_room(self, room_id: str, count: int) -> ConversationSummary:
        """The last ``count`` messages of ``room_id`` summarised (at most :data:`SUMMARY_MAX_COUNT`); never raises for a
        model failure or an empty room: the summary's text says what happened."""
        ...


#: The service under which the conversation pipeline (plugins/core) offers :class:`ConversationSummaries`.
CONVERSATION_SUMMARIES: ServiceKey[ConversationSummaries] = ServiceKey("conversation_summaries")


@runtime_checkable
class Replier(Protocol):
    """How a platform answers a stored message when its live reply callback is gone: a message a
    crash left unanswered, taken up after the restart. A platform's messenger offers it too when
    the platform can (Discord, Telegram)."""

    async def reply_to(self, message: Memory, reply: Reply) -> list[Memory]:
        """Answer ``message`` (stored, from this platform) in its room, quoting it where the
        platform can. Returns ``[]`` when nothing could be sent (logged), like a reply callback."""
        ...

    def serves(self, message: Memory) -> bool:
        """Whether ``message`` (stored, from this platform) is this connection's to take up: not
        when another daemon serves that part of the platform (a Discord shard it does not hold)."""
        ...
