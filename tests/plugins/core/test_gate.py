"""The deterministic gate: every branch."""

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import ChannelType, Memory, RoomState
from plugins.core._gate import Decision, Rule, addressed_by_name, bot_run_length, decide

AGENT = "00000000-0000-0000-0000-00000000000a"
HUMAN = "00000000-0000-0000-0000-00000000000b"
OTHER_BOT = "00000000-0000-0000-0000-00000000000c"
NAMES = ("Captain Brann", "captain_brann")


def msg(
    text: str = "hello there",
    entity: str = HUMAN,
    *,
    source: str = "discord",
    one_to_one: bool | None = None,
    is_mention: bool | None = None,
    is_reply: bool | None = None,
    author_is_bot: bool | None = None,
) -> Memory:
    metadata = MemoryMetadata(
        one_to_one=one_to_one, is_mention=is_mention, is_reply=is_reply, author_is_bot=author_is_bot
    )
    return Memory(entity_id=entity, room_id="r", content=Content(text=text, source=source), metadata=metadata)


def verdict(message: Memory, room_type=ChannelType.GROUP, state=None, recent=(), **kw):
    return decide(message, agent_id=AGENT, names=NAMES, room_type=room_type, room_state=state, recent=recent, **kw)


def test_own_messages_are_never_answered() -> None:
    assert verdict(msg(entity=AGENT), room_type=ChannelType.DM).decision is Decision.IGNORE


@pytest.mark.parametrize("room_type", [ChannelType.DM, ChannelType.VOICE_DM, ChannelType.SELF, ChannelType.API, "dm"])
def test_direct_rooms_always_respond(room_type) -> None:
    assert verdict(msg(), room_type=room_type).decision is Decision.RESPOND


def test_speech_from_the_only_other_member_of_a_voice_channel_is_addressed_to_the_agent() -> None:
    alone = verdict(msg("so what now?", one_to_one=True), room_type=ChannelType.VOICE_GROUP)
    assert (alone.decision, alone.rule, alone.addressed) == (Decision.RESPOND, Rule.ONE_TO_ONE, True)
    company = verdict(msg("so what now?", one_to_one=False), room_type=ChannelType.VOICE_GROUP)
    assert company.decision is Decision.ASK_MODEL
    # Like a DM, a muted voice room stays muted.
    muted = verdict(msg("so what now?", one_to_one=True), room_type=ChannelType.VOICE_GROUP, state=RoomState.MUTED)
    assert muted.decision is Decision.IGNORE


def test_console_source_always_responds() -> None:
    assert verdict(msg(source="console")).decision is Decision.RESPOND


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (msg(is_mention=True), "mentioned"),
        (msg(is_reply=True), "reply to the agent"),
        (msg("Captain Brann, what's a knot?"), "named"),
        (msg("hey CAPTAIN_BRANN"), "named"),
    ],
)
def test_addressed_messages_respond(message, reason) -> None:
    result = verdict(message)
    assert (result.decision, result.reason, result.addressed) == (Decision.RESPOND, reason, True)


def test_names_match_whole_words_only() -> None:
    assert not addressed_by_name("the captain brannigan show", NAMES)
    assert addressed_by_name("ok, captain brann!", NAMES)


def test_followed_room_responds_without_the_model() -> None:
    assert verdict(msg(), state=RoomState.FOLLOWED).decision is Decision.RESPOND


def test_undecided_goes_to_the_small_model() -> None:
    assert verdict(msg()).decision is Decision.ASK_MODEL


def test_muted_room_stays_silent_even_in_dms_unless_addressed() -> None:
    assert verdict(msg(), state=RoomState.MUTED).decision is Decision.IGNORE
    assert verdict(msg(), state=RoomState.MUTED, room_type=ChannelType.DM).decision is Decision.IGNORE
    for addressed in (msg(is_mention=True), msg(is_reply=True), msg("Captain Brann, unmute")):
        result = verdict(addressed, state=RoomState.MUTED)
        assert result.decision is Decision.RESPOND and result.addressed


