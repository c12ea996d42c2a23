import pytest

from bot.kernel.ids import is_uuid, string_to_uuid, unique_uuid

# Vectors published for elizaOS's ids (its character and data documents), computed with
# Node's encodeURIComponent + SHA-1 as elizaOS does.
VECTORS = {
    "Eliza": "b850bc30-45f8-0041-a00a-83df46d8555d",
    "hello": "aaf4c61d-dcc5-08a2-9abe-de0f3b482cd9",
    "test": "a94a8fe5-ccb1-0ba6-9c4c-0873d391e987",
    "hello world": "f0355dd5-2823-054c-ae66-a0b12842c215",
    "héllo wörld": "93824064-00f3-05ac-9053-09726326c166",
    "Ünïcode ✓": "aa066f5d-539a-0d7d-92d0-46d1d75aa598",
    "Shakespeare": "48755ada-fe81-0d28-b5a1-9ada3f298552",
    "hemingway": "4f3e6233-f0a7-0579-874d-c497b0a04f2c",
    "Hemingway": "6618a38b-e08e-0bc7-81ce-0a7ad73b99ab",
    "Tech Helper": "a434324a-2122-0e2b-9553-a0070785fa68",
    "123456789:00000000-0000-0000-0000-000000000001": "3ee887de-acc3-05bf-9342-ae741110b90b",
}


@pytest.mark.parametrize(("text", "expected"), VECTORS.items())
def test_string_to_uuid_matches_elizaos(text: str, expected: str) -> None:
    assert string_to_uuid(text) == expected


def test_string_to_uuid_passes_uuids_through() -> None:
    uuid = "00000000-0000-0000-0000-000000000001"
    assert string_to_uuid(uuid) == uuid


def test_string_to_uuid_accepts_numbers_like_javascript() -> None:
    assert string_to_uuid(42) == string_to_uuid("42")


@pytest.mark.parametrize("bad", [None, 1.5, True, b"x"])
def test_string_to_uuid_rejects_other_types(bad: object) -> None:
    with pytest.raises(TypeError, match="needs a str or int"):
        string_to_uuid(bad)  # type: ignore[arg-type]


def test_string_to_uuid_has_version_nibble_zero_and_rfc_variant() -> None:
    uuid = string_to_uuid("anything at all")
    assert uuid[14] == "0"
    assert uuid[19] in "89ab"


def test_unique_uuid_matches_create_unique_uuid() -> None:
    agent = string_to_uuid("Eliza")
    assert unique_uuid(agent, "123456789012345678") == "270b9075-fe57-01b4-838a-eadec6854efb"


def test_unique_uuid_is_agent_scoped() -> None:
    a, b = string_to_uuid("A"), string_to_uuid("B")
    assert unique_uuid(a, "discord:1") != unique_uuid(b, "discord:1")
    assert unique_uuid(a, "discord:1") != unique_uuid(a, "telegram:1")


def test_unique_uuid_maps_the_agent_to_itself() -> None:
    agent = string_to_uuid("Eliza")
    assert unique_uuid(agent, agent) == agent


def test_is_uuid() -> None:
    assert is_uuid("B850BC30-45F8-0041-A00A-83DF46D8555D")
    assert not is_uuid("agent_123456")
