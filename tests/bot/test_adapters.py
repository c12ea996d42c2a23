"""The platform adapter skeleton (bot/runtime/adapters.py) and the world merge every platform uses
(bot/runtime/connections.py): lifecycle and token claims, the typing indicator, the Messenger's flow
and its failures, and roles merged without losing those given through UPDATE_ROLE."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import Any

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.errors import ConfigError, PartlySent, SendError
from bot.kernel.lifecycle import AdapterState
from bot.kernel.outgoing import Reply
from bot.kernel.record_metadata import EntityMetadata, Ownership, WorldMetadata
from bot.kernel.types import ChannelType, Entity, Memory, Role, Room, World
from bot.runtime.adapters import Delivery, PlatformAdapter, PlatformReplyChannel, TypingIndicator
from bot.runtime.agent import AgentRuntime
from bot.runtime.connections import SentMessage, TokenClaims, merged_world
from bot.runtime.events import MessageSent

from .test_runtime import db, runtime  # noqa: F401  (fixtures)


class ChatTokens(TokenClaims):
    def __init__(self) -> None:
        super().__init__("CHAT_TOKEN", "make one bot per character")


class NotAllowed(Exception):
    """The platform's "you may not write there"."""


@dataclass
class Posted:
    """A message the fake platform took."""

    id: int
    where: str
    text: str


class ChatAdapter(PlatformAdapter[str, Posted, int]):
    """A platform whose rooms are names and whose sends are kept in a list, or fail as told."""

    source = "chat"
    label = "Chat"
    where = "room"

    def __init__(self, rt: AgentRuntime, token: str = "t1", *, refuse_to_connect: bool = False) -> None:
        super().__init__(rt, ChatTokens, token)
        self.refuse_to_connect = refuse_to_connect
        self.posted: list[Posted] = []
        self.fail: Exception | None = None  # raised by the next send
        self.disconnects = 0
        self.after: list[Delivery[str, Posted, int]] = []  # what after_sent was told

    async def connect(self, token: str) -> None:
        if self.refuse_to_connect:
            raise ConfigError("the chat server refused the token", agent=self.name)

    async def disconnect(self) -> None:
        self.disconnects += 1

    async def send_native(self, target: str, text: str, reply: Reply, quoting: int | None) -> list[Posted]:
        if self.fail is not None:
            raise self.fail
        posted = Posted(len(self.posted) + 1, target, text)
        self.posted.append(posted)
        return [posted]

    def record_of_sent(self, message: Posted) -> SentMessage:
        return SentMessage(
            id=self.runtime.unique_id(f"chat:{message.id}"),
            text=message.text,
            created_at=1_700_000_000_000 + message.id,
            content=Content(url=f"chat://{message.where}/{message.id}"),
            metadata=MemoryMetadata.from_json({"chatMessageId": message.id}),
        )

    def describe_send(self, target: str, quoting: int | None) -> str:
        return f"a reply in {target} to {quoting}" if quoting is not None else f"a message in {target}"

    def refusal_message(self, exc: Exception) -> str | None:
        return "Chat won't let me write there" if isinstance(exc, NotAllowed) else None

    async def room_target(self, room: Room) -> str:
        return str(room.channel_id)

    async def entity_target(self, entity: Entity, user_id: str) -> tuple[str, str, str | None]:
        dm = room(self.runtime, f"dm-{user_id}")
        await self.connections.ensure_rooms([dm])
        return f"dm-{user_id}", dm.id, None

    async def reply_target(self, message: Memory, text: str) -> tuple[str, int | None] | None:
        where, native = message.metadata.extra.get("where"), message.metadata.extra.get("chatMessageId")
        return (str(where), native if isinstance(native, int) else None) if where else None

    async def after_sent(self, delivery: Delivery[str, Posted, int]) -> None:
        self.after.append(delivery)


class TextOnly(ChatAdapter):
    sends_files = False