def test_a_room_it_was_asked_to_stay_out_of_is_silent_without_a_model_until_it_is_addressed() -> None:
    stopped = verdict(msg(), state=RoomState.STOPPED)
    assert stopped.decision is Decision.IGNORE and stopped.rule is Rule.STOPPED
    for addressed in (msg(is_mention=True), msg(is_reply=True), msg("Captain Brann, come back")):
        result = verdict(addressed, state=RoomState.STOPPED)
        assert result.decision is Decision.RESPOND and result.addressed


def test_loop_guard_bounds_bot_conversations_and_resets_on_a_human() -> None:
    bot = msg("Captain Brann, look up!", entity=OTHER_BOT, author_is_bot=True)
    mine = msg("No.", entity=AGENT)
    human = msg("carry on")
    assert verdict(bot, recent=[bot, human]).decision is Decision.RESPOND
    assert verdict(bot, recent=[bot, mine, bot, human], max_bot_turns=3).decision is Decision.RESPOND
    blocked = verdict(bot, recent=[bot, mine, bot, mine, human], max_bot_turns=3)
    assert blocked.decision is Decision.IGNORE and blocked.rule is Rule.LOOP_GUARD
    assert blocked.reason == "loop guard: 4 bot messages in a row"
    assert bot_run_length([human, bot, mine], AGENT) == 0


def test_humans_are_never_loop_guarded() -> None:
    bot = msg("x", entity=OTHER_BOT, author_is_bot=True)
    assert verdict(msg("Captain Brann?"), recent=[msg(), bot, bot, bot, bot]).decision is Decision.RESPOND


# -- SHOULD_RESPOND_BYPASS_TYPES / _SOURCES ------------------------------------------------------


def test_a_bypassed_room_type_or_source_responds_by_its_own_rule() -> None:
    by_type = verdict(msg(), bypass_types={ChannelType.GROUP})
    assert (by_type.decision, by_type.rule, by_type.addressed) == (Decision.RESPOND, Rule.BYPASS_TYPE, False)
    assert by_type.reason == "GROUP room (SHOULD_RESPOND_BYPASS_TYPES)"
    by_source = verdict(msg(source="discord"), bypass_sources={"discord"})
    assert (by_source.decision, by_source.rule) == (Decision.RESPOND, Rule.BYPASS_SOURCE)
    assert verdict(msg("Captain Brann?"), bypass_types={ChannelType.GROUP}).addressed  # still known as addressed
    # Only what is listed: another room type, another platform, still asks the model.
    assert verdict(msg(), room_type=ChannelType.THREAD, bypass_types={ChannelType.GROUP}).rule is Rule.UNDECIDED
    assert verdict(msg(source="telegram"), bypass_sources={"discord"}).rule is Rule.UNDECIDED


@pytest.mark.parametrize(
    ("message", "state", "rule"),
    [
        (msg(entity=AGENT), None, Rule.OWN),
        (msg(), RoomState.MUTED, Rule.MUTED),
        (msg(), RoomState.STOPPED, Rule.STOPPED),
        (msg("x", entity=OTHER_BOT, author_is_bot=True), None, Rule.LOOP_GUARD),
    ],
)
def test_a_bypass_never_opens_a_muted_or_stopped_room_nor_the_loop_guard(message, state, rule) -> None:
    bot = msg("x", entity=OTHER_BOT, author_is_bot=True)
    result = verdict(
        message, state=state, recent=[bot] * 5, bypass_types={ChannelType.GROUP}, bypass_sources={"discord"}
    )
    assert (result.decision, result.rule) == (Decision.IGNORE, rule)
    # A muted room still answers a direct address, by the muted rule, not the bypass.
    named = verdict(msg("Captain Brann, unmute"), state=RoomState.MUTED, bypass_types={ChannelType.GROUP})
    assert (named.decision, named.rule) == (Decision.RESPOND, Rule.MUTED_BUT_ADDRESSED)
