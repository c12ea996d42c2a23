"""Voice presence on Discord: a character joins its voice channel (DISCORD_VOICE_CHANNEL_ID, or
any with DISCORD_VOICE_AUTO_JOIN) when a person enters it, leaves a channel left without people
(after DISCORD_VOICE_ALONE_S), follows being moved by an admin, knows who is with it (the voiceState
and channelState providers), and takes speech from the only other person there as said to it —
the daemon and unmodified discord.py against the fake Discord (voice gateway, RTP) and OpenAI."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.runtime.events import VoiceEnded, VoiceStarted, WorldJoined, WorldLeft
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import Overwrite, Permissions
from .scene import Scene, plan, until
from .test_catchup import identify_gate
from .test_voice_flows import ask_aloud, voice_settings

__all__ = ["identify_gate"]  # the fixture, used here by name


async def joined(s: Scene, channel: Any, **settings: str) -> Any:
    """Ada started with voice on, and in ``channel`` with Sam (asked with /join): her session."""
    await s.start(voice_settings(s, **settings), with_brann=False)
    return await joined_later(s, channel)


async def joined_later(s: Scene, channel: Any) -> Any:
    """Sam joins ``channel`` and has Ada (already running) join him there with /join."""
    await s.fake.user_joins_voice(s.sam, channel)
    await s.fake.invoke_command(s.sam, s.general, s.ada, "join")
    await s.fake.voice.wait_connected(s.ada, channel, timeout=60)
    voice = s.runtime("Ada").get_service("discord").voice
    return await until(lambda: voice.sessions.get(s.guild.id))


def joins_asked(bot: Any) -> list[int | None]:
    """The channels ``bot`` asked Discord to be in (gateway op 4), in order; ``None``: to leave."""
    return [int(u["channel_id"]) if u["channel_id"] else None for u in bot.voice_state_updates]


async def sam_leaves_and_she_goes_to_cleo(s: Scene, with_sam: Any, with_cleo: Any) -> None:
    """Sam leaves Ada alone in ``with_sam``: she leaves it and joins Cleo in ``with_cleo``, and
    was in no other channel before (gateway op 4)."""
    await s.fake.user_leaves_voice(s.sam, s.guild)
    await s.fake.voice.wait_connected(s.ada, with_cleo, timeout=60)
    assert joins_asked(s.ada) == [with_sam.id, None, with_cleo.id]


async def stored_texts(s: Scene, channel: Any) -> list[str]:
    rt = s.runtime("Ada")
    room = discord_id(rt.agent_id, channel.id)
    return [str(m.content.text) for m in await rt.store.get_memories(table="messages", room_id=room)]


async def until_stored(s: Scene, channel: Any, text: str) -> None:
    async with asyncio.timeout(60):
        while text not in await stored_texts(s, channel):
            await asyncio.sleep(0.02)


async def test_a_character_left_alone_leaves_after_the_setting_and_stays_while_someone_is_there(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    session = await joined(s, voice_general, DISCORD_VOICE_ALONE_S="0.6")
    voice = s.runtime("Ada").get_service("discord").voice

    await asyncio.sleep(1.0)  # Sam is there: longer than the setting, and she stays
    assert s.fake.voice.is_connected(s.ada, voice_general) and voice.sessions[s.guild.id] is session

    # Sam steps out and back in before the time is up: the countdown starts again from nothing.
    await s.fake.user_leaves_voice(s.sam, s.guild)
    await asyncio.sleep(0.3)
    await s.fake.user_joins_voice(s.sam, voice_general)
    await asyncio.sleep(0.8)
    assert s.fake.voice.is_connected(s.ada, voice_general)

    # Alone: she leaves, by herself, once DISCORD_VOICE_ALONE_S has passed.
    await s.fake.user_leaves_voice(s.sam, s.guild)
    left_alone = asyncio.get_running_loop().time()
    await until(lambda: s.fake.voice_state(s.ada, s.guild) is None, timeout=60)
    assert asyncio.get_running_loop().time() - left_alone >= 0.6
    await until(lambda: s.guild.id not in voice.sessions)
    assert s.ada.voice_state_updates[-1]["channel_id"] is None  # she asked to leave (gateway op 4)


async def test_another_bot_is_no_company_but_with_discord_voice_stay_a_character_waits_in_its_channel(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    home = voice_settings(
        s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id), DISCORD_VOICE_STAY="true", DISCORD_VOICE_ALONE_S="0.5"
    )
    await s.start(voice_settings(s, DISCORD_VOICE_ALONE_S="0.5"), brann_settings=home)
    await s.fake.voice.wait_connected(s.brann, voice_general, timeout=60)  # Brann sits there from the start
    await joined_later(s, voice_general)  # Ada joins Sam there
    brann = s.runtime("Brann").get_service("discord").voice

    await s.fake.user_leaves_voice(s.sam, s.guild)
    # Only Brann, a bot, is left with Ada: she leaves; Brann waits in its own channel for people.
    await until(lambda: s.fake.voice_state(s.ada, s.guild) is None, timeout=60)
    assert s.fake.voice.is_connected(s.brann, voice_general)
    assert not brann.sessions[s.guild.id].alone.running  # no countdown to leaving


async def test_a_character_joins_its_channel_when_a_person_enters_and_leaves_after_the_last_one(scene, caplog) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    own = voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id), DISCORD_VOICE_ALONE_S="2")
    stays = voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id), DISCORD_VOICE_STAY="true")
    with caplog.at_level(logging.DEBUG, logger="platforms.discord"):
        await s.start(own, brann_settings=stays)
        # Brann, a bot, sits in General from the start: no company, so Ada stays out.
        await s.fake.voice.wait_connected(s.brann, voice_general, timeout=60)
        await until(lambda: "Ada: Brann, a bot, entered voice channel General: not company" in caplog.text, 60)
        assert "Ada: will join voice channel General when someone enters it" in caplog.text
        assert s.ada.voice_state_updates == [] and s.fake.voice_state(s.ada, s.guild) is None

    # Sam enters: Ada asks Discord to join (gateway op 4) and connects.
    await s.fake.user_joins_voice(s.sam, voice_general)
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert joins_asked(s.ada) == [voice_general.id]
    voice = s.runtime("Ada").get_service("discord").voice
    session = await until(lambda: voice.sessions.get(s.guild.id))
    assert session.text_channel is session.channel  # unasked: it writes in the voice channel's chat

    # Sam steps out and back within DISCORD_VOICE_ALONE_S: the countdown stops, she stays.
    await s.fake.user_leaves_voice(s.sam, s.guild)
    await until(lambda: session.alone.running)
    await s.fake.user_joins_voice(s.sam, voice_general)
    await until(lambda: not session.alone.running)
    assert voice.sessions[s.guild.id] is session and s.fake.voice.is_connected(s.ada, voice_general)

    # The last person leaves: she leaves once DISCORD_VOICE_ALONE_S has passed (Brann is no company).
    await s.fake.user_leaves_voice(s.sam, s.guild)
    left_alone = asyncio.get_running_loop().time()
    await until(lambda: s.fake.voice_state(s.ada, s.guild) is None, timeout=60)
    assert asyncio.get_running_loop().time() - left_alone >= 2
    assert joins_asked(s.ada) == [voice_general.id, None]

    # The next person to enter brings her back.
    await s.fake.user_joins_voice(s.cleo, voice_general)
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert s.fake.voice.is_connected(s.brann, voice_general)


async def test_back_after_losing_its_session_a_character_joins_people_who_entered_meanwhile(
    scene, identify_gate: asyncio.Event, caplog
) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    with caplog.at_level(logging.INFO, logger="platforms.discord"):
        await s.start(voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id)), with_brann=False)
        await until(lambda: "Ada: will join voice channel General when someone enters it" in caplog.text, 60)
    await s.fake.invalidate_session(s.ada)  # not resumable: the events until it identifies again are lost
    await s.fake.user_joins_voice(s.sam, voice_general)
    identify_gate.set()
    # Identified again, Ada finds Sam in her channel (GUILD_CREATE's voice states) and joins him.
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert len(s.ada.identifies) == 2 and joins_asked(s.ada) == [voice_general.id]


async def test_a_channel_the_character_may_not_join_is_logged_and_tried_again_only_when_someone_enters(
    scene, caplog
) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    voice_general.overwrites.append(Overwrite(s.ada, deny=Permissions.CONNECT))
    failed = "Ada: could not join voice channel General by itself: I'm not allowed to connect and speak in General."
    with caplog.at_level(logging.ERROR, logger="platforms.discord"):
        await s.start(voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id)), with_brann=False)
        await s.fake.user_joins_voice(s.sam, voice_general)
        await until(lambda: failed in caplog.text, 60)
        await s.fake.user_joins_voice(s.cleo, voice_general)
        await until(lambda: caplog.text.count(failed) == 2, 60)
        # A round trip later (a reply in text), still two tries: one per person entering, no loop.
        s.brain.plans["Ada"].append(plan("Not in voice, sorry."))
        await s.fake.user_says(s.sam, s.general, "Ada, are you coming?")
        await s.fake.wait_for_sent(s.ada, 1)
    assert caplog.text.count(failed) == 2
    assert s.ada.voice_state_updates == []  # never asked Discord


async def test_a_channel_the_character_was_asked_into_comes_first_until_it_leaves(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    quiet = s.fake.add_channel(s.guild, "Quiet room", "voice")
    own = voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id), DISCORD_VOICE_ALONE_S="0.5")
    await s.start(own, with_brann=False)
    await joined_later(s, quiet)  # Sam has her join him in the Quiet room
    await s.fake.user_joins_voice(s.cleo, voice_general)  # someone in her own channel: she stays with Sam

    await sam_leaves_and_she_goes_to_cleo(s, quiet, voice_general)  # in her own channel


async def test_with_discord_voice_auto_join_a_character_follows_people_into_any_voice_channel(scene, caplog) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    quiet = s.fake.add_channel(s.guild, "Quiet room", "voice")
    private = s.fake.add_channel(s.guild, "Private", "voice", overwrites=[Overwrite(s.ada, deny=Permissions.CONNECT)])
    # DISCORD_VOICE_AUTO_JOIN alone switches voice on.
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        await s.start(
            {
                "DISCORD_VOICE_AUTO_JOIN": "true",
                "DISCORD_VOICE_ALONE_S": "0.5",
                "DISCORD_CA_FILE": s.fake.voice.ca_file,
            },
            with_brann=False,
        )
        await s.fake.user_joins_voice(s.cleo, private)  # a channel she may not join: passed over quietly
        await s.fake.user_joins_voice(s.sam, quiet)
        await s.fake.voice.wait_connected(s.ada, quiet, timeout=60)
        await s.fake.user_joins_voice(s.cleo, voice_general)  # elsewhere: she stays where she is

        await sam_leaves_and_she_goes_to_cleo(s, quiet, voice_general)  # where people are
    assert "could not join" not in caplog.text


async def test_with_discord_voice_alone_s_zero_a_character_stays_in_an_empty_channel(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await joined(s, voice_general, DISCORD_VOICE_ALONE_S="0")
    await s.fake.user_leaves_voice(s.sam, s.guild)
    await asyncio.sleep(1.0)
    assert s.fake.voice.is_connected(s.ada, voice_general)
    assert s.fake.voice_state(s.ada, s.guild).channel is voice_general


async def test_moved_by_an_admin_the_character_follows_and_hears_in_the_new_channel(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    quiet = s.fake.add_channel(s.guild, "Quiet room", "voice")
    session = await joined(s, voice_general)
    rt = s.runtime("Ada")
    events: list[tuple[str, str]] = []

    async def started(event: VoiceStarted) -> None:
        events.append(("started", event.channel_name))

    async def ended(event: VoiceEnded) -> None:
        events.append(("ended", event.channel_name))

    rt.on(VoiceStarted, started)
    rt.on(VoiceEnded, ended)

    await s.fake.user_joins_voice(s.sam, quiet)
    await s.fake.move_bot_voice(s.ada, quiet)
    await s.fake.voice.wait_connected(s.ada, quiet, timeout=60)
    await until(lambda: session.channel.id == quiet.id)
    assert session.room_id == discord_id(rt.agent_id, quiet.id)
    assert events == [("ended", "General"), ("started", "Quiet room")]
    assert rt.get_service("discord").voice.sessions[s.guild.id] is session  # the same session, moved

    # What Sam says in the new channel is heard there, and answered aloud.
    s.brain.plans["Ada"].append(plan("Quieter here."))
    await ask_aloud(s, s.sam, "Ada, is this better?")
    await until_stored(s, quiet, "Ada, is this better?")
    await until_stored(s, quiet, "Quieter here.")
    assert "Ada, is this better?" not in await stored_texts(s, voice_general)


async def test_disconnected_by_someone_else_the_voice_session_ends(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await joined(s, voice_general)
    voice = s.runtime("Ada").get_service("discord").voice
    await s.fake.user_leaves_voice(s.ada, s.guild)  # an admin's "Disconnect"
    await until(lambda: s.guild.id not in voice.sessions)


async def test_speech_alone_with_the_character_is_answered_without_asking_the_model_whether_to(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await joined(s, voice_general)
    # Not named: alone with Sam, Ada answers (the small model, which would say IGNORE, is not asked).
    s.brain.plans["Ada"].append(plan("We sail at dawn."))
    await ask_aloud(s, s.sam, "so what is the plan?")
    await until_stored(s, voice_general, "We sail at dawn.")
    assert not any("Decide what Ada does" in p for p in s.brain.prompts)

    # With Cleo there too, the same unnamed question is the small model's to decide: IGNORE.
    await s.fake.user_joins_voice(s.cleo, voice_general)
    await ask_aloud(s, s.sam, "and what is for dinner?")
    await until(lambda: any("Decide what Ada does" in p and "what is for dinner" in p for p in s.brain.prompts))
    await asyncio.sleep(0.3)
    assert not any("Write the next turn of Ada" in p and "what is for dinner" in p for p in s.brain.prompts)


async def test_the_providers_say_where_the_character_is_and_who_is_with_it_in_voice(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start(voice_settings(s), with_brann=False)
    await s.fake.user_says(s.sam, s.general, "Ada, are you in voice?")
    await s.fake.wait_for_sent(s.ada, 1)
    prompt = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "Ada is in the channel #general on the Discord server Writers." in prompt
    assert "Ada is not in a voice channel in this server." in prompt

    await joined_later(s, voice_general)
    await s.fake.user_joins_voice(s.cleo, voice_general)
    s.brain.plans["Ada"].append(plan("Yes, with you both."))
    await ask_aloud(s, s.sam, "Ada, who is here?")
    await until_stored(s, voice_general, "Yes, with you both.")
    prompt = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "Ada is in the voice channel General, with Sam and cleo." in prompt
    assert "Ada is talking aloud in the voice channel General on the Discord server Writers." in prompt

    # Alone again (Sam and Cleo gone), asked in text: she says so.
    await s.fake.user_leaves_voice(s.sam, s.guild)
    await s.fake.user_leaves_voice(s.cleo, s.guild)
    await s.fake.user_says(s.sam, s.general, "Ada, anyone with you?")
    await until(lambda: len([p for p in s.brain.prompts if "anyone with you" in p and "Write the next" in p]) == 1)
    prompt = [p for p in s.brain.prompts if "Write the next turn of Ada" in p][-1]
    assert "Ada is in the voice channel General, alone." in prompt


async def test_removed_from_a_server_the_character_leaves_its_world_and_voice_and_comes_back_when_invited(
    scene,
) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await joined(s, voice_general)
    rt = s.runtime("Ada")
    voice = rt.get_service("discord").voice
    left: list[WorldLeft] = []
    joined_again: list[WorldJoined] = []

    async def on_left(event: WorldLeft) -> None:
        left.append(event)

    async def on_joined(event: WorldJoined) -> None:
        joined_again.append(event)

    rt.on(WorldLeft, on_left)
    rt.on(WorldJoined, on_joined)

    await s.fake.member_leaves(s.guild, s.ada)  # kicked: GUILD_DELETE
    await until(lambda: left)
    assert (left[0].world_id, left[0].status, left[0].source) == (
        discord_id(rt.agent_id, s.guild.id),
        "removed",
        "discord",
    )
    assert left[0].world is not None and left[0].world.name == "Writers" and s.guild.id not in voice.sessions
    room = await rt.store.get_room(discord_id(rt.agent_id, s.general.id))
    assert room is not None and room.metadata.left_as == "removed"

    await s.fake.member_joins(s.guild, s.ada)  # invited back: GUILD_CREATE
    await until(lambda: joined_again)
    assert joined_again[0].world.name == "Writers"
    room = await rt.store.get_room(discord_id(rt.agent_id, s.general.id))
    assert room is not None and room.metadata.left_at is None