def room(rt: AgentRuntime, name: str = "general", source: str = "chat") -> Room:
    return Room(rt.unique_id(f"chat:{name}"), source=source, type=ChannelType.GROUP, name=name, channel_id=name)


def ping(rt: AgentRuntime) -> Memory:
    """A message someone said in #general (stored), Chat's message 5."""
    return Memory(
        id=rt.unique_id("chat:said"),
        entity_id=rt.unique_id("chat:user:9"),
        room_id=room(rt).id,
        content=Content(text="ping"),
        metadata=MemoryMetadata.from_json({"where": "general", "chatMessageId": 5}),
    )


# -- lifecycle ---------------------------------------------------------------------------


async def test_a_started_adapter_is_the_messenger_and_holds_its_token_until_closed(runtime) -> None:  # noqa: F811
    rt = runtime
    ada = ChatAdapter(rt)
    states = [ada.state]
    await ada.start()
    states.append(ada.state)
    assert rt.get_service("chat") is ada
    with pytest.raises(ConfigError, match=r"uses the same CHAT_TOKEN as .*; each character needs a bot of its own"):
        ada._tokens.claim("t1", "Brann")  # another character of the daemon, same token
    await ada.close()
    await ada.close()  # again is nothing
    states.append(ada.state)
    assert states == [AdapterState.NEW, AdapterState.RUNNING, AdapterState.CLOSED]
    assert ada.disconnects == 1 and rt.get_service("chat") is None
    ada._tokens.claim("t1", "Brann")  # released


async def test_a_failed_start_undoes_itself_before_raising(runtime) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt, refuse_to_connect=True)
    with pytest.raises(ConfigError, match="the chat server refused the token"):
        await adapter.start()
    assert adapter.state is AdapterState.CLOSED and adapter.disconnects == 1 and rt.get_service("chat") is None
    adapter._tokens.claim("t1", "Brann")  # not held by the failed start


async def test_a_token_another_character_holds_is_refused_before_connecting(runtime) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt, "t9")
    adapter._tokens.claim("t9", "Brann")  # another character of the daemon connected with it first
    with pytest.raises(ConfigError, match=r"uses the same CHAT_TOKEN as Brann"):
        await adapter.start()
    assert adapter.state is AdapterState.CLOSED and adapter.disconnects == 0 and rt.get_service("chat") is None
    with pytest.raises(ConfigError, match=r"as Brann"):
        adapter._tokens.claim("t9", "Cleo")  # still Brann's


# -- typing ------------------------------------------------------------------------------


async def test_typing_is_shown_again_and_again_in_a_tracked_task_until_stopped(runtime) -> None:  # noqa: F811
    rt = runtime
    shown: list[float] = []

    async def show_once() -> None:
        shown.append(asyncio.get_running_loop().time())

    typing = TypingIndicator(rt, show_once, every_s=0.01, job="chat:typing")
    await typing.start()
    await typing.start()  # once is enough
    typing_tasks = [t for t in rt._tasks if t.get_name() == f"troupe:{rt.character.name}:chat:typing"]
    assert len(typing_tasks) == 1  # the runtime's: cancelled at its close
    while len(shown) < 3:
        await asyncio.sleep(0.01)
    await typing.stop()
    assert not typing.running and typing_tasks[0].done() and typing_tasks[0] not in set(rt._tasks)
    count = len(shown)
    await asyncio.sleep(0.05)
    assert len(shown) == count  # stopped means stopped


async def test_typing_ends_by_itself_at_the_cap_and_when_showing_it_fails(runtime, caplog) -> None:  # noqa: F811
    rt = runtime

    async def show_once() -> None:
        return None

    capped = TypingIndicator(rt, show_once, every_s=0.01, job="chat:typing")
    capped.cap_s = 0.05
    await capped.start()
    async with asyncio.timeout(60):
        while capped.running:
            await asyncio.sleep(0.01)

    async def refused() -> None:
        raise ConnectionError("the platform is away")

    failing = TypingIndicator(rt, refused, every_s=0.01, job="chat:typing")
    with caplog.at_level(logging.DEBUG, logger="bot.runtime.adapters"):
        await failing.start()
        async with asyncio.timeout(60):
            while failing.running:
                await asyncio.sleep(0.01)
    assert "typing indicator stopped: ConnectionError" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # a courtesy: never an error


