"""FakeDiscord against real, unmodified discord.py clients."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import discord
import pytest
import yarl
from discord import app_commands

from tests.fakes.discord_server import FakeDiscord, Overwrite, Permissions


def make_intents(**overrides: bool) -> discord.Intents:
    intents = discord.Intents.default()
    intents.message_content = True
    intents.members = True
    for name, value in overrides.items():
        setattr(intents, name, value)
    return intents


class Probe(discord.Client):
    """A discord.Client that remembers every event it dispatches."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("intents", make_intents())
        options.setdefault("guild_ready_timeout", 0.1)
        super().__init__(**options)
        self.events: list[tuple[str, tuple[Any, ...]]] = []
        self._new_event = asyncio.Event()

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        super().dispatch(event, *args, **kwargs)
        self.events.append((event, args))
        self._new_event.set()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """discord.py's default sleeps 5 s before every IDENTIFY but the first (a session lost
        for good costs that long in production); tests need not wait."""

    def text_channel(self, channel_id: int) -> discord.TextChannel:
        """The cached channel ``channel_id``, which the test expects to be a text channel."""
        channel = self.get_channel(channel_id)
        assert isinstance(channel, discord.TextChannel), channel
        return channel

    def cached_guild(self, guild_id: int) -> discord.Guild:
        guild = self.get_guild(guild_id)
        assert guild is not None, f"guild {guild_id} is not cached"
        return guild

    def seen(self, name: str) -> list[tuple[Any, ...]]:
        return [args for event, args in self.events if event == name]

    def seen_messages(self) -> list[discord.Message]:
        return [args[0] for args in self.seen("message")]

    async def wait_event(self, name: str, check: Callable[..., bool] = lambda *_: True, timeout: float = 30.0) -> Any:
        """The first ``name`` event (already seen or to come) whose arguments pass ``check``."""
        async with asyncio.timeout(timeout):
            while True:
                for args in self.seen(name):
                    if check(*args):
                        return args[0] if len(args) == 1 else args
                self._new_event.clear()
                await self._new_event.wait()

    async def wait_message(self, content: str, timeout: float = 30.0) -> discord.Message:
        return await self.wait_event("message", lambda m: m.content == content, timeout)


@asynccontextmanager
async def running(*clients: tuple[discord.Client, str], timeout: float = 30.0) -> AsyncIterator[None]:
    """Start the clients with their tokens, wait for on_ready, close them afterwards."""
    tasks = [asyncio.create_task(client.start(token)) for client, token in clients]
    try:
        async with asyncio.timeout(timeout):
            while not all(client.is_ready() for client, _ in clients):
                for task in tasks:
                    if task.done():
                        task.result()
                await asyncio.sleep(0.005)
        yield
    finally:
        for client, _ in clients:
            await client.close()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        server.patch_discord()
        yield server


@pytest.fixture
def world(fake: FakeDiscord) -> dict[str, Any]:
    ada = fake.add_bot("token-ada", "Ada")
    bob = fake.add_bot("token-bob", "Bob")
    sam = fake.add_user("Sam")
    kim = fake.add_user("Kim")
    guild = fake.add_guild("Guild", owner=sam, members=[ada, bob, kim], admins=[kim])
    general = fake.add_channel(guild, "general", topic="chat")
    return {"ada": ada, "bob": bob, "sam": sam, "kim": kim, "guild": guild, "general": general}


