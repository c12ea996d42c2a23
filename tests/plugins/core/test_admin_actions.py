"""UPDATE_ROLE and UPDATE_SETTINGS: owners and admins can, everyone else cannot."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kernel.content import Content
from bot.kernel.record_metadata import Setting, WorldMetadata
from bot.kernel.types import ChannelType, Entity, Role, World
from plugins.core.actions.update_role import parse_role, refusal
from plugins.core.actions.update_settings import apply_updates

from .harness import HUMAN, Harness, plan

CLEO = "00000000-0000-0000-0000-0000000000c1"  # a regular member
DEE = "00000000-0000-0000-0000-0000000000d1"  # an admin


async def server(h: Harness, roles: dict[str, str], settings: dict[str, Any] | None = None) -> None:
    """Give the harness's guild an owner (Sam), these roles, and optionally settings; add Cleo and Dee."""
    rt = h.rt
    await rt.store.create_entities([Entity(CLEO, rt.agent_id, names=["Cleo"]), Entity(DEE, rt.agent_id, names=["Dee"])])
    await rt.store.add_participants([CLEO, DEE], h.room)
    world = await rt.store.get_world(h.world)
    assert world is not None
    world.metadata = WorldMetadata.from_json(
        {"ownership": {"ownerId": HUMAN}, "roles": roles, **({"settings": settings} if settings else {})}
    )
    await rt.store.update_world(world)


async def world_of(h: Harness) -> World:
    world = await h.rt.store.get_world(h.world)
    assert world is not None
    return world


def assignments(*pairs: tuple[str, str]) -> str:
    items = "".join(f"<assignment><entity>{e}</entity><role>{r}</role></assignment>" for e, r in pairs)
    return f"<response><assignments>{items}</assignments></response>"


async def offered(h: Harness, entity: str, room: str | None = None) -> list[str]:
    from bot.kernel.types import Memory

    message = Memory(
        id=None, entity_id=entity, room_id=room or h.room, content=Content(text="hi Ada", source="discord")
    )
    state = await h.rt.compose_state(message, ["ACTIONS"], only_include=True)
    return [a.name for a in state.providers["ACTIONS"].data["actionsData"]]


# -- UPDATE_ROLE -----------------------------------------------------------------------------