async def test_typing_is_stopped_when_the_runtime_closes_and_not_started_after(runtime) -> None:  # noqa: F811
    rt = runtime

    async def show_once() -> None:
        return None

    typing = TypingIndicator(rt, show_once, every_s=0.01, job="chat:typing")
    await typing.start()
    await rt.close()
    assert not typing.running
    late = TypingIndicator(rt, show_once, every_s=0.01, job="chat:typing")
    await late.start()  # no error: no answer is coming any more
    assert not late.running


# -- roles -------------------------------------------------------------------------------


def count_world_writes(monkeypatch: pytest.MonkeyPatch, store: object) -> list[str]:
    """The ids of the worlds ``store``'s kind writes from now on (update_world)."""
    writes: list[str] = []
    real = type(store).update_world  # type: ignore[attr-defined]

    async def counting(self: object, world: World) -> bool:
        writes.append(world.id)
        return bool(await real(self, world))

    monkeypatch.setattr(type(store), "update_world", counting)
    return writes


def guild(rt: AgentRuntime, roles: dict[str, str], owner: str | None = "owner", name: str = "Guild") -> World:
    metadata: dict[str, Any] = {"roles": dict(roles)}
    if owner:
        metadata["ownership"] = {"ownerId": owner}
    return World(
        rt.unique_id("chat:guild"), rt.agent_id, name=name, server_id="1", metadata=WorldMetadata.from_json(metadata)
    )


async def test_a_world_seen_again_unchanged_is_not_written_again(runtime, monkeypatch) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    reported = guild(rt, {"owner": "OWNER", "ana": "ADMIN"})
    stored, created = await adapter.connections.merge_world(reported)
    assert created and stored.metadata.roles == {"owner": "OWNER", "ana": "ADMIN"}
    writes = count_world_writes(monkeypatch, rt.store)
    again, created = await ChatAdapter(rt).connections.merge_world(guild(rt, {"owner": "OWNER", "ana": "ADMIN"}))
    assert not created and again.metadata == stored.metadata
    assert writes == []


async def test_roles_given_through_update_role_are_kept_and_new_admins_added(runtime) -> None:  # noqa: F811
    rt = runtime
    connections = ChatAdapter(rt).connections
    await connections.merge_world(guild(rt, {"owner": "OWNER", "ana": "ADMIN"}))
    world = await rt.store.get_world(guild(rt, {}).id)
    assert world is not None
    roles = {**(world.metadata.roles or {}), "ana": Role.NONE, "bo": Role.ADMIN}
    world.metadata = replace(world.metadata, roles=roles)  # as UPDATE_ROLE writes them
    await rt.store.update_world(world)
    merged, _ = await connections.merge_world(guild(rt, {"owner": "OWNER", "ana": "ADMIN", "cy": "ADMIN"}, name="New"))
    stored = await rt.store.get_world(world.id)
    assert stored is not None and stored == merged
    assert stored.name == "New"
    assert stored.metadata.roles == {"owner": "OWNER", "ana": "NONE", "bo": "ADMIN", "cy": "ADMIN"}


def test_whoever_owns_the_server_on_the_platform_is_owner(runtime) -> None:  # noqa: F811
    rt = runtime
    stored = guild(rt, {"old": "OWNER", "new": "NONE"}, owner="old")
    merged = merged_world(stored, guild(rt, {"new": "OWNER"}, owner="new"))
    assert merged is not None and merged.metadata.ownership == Ownership(owner_id="new")
    assert merged.metadata.roles == {"old": "OWNER", "new": "OWNER"}
    assert merged_world(merged, guild(rt, {"new": "OWNER"}, owner="new")) is None  # nothing new: nothing to write