async def test_two_bots_log_in_and_see_the_guild(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, bob, guild = world["ada"], world["bob"], world["guild"]
    voice = fake.add_channel(guild, "Lounge", "voice")
    category = fake.add_channel(guild, "Stuff", "category")
    forum = fake.add_channel(guild, "ideas", "forum", parent=category)
    news = fake.add_channel(guild, "news", "news", parent=category)
    topic = fake.add_thread(world["general"], "topic")
    ada_client, bob_client = Probe(), Probe(intents=make_intents(members=False))
    started = time.perf_counter()
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        assert time.perf_counter() - started < 1
        assert ada_client.user is not None and bob_client.user is not None
        assert ada_client.user.id == ada.id and ada_client.user.bot
        assert bob_client.user.name == "Bob"
        assert ada_client.application_id == ada.application_id
        seen = ada_client.get_guild(guild.id)
        assert seen is not None and seen.owner_id == world["sam"].id
        assert seen.chunked and {m.name for m in seen.members} == {"Ada", "Bob", "Sam", "Kim"}
        kim, sam = seen.get_member(world["kim"].id), seen.get_member(world["sam"].id)
        assert kim is not None and sam is not None
        assert kim.guild_permissions.administrator
        assert not sam.roles[1:]  # only @everyone
        assert [r.name for r in seen.roles] == ["@everyone", "Admin"]
        seen_general, seen_forum, seen_news = (seen.get_channel(c.id) for c in (world["general"], forum, news))
        assert isinstance(seen_general, discord.TextChannel) and seen_general.topic == "chat"
        assert isinstance(seen.get_channel(voice.id), discord.VoiceChannel)
        assert isinstance(seen_forum, discord.ForumChannel)
        assert seen_forum.category_id == category.id
        assert isinstance(seen_news, discord.TextChannel) and seen_news.is_news()
        seen_topic = seen.get_thread(topic.id)
        assert seen_topic is not None and seen_topic.parent_id == world["general"].id
        assert seen.me.guild_permissions.send_messages
        without_members = bob_client.cached_guild(guild.id)  # as on Discord: only itself, no chunking
        assert [m.name for m in without_members.members] == ["Bob"] and without_members.member_count == 4
    for bot in (ada, bob):
        assert [(r.method, r.path) for r in bot.requests] == [
            ("GET", "/users/@me"),
            ("GET", "/oauth2/applications/@me"),
        ]
        assert len(bot.identifies) == 1 and not bot.resumes and not bot.member_requests
    assert ada.identifies[0]["intents"] == make_intents().value
    assert bob.identifies[0]["intents"] == make_intents(members=False).value
    assert {q["compress"] for q in fake.gateway_queries} == {"zlib-stream"}
    assert {(q["v"], q["encoding"]) for q in fake.gateway_queries} == {("10", "json")}


async def test_production_recipe_takes_the_gateway_url_from_gateway_bot(
    fake: FakeDiscord, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Route.BASE alone, plus setup_hook asking /gateway/bot: the DISCORD_API_BASE recipe."""
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL("ws://127.0.0.1:9/"))

    class Configured(Probe):
        async def setup_hook(self) -> None:
            _, url, _ = await self.http.get_bot_gateway()
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)

    client = Configured()
    async with running((client, "token-ada")):
        assert client.get_guild(world["guild"].id) is not None
    assert ("GET", "/gateway/bot") in [(r.method, r.path) for r in world["ada"].requests]


async def test_a_user_message_reaches_both_bots(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    ada_client, bob_client = Probe(), Probe()
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        sent = await fake.user_says(sam, general, f"hi {ada.mention}")
        for client in (ada_client, bob_client):
            message = await client.wait_message(f"hi <@{ada.id}>")
            assert message.id == sent.id and message.author.id == sam.id
            assert isinstance(message.author, discord.Member)
            assert message.guild is not None and message.guild.id == world["guild"].id
            assert message.channel.id == general.id
        assert ada_client.user in (await ada_client.wait_message(sent.content)).mentions
        assert [m.id for m in fake.messages_in(general)] == [sent.id]


async def test_content_is_hidden_without_the_message_content_intent(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe(intents=make_intents(message_content=False))
    async with running((client, "token-ada")):
        await fake.user_says(sam, general, "not for you", attachments=[("a.txt", b"x")])
        hidden = await client.wait_event("message")
        assert hidden.content == "" and hidden.attachments == []
        await fake.user_says(sam, general, f"{ada.mention} for you")
        assert (await client.wait_message(f"<@{ada.id}> for you")).mentions
        await fake.dm(sam, ada, "a DM")
        assert isinstance((await client.wait_message("a DM")).channel, discord.DMChannel)


async def test_bots_converse_and_see_their_own_messages(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, bob, general = world["ada"], world["bob"], world["general"]
    ada_client, bob_client = Probe(), Probe()

    @bob_client.event
    async def on_message(message: discord.Message) -> None:
        if message.author.id == ada.id and message.content == "ping":
            await message.channel.send("pong")

    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        await ada_client.text_channel(general.id).send("ping")
        assert (await bob_client.wait_message("ping")).author.id == ada.id
        assert (await ada_client.wait_message("ping")).author.id == ada.id  # its own message, as on Discord
        pong = await ada_client.wait_message("pong")
        assert pong.author.id == bob.id and pong.author.bot
        assert [m.content for m in ada.sent] == ["ping"]
        assert [m.content for m in bob.sent] == ["pong"]


async def test_reply_records_reference_and_allowed_mentions(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, bob, sam, general = world["ada"], world["bob"], world["sam"], world["general"]
    ada_client, bob_client = Probe(), Probe()
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        question = await fake.user_says(sam, general, "what now?")
        message = await ada_client.wait_message("what now?")
        await message.reply(f"ask {bob.mention}", mention_author=False)
        [reply] = await fake.wait_for_sent(ada)
        assert reply.reference is question
        assert reply.message_reference is not None and reply.allowed_mentions is not None
        assert reply.message_reference["message_id"] == question.id
        assert reply.allowed_mentions["replied_user"] is False
        assert reply.mentions == [bob]  # Sam is not pinged
        seen = await bob_client.wait_message(f"ask <@{bob.id}>")
        assert seen.reference is not None
        assert seen.reference.message_id == question.id and seen.type is discord.MessageType.reply
        assert isinstance(seen.reference.resolved, discord.Message)
        assert seen.reference.resolved.content == "what now?"
        assert bob_client.user in seen.mentions

        await message.reply("quietly", allowed_mentions=discord.AllowedMentions.none())
        quiet = (await fake.wait_for_sent(ada, 2))[1]
        assert quiet.allowed_mentions == {"parse": []}
        assert quiet.mentions == []


async def test_messages_with_file_uploads(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, general = world["ada"], world["general"]
    ada_client, bob_client = Probe(), Probe()
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        channel = ada_client.text_channel(general.id)
        await channel.send("first")
        await channel.send(
            "here is the file",
            files=[discord.File(io.BytesIO(b"hello file"), "notes.txt"), discord.File(io.BytesIO(b"\x89PNG"), "p.png")],
        )
        first, second = await fake.wait_for_sent(ada, 2)
        assert first.payload is not None and second.payload is not None
        assert first.files == [] and first.payload["content"] == "first"
        assert [f.filename for f in second.files] == ["notes.txt", "p.png"]
        assert second.files[0].data == b"hello file"
        assert second.payload["content"] == "here is the file"
        assert [a["filename"] for a in second.payload["attachments"]] == ["notes.txt", "p.png"]
        seen = await bob_client.wait_message("here is the file")
        assert [a.filename for a in seen.attachments] == ["notes.txt", "p.png"]
        assert seen.attachments[1].content_type == "image/png"
        assert await seen.attachments[0].read() == b"hello file"


async def test_user_attachments_can_be_downloaded(fake: FakeDiscord, world: dict[str, Any]) -> None:
    client = Probe()
    async with running((client, "token-ada")):
        await fake.user_says(world["sam"], world["general"], "see", attachments=[("log.txt", b"line 1\n")])
        message = await client.wait_message("see")
        assert message.attachments[0].size == 7
        assert await message.attachments[0].read() == b"line 1\n"


async def test_a_429_is_waited_out_and_retried(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada = world["ada"]
    rule = fake.fail_next("POST", r"/channels/\d+/messages$", status=429, retry_after=0.05)
    client = Probe()
    async with running((client, "token-ada")):
        started = time.perf_counter()
        message = await client.text_channel(world["general"].id).send("after the limit")
        assert time.perf_counter() - started >= 0.05
    assert message.content == "after the limit"
    posts = [r for r in ada.requests if r.method == "POST"]
    assert [r.status for r in posts] == [429, 200]
    assert rule.hits == 1 and len(ada.sent) == 1


async def test_a_global_429_and_a_502_are_retried(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada = world["ada"]
    client = Probe()
    async with running((client, "token-ada")):
        fake.fail_next("*", r"/typing$", status=429, retry_after=0.02, global_=True)
        fake.fail_next("POST", r"/messages$", status=502)  # discord.py waits 1 s before retrying a 5xx
        channel = client.text_channel(world["general"].id)
        await channel.typing()
        await channel.send("through")
    assert [r.status for r in ada.requests if r.method == "POST"] == [429, 204, 502, 200]
    assert [m.content for m in ada.sent] == ["through"]


async def test_an_invalid_token_raises_login_failure(fake: FakeDiscord, world: dict[str, Any]) -> None:
    client = Probe()
    with pytest.raises(discord.LoginFailure):
        await client.start("not-a-token")
    await client.close()
    assert [(r.path, r.status, r.bot) for r in fake.requests] == [("/users/@me", 401, None)]
    assert fake.gateway_connections == 0


async def test_a_missing_privileged_intent_fails_once(fake: FakeDiscord) -> None:
    fake.add_bot("token-shy", "Shy", message_content_intent=False)
    client = Probe()
    started = time.perf_counter()
    with pytest.raises(discord.PrivilegedIntentsRequired):
        await asyncio.wait_for(client.start("token-shy"), 3)
    assert time.perf_counter() - started < 1
    await client.close()
    shy = fake.bots["token-shy"]
    assert shy.gateway_closes == [4014]
    assert len(shy.identifies) == 1 and fake.gateway_connections == 1


async def test_a_bot_that_must_shard_is_refused_with_4011_unless_it_identifies_with_enough_shards(
    fake: FakeDiscord,
) -> None:
    big = fake.add_bot("token-big", "Big")
    big.shards = 2
    unsharded = Probe()
    with pytest.raises(discord.ConnectionClosed) as refused:
        await asyncio.wait_for(unsharded.start("token-big"), 3)
    await unsharded.close()
    assert refused.value.code == 4011 and big.gateway_closes == [4011]
    sharded = discord.AutoShardedClient(intents=make_intents(), guild_ready_timeout=0.1)
    sharded.before_identify_hook = Probe.before_identify_hook.__get__(sharded)  # type: ignore[method-assign]
    async with running((sharded, "token-big")):
        assert sharded.shard_count == 2  # what /gateway/bot recommends
        assert [i["shard"] for i in big.identifies[1:]] == [[0, 2], [1, 2]]


@pytest.mark.parametrize(
    ("code", "resumable"),
    [(None, True), (4000, True), (4009, False)],
    ids=["cut-then-resume", "closed-then-resume", "session-lost-then-identify"],
)
async def test_a_dropped_gateway_comes_back(
    fake: FakeDiscord, world: dict[str, Any], code: int | None, resumable: bool
) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe()
    async with running((client, "token-ada")):
        await fake.drop_gateway(ada, code, resumable=resumable)
        await fake.user_says(sam, general, "during the gap")  # before the client is back
        await fake.wait_connected(ada)
        if resumable:  # missed events are replayed on RESUME
            await client.wait_event("resumed")
            await client.wait_message("during the gap")
            assert len(ada.resumes) == 1 and len(ada.identifies) == 1
        else:  # RESUME refused with INVALID_SESSION: a fresh IDENTIFY, and the gap is lost
            await client.wait_event("ready", lambda *_: len(client.seen("ready")) == 2)
            assert len(ada.resumes) == 1 and len(ada.identifies) == 2
        await fake.user_says(sam, general, "and now?")
        await client.wait_message("and now?")
        expected = ["during the gap", "and now?"] if resumable else ["and now?"]
        assert [m.content for m in client.seen_messages()] == expected
        assert {q.get("compress") for q in fake.gateway_queries} == {"zlib-stream"}


async def test_reconnect_and_invalid_session_opcodes(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe()
    async with running((client, "token-ada")):
        await fake.send_reconnect(ada)
        await client.wait_event("resumed")
        await fake.invalidate_session(ada)
        await client.wait_event("ready", lambda *_: len(client.seen("ready")) == 2)
        await fake.user_says(sam, general, "still here")
        await client.wait_message("still here")
    assert len(ada.identifies) == 2 and len(ada.resumes) == 1


async def test_heartbeats_are_acknowledged() -> None:
    async with FakeDiscord(heartbeat_interval=30) as fake:
        fake.patch_discord()
        ada = fake.add_bot("token-ada", "Ada")
        fake.add_guild("G", members=[ada])
        client = Probe()
        async with running((client, "token-ada")):
            await fake.wait_for(lambda: ada.heartbeats >= 3, 2, "heartbeats")
            assert client.latency < 1


async def test_dm_round_trip(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, bob, sam = world["ada"], world["bob"], world["sam"]
    ada_client, bob_client = Probe(), Probe()

    @ada_client.event
    async def on_message(message: discord.Message) -> None:
        if isinstance(message.channel, discord.DMChannel) and message.author.id == sam.id:
            await message.channel.send(f"hello {message.author.name}")

    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        incoming = await fake.dm(sam, ada, "hello")
        message = await ada_client.wait_message("hello")
        assert message.guild is None and message.channel.id == incoming.channel.id
        [answer] = await fake.wait_for_sent(ada)
        assert answer.channel is fake.dm_channel(sam, ada) and answer.content == "hello Sam"
        await ada_client.wait_message("hello Sam")  # the bot sees its own DM, like on Discord
        assert not bob_client.seen("message")  # nobody else does

        user = await ada_client.fetch_user(world["kim"].id)
        await user.send("a note for Kim")
        note = (await fake.wait_for_sent(ada, 2))[1]
        assert note.channel.recipients == [ada, world["kim"]]
        assert ("POST", "/users/@me/channels") in [(r.method, r.path) for r in ada.requests]
        with pytest.raises(discord.Forbidden):
            await (await ada_client.fetch_user(bob.id)).send("bots cannot DM bots")


async def test_slash_commands_are_registered_invoked_and_answered(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general, guild = world["ada"], world["sam"], world["general"], world["guild"]
    client = Probe()
    tree = app_commands.CommandTree(client)
    troupe = app_commands.Group(name="troupe", description="The troupe")

    @troupe.command(name="say", description="Say something")
    async def say(interaction: discord.Interaction, text: str, who: discord.Member | None = None) -> None:
        name = who.display_name if who else "nobody"
        await interaction.response.send_message(f"{text} to {name}")
        await interaction.followup.send("just for you", ephemeral=True)

    @app_commands.command(name="slow", description="Think first")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.edit_original_response(content="done thinking")

    @app_commands.command(name="ponder", description="Think, then follow up")
    async def ponder(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send("pondered")

    tree.add_command(troupe)
    tree.add_command(slow, guild=discord.Object(guild.id))
    tree.add_command(ponder, guild=discord.Object(guild.id))

    async def setup_hook() -> None:
        await tree.sync()
        await tree.sync(guild=discord.Object(guild.id))

    client.setup_hook = setup_hook  # type: ignore[method-assign]
    async with running((client, "token-ada")):
        assert [c["name"] for c in ada.commands[None]] == ["troupe"]
        assert [c["name"] for c in ada.commands[guild.id]] == ["slow", "ponder"]
        assert [(scope, [c["name"] for c in cmds]) for scope, cmds in ada.command_registrations] == [
            (None, ["troupe"]),
            (guild.id, ["slow", "ponder"]),
        ]
        assert ada.commands[None][0]["options"][0]["name"] == "say"

        interaction = await fake.invoke_command(
            sam, general, ada, "troupe say", options={"text": "hi", "who": world["kim"]}
        )
        callback, followup = await fake.wait_for_response(interaction, 2)
        assert callback.kind == "callback" and callback.type == 4
        assert callback.payload["data"]["content"] == "hi to Kim"
        assert callback.message is not None and followup.message is not None
        assert callback.message.content == "hi to Kim" and callback.message.interaction is interaction
        assert followup.kind == "followup" and followup.payload["content"] == "just for you"
        assert followup.message.flags & 64  # ephemeral
        shown = await client.wait_message("hi to Kim")
        assert shown.interaction_metadata is not None and shown.interaction_metadata.user.id == sam.id

        thinking = await fake.invoke_command(sam, general, ada, "slow")
        deferred, edit = await fake.wait_for_response(thinking, 2)
        assert edit.message is not None
        assert deferred.type == 5 and edit.kind == "edit" and edit.message.content == "done thinking"
        assert thinking.original is edit.message

        pondering = await fake.invoke_command(sam, general, ada, "ponder")
        deferred, followup = await fake.wait_for_response(pondering, 2)
        assert followup.kind == "followup" and followup.message is pondering.original  # replaces "thinking…"
        pondered = followup.message
        assert pondered is not None
        assert (await client.wait_event("message_edit", lambda b, a: a.id == pondered.id))[1].content == "pondered"
        with pytest.raises(LookupError):
            await fake.invoke_command(sam, general, ada, "missing")


async def test_reactions_edits_and_deletes_are_dispatched(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe()
    async with running((client, "token-ada")):
        said = await fake.user_says(sam, general, "react to me")
        message = await client.wait_message("react to me")

        await fake.user_reacts(sam, said, "👍")
        reaction, user = await client.wait_event("reaction_add")
        assert str(reaction.emoji) == "👍" and user.id == sam.id and reaction.message.id == said.id
        raw = await client.wait_event("raw_reaction_add")
        assert raw.message_author_id == sam.id

        await message.add_reaction("🎭")
        assert ada.reactions == [(said, "🎭")] and said.reactions["🎭"] == [ada.id]
        await client.wait_event("raw_reaction_add", lambda e: e.user_id == ada.id)
        await fake.user_unreacts(sam, said, "👍")
        await client.wait_event("raw_reaction_remove")

        await fake.user_edits(said, "edited")
        before, after = await client.wait_event("message_edit")
        assert (before.content, after.content) == ("react to me", "edited")

        await fake.user_deletes(said)
        assert (await client.wait_event("message_delete")).id == said.id

        mine = await client.text_channel(general.id).send("typo")
        await mine.edit(content="fixed")
        assert ada.edits[0][1]["content"] == "fixed"
        assert (await client.wait_event("message_edit", lambda b, a: a.id == mine.id))[1].content == "fixed"
        await mine.delete()
        assert [m.id for m in ada.deletes] == [mine.id]
        assert fake.messages_in(general) == []
        with pytest.raises(discord.NotFound):
            await client.text_channel(general.id).fetch_message(mine.id)


async def test_members_join_and_leave(fake: FakeDiscord, world: dict[str, Any]) -> None:
    guild = world["guild"]
    newcomer = fake.add_user("Neo")
    client = Probe()
    async with running((client, "token-ada")):
        await fake.member_joins(guild, newcomer)
        joined = await client.wait_event("member_join")
        assert joined.id == newcomer.id and client.cached_guild(guild.id).get_member(newcomer.id)
        await fake.member_leaves(guild, newcomer)
        assert (await client.wait_event("member_remove")).id == newcomer.id


async def test_typing_and_fetches(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general, guild = world["ada"], world["sam"], world["general"], world["guild"]
    client = Probe()
    async with running((client, "token-ada")):
        channel = client.text_channel(general.id)
        async with channel.typing():
            await channel.send("typed")
        assert await fake.wait_for_typing(ada, channel=general) == [general]
        first = await fake.user_says(sam, general, "one")
        second = await fake.user_says(sam, general, "two")
        assert (await channel.fetch_message(first.id)).content == "one"
        assert [m.content async for m in channel.history(limit=10)] == ["two", "one", "typed"]
        assert [m.content async for m in channel.history(after=discord.Object(first.id))] == ["two"]
        fetched = await client.fetch_channel(general.id)
        assert isinstance(fetched, discord.TextChannel) and fetched.name == "general"
        assert (await client.fetch_user(sam.id)).name == "Sam"
        assert (await client.fetch_guild(guild.id)).name == "Guild"
        assert (await client.cached_guild(guild.id).fetch_member(sam.id)).id == sam.id
        found = await client.cached_guild(guild.id).query_members("Sa")
        assert [m.name for m in found] == ["Sam"] and ada.member_requests[0]["query"] == "Sa"
        assert second.id > first.id


async def test_permissions_decide_who_sees_a_channel(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, bob, sam, guild = world["ada"], world["bob"], world["sam"], world["guild"]
    secret = fake.add_channel(
        guild,
        "secret",
        overwrites=[
            Overwrite(guild.everyone, deny=Permissions.VIEW_CHANNEL),
            Overwrite(ada, allow=Permissions.VIEW_CHANNEL),
        ],
    )
    readonly = fake.add_channel(
        guild, "readonly", overwrites=[Overwrite(guild.everyone, deny=Permissions.SEND_MESSAGES)]
    )
    ada_client, bob_client = Probe(), Probe()
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        await fake.user_says(sam, secret, "psst")
        await ada_client.wait_message("psst")
        await fake.user_says(sam, world["general"], "public")
        await bob_client.wait_message("public")
        assert [m.content for m in bob_client.seen_messages()] == ["public"]
        with pytest.raises(discord.Forbidden) as forbidden:
            await ada_client.text_channel(readonly.id).send("hello?")
        assert forbidden.value.code == 50013
        with pytest.raises(discord.Forbidden) as forbidden:
            await bob_client.http.send_message(secret.id, params=discord.http.handle_message_parameters(content="x"))
        assert forbidden.value.code == 50001
        with pytest.raises(discord.HTTPException) as invalid:
            await ada_client.text_channel(world["general"].id).send("x" * 2001)
        assert invalid.value.code == 50035
    assert fake.permissions(bob, secret) == 0


async def test_threads(fake: FakeDiscord, world: dict[str, Any]) -> None:
    ada, sam, general, guild = world["ada"], world["sam"], world["general"], world["guild"]
    forum = fake.add_channel(guild, "ideas", "forum")
    client = Probe()
    async with running((client, "token-ada")):
        thread = fake.add_thread(general, "side topic", owner=sam)
        created = await client.wait_event("thread_create")
        assert created.id == thread.id and created.parent_id == general.id
        await fake.user_says(sam, thread, "in the thread")
        message = await client.wait_message("in the thread")
        assert isinstance(message.channel, discord.Thread)
        await message.channel.send("thread reply")
        assert (await fake.wait_for_sent(ada))[0].channel is thread

        post = fake.add_thread(forum, "an idea", owner=sam, content="what if")
        starter = await client.wait_message("what if")
        assert isinstance(starter.channel, discord.Thread)
        assert starter.id == post.id and starter.channel.parent_id == forum.id

        await fake.user_says(sam, general, "start here")
        root = await client.wait_message("start here")
        started = await root.create_thread(name="from a message")
        assert started.id == root.id and fake.channels[started.id].parent is general


async def test_members_are_chunked_at_startup_when_guild_create_lacks_them() -> None:
    async with FakeDiscord(members_in_guild_create=False) as fake:
        fake.patch_discord()
        ada = fake.add_bot("token-ada", "Ada")
        guild = fake.add_guild("Big", members=[ada, *(fake.add_user(f"user{i}") for i in range(5))])
        client = Probe()
        started = time.perf_counter()
        async with running((client, "token-ada")):
            assert time.perf_counter() - started < 1
            assert client.cached_guild(guild.id).chunked and len(client.cached_guild(guild.id).members) == 6
        assert [r["guild_id"] for r in ada.member_requests] == [guild.id]


async def test_the_gateway_protocol_without_discord_py(fake: FakeDiscord, world: dict[str, Any]) -> None:
    """Uncompressed JSON frames, HEARTBEAT_ACK, and the close codes for protocol errors."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(fake.gateway_url + "?v=10&encoding=json") as ws:
            hello = await ws.receive_json(timeout=2)
            assert hello["op"] == 10 and hello["d"]["heartbeat_interval"] == 41_250
            await ws.send_json({"op": 1, "d": None})
            assert (await ws.receive_json(timeout=2))["op"] == 11
            await ws.send_json({"op": 2, "d": {"token": "token-bob", "intents": 1 | 1 << 9, "properties": {}}})
            ready = await ws.receive_json(timeout=2)
            assert (ready["t"], ready["s"]) == ("READY", 1)
            assert ready["d"]["guilds"] == [{"id": str(world["guild"].id), "unavailable": True}]
            assert ready["d"]["resume_gateway_url"] == fake.resume_gateway_url
            guild_create = await ws.receive_json(timeout=2)
            assert (guild_create["t"], guild_create["s"]) == ("GUILD_CREATE", 2)
            assert guild_create["d"]["members"] == [fake._member_payload(world["guild"].members[world["bob"].id])]
            await fake.user_says(world["sam"], world["general"], "no content for you")
            message = await ws.receive_json(timeout=2)
            assert message["t"] == "MESSAGE_CREATE" and message["d"]["content"] == ""
        for frame, code in [
            ({"op": 3, "d": {}}, 4003),
            ({"op": 2, "d": {"token": "wrong", "intents": 1}}, 4004),
            ({"op": 2, "d": {"token": "token-bob", "intents": 1 << 30}}, 4013),
            ({"op": 42, "d": None}, 4003),
        ]:
            async with session.ws_connect(fake.gateway_url + "?v=10&encoding=json") as ws:
                await ws.receive_json(timeout=2)
                await ws.send_json(frame)
                closing = await ws.receive(timeout=2)
                assert closing.type is aiohttp.WSMsgType.CLOSE and closing.data == code


def buttons_view(*items: discord.ui.Button[discord.ui.View]) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for item in items:
        view.add_item(item)
    return view


async def test_buttons_are_kept_on_messages_and_a_click_reaches_the_bot_with_the_message(
    fake: FakeDiscord, world: dict[str, Any]
) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe()
    pressed: list[discord.Interaction] = []

    class Vote(discord.ui.View):
        @discord.ui.button(label="Yes", custom_id="vote:yes")
        async def yes(self, interaction: discord.Interaction, button: discord.ui.Button[Vote]) -> None:
            pressed.append(interaction)
            await interaction.response.defer()

    async with running((client, "token-ada")):
        view = Vote(timeout=None)
        view.add_item(discord.ui.Button(label="Docs", url="https://example.com/docs"))
        sent = await client.text_channel(general.id).send("vote?", view=view)
        (message,) = await fake.wait_for_sent(ada)
        assert [[c.get("custom_id") or c.get("url") for c in row["components"]] for row in message.components] == [
            ["vote:yes", "https://example.com/docs"]
        ]
        click = await fake.user_clicks(sam, message, "vote:yes")
        (callback,) = await fake.wait_for_response(click)
        assert pressed[0].message is not None and pressed[0].message.id == sent.id
        assert pressed[0].user.id == sam.id and isinstance(pressed[0].user, discord.Member)
        assert callback.type == 6 and click.type == 3 and click.data == {"custom_id": "vote:yes", "component_type": 2}
        assert click.payload["message"]["components"] == message.components
        assert 0 <= callback.at - click.dispatched[0] < 3
        with pytest.raises(LookupError, match="no button 'vote:no'"):
            await fake.user_clicks(sam, message, "vote:no")
        with pytest.raises(LookupError, match="no button"):  # a link opens in the browser, no interaction
            await fake.user_clicks(sam, message, "https://example.com/docs")


async def one_click(
    fake: FakeDiscord, client: Probe, world: dict[str, Any], custom_id: str
) -> tuple[Any, Any, discord.Interaction]:
    """Ada posts a message with one button in #general and Sam clicks it: the message, the click
    (as the fake keeps them) and the interaction Ada's client got."""
    button = discord.ui.Button[discord.ui.View](label=custom_id.title(), custom_id=custom_id)
    await client.text_channel(world["general"].id).send(custom_id, view=buttons_view(button))
    (message,) = await fake.wait_for_sent(world["ada"])
    click = await fake.user_clicks(world["sam"], message, custom_id)
    return message, click, await client.wait_event("interaction")


async def test_a_click_answered_twice_or_too_late_is_refused_as_discord_does(
    fake: FakeDiscord, world: dict[str, Any]
) -> None:
    sam = world["sam"]
    client = Probe()
    async with running((client, "token-ada")):
        message, click, interaction = await one_click(fake, client, world, "go")
        await interaction.response.defer()
        await fake.redeliver(click)  # the same INTERACTION_CREATE again: a fresh object, answered again
        again = await client.wait_event("interaction", lambda i: i is not interaction)
        with pytest.raises(discord.HTTPException, match="40060"):
            await again.response.defer()
        assert len(fake.bots["token-ada"].interactions) == 1 and len(click.responses) == 1
        fake.interaction_window = 0.05
        late = await fake.user_clicks(sam, message, "go")
        expired = await client.wait_event("interaction", lambda i: i.id == late.id)
        await asyncio.sleep(0.1)
        with pytest.raises(discord.NotFound, match="10062"):
            await expired.response.defer()
        assert late.responses == []


@pytest.mark.parametrize(
    ("rows", "field"),
    [
        ([{"type": 1, "components": [{"type": 2, "style": 1, "label": "x", "custom_id": "a" * 101}]}], "custom_id"),
        ([{"type": 1, "components": [{"type": 2, "style": 5, "label": "x", "custom_id": "a"}]}], "components.0"),
        (
            [{"type": 1, "components": [{"type": 2, "style": 1, "label": "x", "custom_id": str(i)} for i in range(6)]}],
            "components.0",
        ),
        ([{"type": 1, "components": [{"type": 2, "style": 1, "label": "x", "custom_id": "a"}]}] * 2, "duplicated"),
        (
            [{"type": 1, "components": [{"type": 2, "style": 1, "label": "x", "custom_id": str(i)}]} for i in range(6)],
            "5 or fewer",
        ),
    ],
)
async def test_buttons_discord_would_refuse_are_refused(
    fake: FakeDiscord, world: dict[str, Any], rows: list[dict[str, Any]], field: str
) -> None:
    client = Probe()
    async with running((client, "token-ada")):
        route = discord.http.Route("POST", "/channels/{channel_id}/messages", channel_id=world["general"].id)
        with pytest.raises(discord.HTTPException, match="50035") as refused:
            await client.http.request(route, json={"content": "hi", "components": rows})
        assert field in str(refused.value.text) or field in str(refused.value)
        assert world["ada"].sent == []


async def test_a_select_is_kept_and_a_choice_reaches_the_bot_with_its_values(
    fake: FakeDiscord, world: dict[str, Any]
) -> None:
    ada, sam, general = world["ada"], world["sam"], world["general"]
    client = Probe()
    chosen: list[list[str]] = []

    class Pick(discord.ui.View):
        @discord.ui.select(
            custom_id="pick", max_values=2, options=[discord.SelectOption(label=n, value=n) for n in "abc"]
        )
        async def pick(self, interaction: discord.Interaction, select: discord.ui.Select[Pick]) -> None:
            chosen.append(list(select.values))
            await interaction.response.defer()

    async with running((client, "token-ada")):
        await client.text_channel(general.id).send("pick?", view=Pick(timeout=None))
        (message,) = await fake.wait_for_sent(ada)
        choice = await fake.user_selects(sam, message, ["c", "a"])
        (callback,) = await fake.wait_for_response(choice)
        assert callback.type == 6 and chosen == [["c", "a"]]
        assert choice.type == 3 and choice.data == {"custom_id": "pick", "component_type": 3, "values": ["c", "a"]}
        for values in (["d"], ["a", "b", "c"], [], ["a", "a"]):
            with pytest.raises(LookupError):
                await fake.user_selects(sam, message, values)


async def test_a_modal_answers_a_click_and_its_submission_reaches_the_bot_once(
    fake: FakeDiscord, world: dict[str, Any]
) -> None:
    sam = world["sam"]
    client = Probe()
    async with running((client, "token-ada")):
        _, click, pressed = await one_click(fake, client, world, "tell")
        with pytest.raises(LookupError, match="no modal"):
            await fake.user_submits(sam, click, {"what": "x"})
        modal = discord.ui.Modal(title="Tell", custom_id="told", timeout=None)
        modal.add_item(discord.ui.TextInput(label="What?", custom_id="what", max_length=5))
        modal.stop()
        await pressed.response.send_modal(modal)
        (callback,) = await fake.wait_for_response(click)
        assert callback.type == 9 and click.modal is not None and click.modal["custom_id"] == "told"
        with pytest.raises(LookupError, match="takes 5"):
            await fake.user_submits(sam, click, {"what": "too long"})
        with pytest.raises(LookupError, match="required"):
            await fake.user_submits(sam, click, {})
        submitted = await fake.user_submits(sam, click, {"what": "hi"})
        answer = await client.wait_event("interaction", lambda i: i.id == submitted.id)
        assert answer.type is discord.InteractionType.modal_submit and answer.message is not None
        assert answer.data is not None and answer.data.get("custom_id") == "told"
        await answer.response.defer()
        assert [r.type for r in await fake.wait_for_response(submitted)] == [6]
        await fake.redeliver(submitted)
        again = await client.wait_event("interaction", lambda i: i.id == submitted.id and i is not answer)
        with pytest.raises(discord.HTTPException, match="40060"):
            await again.response.defer()


async def test_a_modal_discord_would_refuse_is_refused(fake: FakeDiscord, world: dict[str, Any]) -> None:
    client = Probe()
    async with running((client, "token-ada")):
        _, click, pressed = await one_click(fake, client, world, "go")
        modal = discord.ui.Modal(title="t" * 46, custom_id="m", timeout=None)
        modal.add_item(discord.ui.TextInput(label="What?", custom_id="what"))
        modal.stop()
        with pytest.raises(discord.HTTPException, match="50035"):
            await pressed.response.send_modal(modal)
        assert click.modal is None and click.responses == []