async def test_owner_makes_a_member_an_admin(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER"})
    h.large.append(plan("Sure.", "REPLY,UPDATE_ROLE"))
    h.small.append(assignments((CLEO, "admin")))
    outcome = await h.say("Ada, make Cleo an admin")
    assert outcome.actions == ("REPLY", "UPDATE_ROLE")
    assert (await world_of(h)).metadata.to_json()["roles"][CLEO] == "ADMIN"
    assert [s["text"] for s in h.sent] == ["Sure.", "Cleo is now an admin."]
    assert h.sent[1]["actions"] == ["UPDATE_ROLE"]


async def test_a_regular_member_cannot_change_roles_by_asking(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER"})
    assert "UPDATE_ROLE" in await offered(h, HUMAN)
    assert "UPDATE_ROLE" not in await offered(h, CLEO)  # never offered to a member …
    h.large.append(plan("Done!", "REPLY,UPDATE_ROLE"))  # … and refused if the model names it anyway
    await h.say("Ada, make me an owner", entity=CLEO)
    assert (await world_of(h)).metadata.roles == {HUMAN: "OWNER"}
    assert h.sent[-1]["text"] == "Only the server's owner or an admin can change roles."
    assert h.small_calls == 0  # refused before any extraction call


async def test_an_admin_promotes_members_but_not_owners_or_other_admins(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER", DEE: "ADMIN"})
    h.large.append(plan("", "UPDATE_ROLE"))
    h.small.append(assignments(("Cleo", "OWNER"), (HUMAN, "NONE"), ("cleo", "admin"), (DEE, "OWNER")))
    await h.say("Ada, make Cleo owner, demote Sam, then make Cleo admin, and me owner", entity=DEE)
    roles = (await world_of(h)).metadata.to_json()["roles"]
    assert roles == {HUMAN: "OWNER", DEE: "ADMIN", CLEO: "ADMIN"}
    assert h.sent[-1]["text"].splitlines() == [
        "I can't make Cleo an owner: only an owner can make someone an owner.",
        "I can't make Sam a member: the server's owner always stays an owner.",
        "Cleo is now an admin.",
        "I can't make Dee an owner: nobody can change their own role.",
    ]


async def test_owner_demotes_an_admin_and_unknown_people_and_roles_are_explained(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER", DEE: "ADMIN"})
    h.large.append(plan("", "UPDATE_ROLE"))
    h.small.append(assignments(("Dee", "member"), ("Zed", "ADMIN"), ("Cleo", "overlord")))
    outcome = await h.say("Ada: Dee is a member now, Zed admin, Cleo overlord")
    assert outcome.status == "acted"
    assert (await world_of(h)).metadata.to_json()["roles"][DEE] == "NONE"
    assert h.sent[-1]["text"].splitlines() == [
        "Dee is now a member.",
        "I don't know who Zed is in this channel.",
        '"overlord" is not a role; use owner, admin or member.',
    ]


async def test_role_extraction_that_finds_nothing_says_how_to_ask(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER"})
    h.large.append(plan("", "UPDATE_ROLE"))
    h.small.append("no idea")
    await h.say("Ada, do the role thing")
    assert "Name the person and the role" in h.sent[-1]["text"]
    assert (await world_of(h)).metadata.roles == {HUMAN: "OWNER"}


async def test_roles_are_not_offered_in_a_dm(harness) -> None:
    h = await harness(ChannelType.DM)
    await server(h, {HUMAN: "OWNER"})
    assert "UPDATE_ROLE" not in await offered(h, HUMAN)


@pytest.mark.parametrize(
    ("requester", "target_current", "new", "allowed"),
    [
        (Role.OWNER, Role.ADMIN, Role.NONE, True),
        (Role.OWNER, Role.NONE, Role.OWNER, True),
        (Role.ADMIN, Role.NONE, Role.ADMIN, True),
        (Role.ADMIN, Role.NONE, Role.OWNER, False),
        (Role.ADMIN, Role.ADMIN, Role.NONE, False),
        (Role.ADMIN, Role.OWNER, Role.NONE, False),
        (Role.NONE, Role.NONE, Role.ADMIN, False),
    ],
)
def test_role_change_rules(requester: Role, target_current: Role, new: Role, allowed: bool) -> None:
    world = World("w", "a", metadata=WorldMetadata.from_json({"ownership": {"ownerId": "founder"}}))
    assert (refusal(requester, "me", "them", target_current, new, world) is None) is allowed
    assert refusal(Role.OWNER, "me", "me", Role.OWNER, Role.NONE, world) == "nobody can change their own role"
    assert (
        refusal(Role.OWNER, "me", "founder", Role.OWNER, Role.ADMIN, world)
        == "the server's owner always stays an owner"
    )


def test_role_words() -> None:
    assert [parse_role(w) for w in ("Owner", "administrator", " member ", "none", "god", None)] == [
        Role.OWNER,
        Role.ADMIN,
        Role.NONE,
        Role.NONE,
        None,
        None,
    ]


# -- UPDATE_SETTINGS -------------------------------------------------------------------------

SETTINGS = {
    "WELCOME_CHANNEL": {"name": "Welcome channel", "description": "where newcomers are greeted", "required": True},
    "BOT_TOKEN": {"name": "Bot token", "description": "token of the helper bot", "required": True, "secret": True},
    "GREETING": {"name": "Greeting", "description": "what to say", "dependsOn": ["WELCOME_CHANNEL"]},
}


def updates(*pairs: tuple[str, str]) -> str:
    items = "".join(f"<update><key>{k}</key><value>{v}</value></update>" for k, v in pairs)
    return f"<response><updates>{items}</updates></response>"


async def test_owner_configures_the_server_in_a_dm_and_secrets_are_never_repeated(harness) -> None:
    h = await harness(ChannelType.DM)
    await server(h, {HUMAN: "OWNER"}, SETTINGS)
    assert "UPDATE_SETTINGS" in await offered(h, HUMAN)
    h.large.append(plan("", "UPDATE_SETTINGS"))
    h.small.append(updates(("WELCOME_CHANNEL", "#lobby"), ("BOT_TOKEN", "tok-123456-secret")))
    await h.say("welcome channel is #lobby and the token is tok-123456-secret")
    stored = (await world_of(h)).metadata.to_json()["settings"]
    assert stored["WELCOME_CHANNEL"]["value"] == "#lobby" and stored["BOT_TOKEN"]["value"] == "tok-123456-secret"
    reply = h.sent[-1]["text"]
    assert "tok-123456" not in reply
    assert reply.splitlines() == [
        "Welcome channel is now #lobby.",
        "Bot token is now ****************.",
        "Every required setting of Guild has a value now.",
    ]
    # The next request shows the model which settings are set, never the secret value.
    h.large.append(plan("", "UPDATE_SETTINGS"))
    h.small.append(updates(("GREETING", "hi")))
    h.prompts.clear()
    await h.say("greeting: hi")
    extraction = h.prompts[-1]
    assert "BOT_TOKEN (Bot token; required; now: ****************)" in extraction
    assert "WELCOME_CHANNEL (Welcome channel; required; now: #lobby)" in extraction


async def test_settings_respect_dependencies_and_unknown_keys(harness) -> None:
    h = await harness(ChannelType.DM)
    await server(h, {HUMAN: "OWNER"}, SETTINGS)
    h.large.append(plan("", "UPDATE_SETTINGS"))
    h.small.append(updates(("GREETING", "hello!"), ("COLOUR", "blue"), ("_internal", "x")))
    outcome = await h.say("greeting hello!, colour blue")
    assert outcome.status == "acted"
    assert h.sent[-1]["text"].splitlines() == [
        "Greeting needs WELCOME_CHANNEL set first.",
        "There is no setting called COLOUR.",
        "There is no setting called _internal.",
    ]
    assert "value" not in (await world_of(h)).metadata.to_json()["settings"]["GREETING"]
    # In one request, a dependency set first counts.
    h.large.append(plan("", "UPDATE_SETTINGS"))
    h.small.append(updates(("WELCOME_CHANNEL", "#hi"), ("GREETING", "hello!")))
    await h.say("channel #hi and greeting hello!")
    assert h.sent[-1]["text"].splitlines()[:2] == ["Welcome channel is now #hi.", "Greeting is now hello!."]
    assert h.sent[-1]["text"].splitlines()[2] == "Still needed: Bot token."


async def test_a_regular_member_cannot_change_settings(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER", DEE: "ADMIN"}, SETTINGS)
    assert "UPDATE_SETTINGS" not in await offered(h, CLEO)
    assert "UPDATE_SETTINGS" in await offered(h, DEE)
    h.large.append(plan("Okay!", "REPLY,UPDATE_SETTINGS"))
    await h.say("Ada, set the welcome channel to #spam", entity=CLEO)
    assert h.sent[-1]["text"] == "Only a server's owner or an admin can change its settings."
    assert "value" not in (await world_of(h)).metadata.to_json()["settings"]["WELCOME_CHANNEL"]
    assert h.small_calls == 0


async def test_an_admin_configures_from_a_server_channel(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER", DEE: "ADMIN"}, SETTINGS)
    h.large.append(plan("", "UPDATE_SETTINGS"))
    h.small.append(updates(("WELCOME_CHANNEL", "#door")))
    await h.say("Ada, welcome channel is #door", entity=DEE)
    assert (await world_of(h)).metadata.to_json()["settings"]["WELCOME_CHANNEL"]["value"] == "#door"


def test_apply_updates_masks_credential_named_and_character_secret_values() -> None:
    settings = {"API_KEY": Setting(name="API key"), "NOTE": Setting(name="Note"), "LIMIT": Setting(value=3)}
    updated, lines = apply_updates(
        settings, [("API_KEY", "k"), ("NOTE", "uses sk-abcdef"), ("LIMIT", " 5 "), ("NOTE", "")], secrets=["sk-abcdef"]
    )
    assert updated == ["API_KEY", "NOTE", "LIMIT"]
    assert lines == [
        "API key is now ****************.",
        "Note is now ****************.",
        "LIMIT is now 5.",
        "I need a value for Note.",
    ]
    assert settings["LIMIT"] == Setting(value="5")


async def test_a_copied_example_assignment_changes_nobody(harness) -> None:
    h = await harness()
    await server(h, {HUMAN: "OWNER"})
    h.large.append(plan("", "UPDATE_ROLE"))
    h.small.append(assignments(("id of the person", "ADMIN")))  # the template's example, copied
    await h.say("Ada, make Cleo an admin")
    assert (await world_of(h)).metadata.roles == {HUMAN: "OWNER"}
    assert h.sent[-1]["text"] == "I don't know who that is in this channel."  # the stand-in is not repeated