# -- the Messenger -----------------------------------------------------------------------


async def test_a_delivered_message_is_remembered_and_announced(runtime) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    await adapter.start()
    heard: list[Memory] = []

    async def on_sent(event: MessageSent) -> None:
        heard.append(event.message)

    rt.on(MessageSent, on_sent)
    general = room(rt)
    await adapter.connections.ensure_rooms([general])
    [memory] = await adapter.send_to_room(
        general, Reply.of_content({"text": "hello all", "files": ["/tmp/x.png"], "action": "X"})
    )
    assert adapter.posted == [Posted(1, "general", "hello all")]
    assert heard == [memory] and memory.entity_id == rt.agent_id and memory.room_id == general.id
    assert memory.content.to_json() == {"text": "hello all", "source": "chat", "action": "X", "url": "chat://general/1"}
    assert memory.metadata.to_json() == {"type": "message", "chatMessageId": 1}
    stored = await rt.store.get_memory(memory.id)
    assert stored is not None and stored.content.text == "hello all"


async def test_a_platform_that_refuses_raises_its_own_reason_and_nothing_is_stored(runtime, caplog) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    adapter.fail = NotAllowed()
    with pytest.raises(SendError, match=r"^Chat won't let me write there$"):
        await adapter.send_to_room(room(rt), Reply(text="hello"))
    assert await rt.store.get_memory(rt.unique_id("chat:1")) is None


async def test_a_send_that_fails_is_logged_and_raised_as_try_again_later(runtime, caplog) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    adapter.fail = ConnectionResetError("the line dropped")
    with pytest.raises(SendError, match=r"^Chat did not take the message; try again later$"):
        await adapter.send_to_room(room(rt), Reply(text="hello there, everyone"))
    assert f'{rt.character.name}: could not send a message in general, "hello there, everyone": ' in caplog.text
    assert "ConnectionResetError" in caplog.text and "the line dropped" not in caplog.text  # the kind, never the text


async def test_a_message_sent_in_part_keeps_what_went_out_and_says_the_rest_did_not(runtime, caplog) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    adapter.fail = PartlySent("the second piece was refused", [Posted(7, "general", "first piece")])
    await adapter.connections.ensure_rooms([room(rt)])
    with pytest.raises(SendError, match=r"^only the beginning of the message went out; Chat did not take the rest"):
        await adapter.send_to_room(room(rt), Reply(text="first piece second piece"))
    kept = await rt.store.get_memory(rt.unique_id("chat:7"))
    assert kept is not None and kept.content.text == "first piece"
    assert "the second piece was refused" in caplog.text


async def test_a_reply_that_fails_is_logged_and_never_raised(runtime, caplog) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    adapter.fail = PartlySent("refused", [Posted(3, "general", "Half")])
    sent, whole = await adapter.try_send("general", "Half and half", Reply(), 42)
    assert sent == [Posted(3, "general", "Half")] and not whole
    adapter.fail = TimeoutError()
    assert await adapter.try_send("general", "Again", Reply(), 42) == ([], False)
    assert 'could not send a reply in general to 42, "Again": TimeoutError' in caplog.text


async def test_the_messenger_says_what_it_cannot_reach(runtime) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    with pytest.raises(SendError, match=r"^that is not a Chat room$"):
        await adapter.send_to_room(room(rt, source="elsewhere"), Reply(text="hi"))
    stranger = Entity(rt.unique_id("chat:user:9"), rt.agent_id, names=["Sam"], metadata=EntityMetadata.from_json({}))
    with pytest.raises(SendError, match=r"^I don't know Sam on Chat$"):
        await adapter.send_to_entity(stranger, Reply(text="hi"))
    known = Entity(stranger.id, rt.agent_id, names=["Sam"], metadata=EntityMetadata.from_json({"chat": {"id": "9"}}))
    [memory] = await adapter.send_to_entity(known, Reply(text="hi Sam"))
    assert memory.room_id == room(rt, "dm-9").id
    assert adapter.posted == [Posted(1, "dm-9", "hi Sam")]


async def test_a_reply_to_a_stored_message_quotes_it_and_a_blank_one_sends_nothing(runtime) -> None:  # noqa: F811
    rt = runtime
    stored = ping(rt)
    adapter = ChatAdapter(rt)
    await adapter.connections.ensure_rooms([room(rt)])
    [memory] = await adapter.reply_to(stored, Reply(text="pong"))
    assert memory.content.in_reply_to == stored.id and memory.room_id == stored.room_id
    text_only = TextOnly(rt, "t2")
    assert await text_only.reply_to(stored, Reply.of_content({"text": "  ", "files": ["/tmp/x.png"]})) == []
    assert text_only.posted == []
    nowhere = Memory(id=rt.unique_id("chat:lost"), entity_id="e", room_id="r", content=Content(text="?"))
    assert await adapter.reply_to(nowhere, Reply(text="pong")) == []


class Fenced:
    """A lease that another daemon has taken over (or one this process paused past)."""

    def __init__(self) -> None:
        self.held = True

    def allows(self) -> bool:
        return self.held


async def test_nothing_is_sent_once_the_fence_refuses(runtime, caplog) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    rt.fence = fence = Fenced()
    assert await adapter.try_send("general", "Still mine", Reply(), 1) == ([Posted(1, "general", "Still mine")], True)
    fence.held = False
    assert await adapter.try_send("general", "Too late", Reply(), 2) == ([], False)
    with pytest.raises(SendError, match=r"^Chat is served by another daemon now; try again in a moment$"):
        await adapter.send_to_room(room(rt), Reply(text="hello"))
    assert adapter.posted == [Posted(1, "general", "Still mine")]
    assert "not sending a reply: another daemon may serve this character now" in caplog.text


# -- the contract and the reply channel --------------------------------------------------


def test_an_adapter_that_leaves_out_a_hook_cannot_be_made(runtime) -> None:  # noqa: F811
    class Mute(PlatformAdapter[str, Posted, int]):
        source, label, where = "mute", "Mute", "room"

    with pytest.raises(TypeError) as refused:
        Mute(runtime, ChatTokens, "t1")  # type: ignore[abstract]
    hooks = ["connect", "describe_send", "disconnect", "entity_target", "record_of_sent", "reply_target"]
    hooks += ["room_target", "send_native"]
    assert all(hook in str(refused.value) for hook in hooks)


async def test_a_live_reply_is_sent_stored_and_followed_up_but_a_late_one_is_not(runtime) -> None:  # noqa: F811
    rt = runtime
    adapter = ChatAdapter(rt)
    await adapter.connections.ensure_rooms([room(rt)])
    incoming = ping(rt)

    async def show_once() -> None:
        return None

    typing = TypingIndicator(rt, show_once, every_s=0.01, job="chat:typing")
    channel = PlatformReplyChannel(adapter, "general", 5, incoming, typing)
    await channel.typing()
    [memory] = await channel.send(Reply(text="pong"))
    assert not typing.running  # the reply ends "typing…"
    assert memory.content.in_reply_to == incoming.id and adapter.posted == [Posted(1, "general", "pong")]
    [after] = adapter.after
    assert (after.target, after.text, after.memories, after.in_reply_to, after.quoting) == (
        "general",
        "pong",
        [memory],
        incoming,
        5,
    )
    await adapter.reply_to(incoming, Reply(text="pong again"))  # taken up after a crash: no follow-up
    adapter.fail = PartlySent("refused", [Posted(9, "general", "Half")])
    await channel.send(Reply(text="Half and half"))  # not whole: no follow-up
    assert len(adapter.after) == 1
    with pytest.raises(LookupError):
        await channel.fetch({"id": "1"})
