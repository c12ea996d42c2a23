"""Reading model output: JSON in fences or prose, image descriptions, audio file names."""

from __future__ import annotations

import base64
import json
from array import array

import pytest

from plugins.openai._parse import (
    ChatReply,
    Usage,
    audio_filename,
    parse_chat_completion,
    parse_image_description,
    parse_json_object,
    parse_vectors,
    per_token_vectors,
)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        '```JSON {"a": 1}```',
        'Here you go:\n```json\n{"a": 1}\n```\nAnything else?',
        'Sure! {"a": 1} Hope that helps.',
        '<think>they want {braces}</think>\n{"a": 1}',
    ],
)
def test_parse_json_object_tolerates_fences_and_prose(text: str) -> None:
    assert parse_json_object(text) == {"a": 1}


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2]", '{"a": 1', "```json\n[1]\n```"])
def test_parse_json_object_returns_none_without_an_object(text: str) -> None:
    assert parse_json_object(text) is None


@pytest.mark.parametrize(
    ("text", "title", "description"),
    [
        ('{"title": "A cat", "description": "A grey cat on a mat."}', "A cat", "A grey cat on a mat."),
        ('```json\n{"title": "A cat", "description": "Grey."}\n```', "A cat", "Grey."),
        ("Title: A cat\nDescription: A grey cat on a mat.", "A cat", "A grey cat on a mat."),
        ("**Title:** A cat\n\nA grey cat on a mat.", "A cat", "A grey cat on a mat."),
        ("# A cat\nA grey cat.\nIt sleeps.", "A cat", "A grey cat.\nIt sleeps."),
        (
            "A grey cat sleeps on a mat. The sun is out.",
            "A grey cat sleeps on a mat.",
            "A grey cat sleeps on a mat. The sun is out.",
        ),
        ('{"description": "Only a description."}', "Only a description.", "Only a description."),
    ],
)
def test_parse_image_description_reads_json_or_prose(text: str, title: str, description: str) -> None:
    assert parse_image_description(text) == {"title": title, "description": description}


def test_parse_image_description_of_nothing_is_empty() -> None:
    assert parse_image_description("  ") == {"title": "", "description": ""}


@pytest.mark.parametrize(
    ("audio", "name"),
    [
        (b"OggS\x00\x02", "audio.ogg"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio.wav"),
        (b"fLaC\x00", "audio.flac"),
        (b"\x1a\x45\xdf\xa3\x01", "audio.webm"),
        (b"\x00\x00\x00\x20ftypM4A ", "audio.m4a"),
        (b"ID3\x04\x00", "audio.mp3"),
        (b"", "audio.mp3"),
    ],
)
def test_audio_filename_matches_the_format(audio: bytes, name: str) -> None:
    assert audio_filename(audio) == name


def test_per_token_vectors_are_told_from_one_vector_per_text() -> None:
    per_token = {"data": [{"index": 0, "embedding": [[0.1, 0.2], [0.3, 0.4]]}]}
    assert per_token_vectors(json.dumps(per_token).encode())
    assert parse_vectors(json.dumps(per_token).encode()) is None
    bodies: list[object] = [{"data": [{"index": 0, "embedding": [0.1, 0.2]}]}, {"data": []}, {"error": "x"}]
    for body in bodies:
        assert not per_token_vectors(json.dumps(body).encode())
    assert not per_token_vectors(b"not json")


def test_vectors_are_read_in_the_order_of_the_inputs_whatever_the_order_sent() -> None:
    body = json.dumps({"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [0.25, -1.0]}]})
    assert parse_vectors(body.encode()) == [[0.25, -1.0], [0.5, 1.0]]


def test_a_vector_sent_as_base64_floats_is_read_too() -> None:
    packed = base64.b64encode(array("f", [0.5, -2.0]).tobytes()).decode()
    assert parse_vectors(json.dumps({"data": [{"index": 0, "embedding": packed}]}).encode()) == [[0.5, -2.0]]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"data": null}',
        b'{"data": [{"embedding": [1]}]}',
        b'{"data": [{"index": 0, "embedding": ["a"]}]}',
    ],
)
def test_what_is_not_a_list_of_vectors_is_none(body: bytes) -> None:
    assert parse_vectors(body) is None


def test_a_chat_completion_gives_its_first_choice_model_and_usage() -> None:
    body = {
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}},
            {"index": 1, "message": {"role": "assistant", "content": "second"}},
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    assert parse_chat_completion(json.dumps(body).encode()) == ChatReply("gpt-4o-mini", True, "hi", None, Usage(3, 1))


def test_a_chat_completion_without_choices_or_message_is_unanswered() -> None:
    assert parse_chat_completion(b'{"choices": []}') == ChatReply(None, answered=False)
    assert parse_chat_completion(b'{"choices": [{"message": null}]}') == ChatReply(None, answered=False)


def test_a_refusal_is_read() -> None:
    body = b'{"choices": [{"message": {"content": null, "refusal": "no"}}]}'
    assert parse_chat_completion(body) == ChatReply(None, True, None, "no")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{oops",
        b"null",
        b'"text"',
        b"{}",
        b'{"choices": null}',
        b'{"choices": [1]}',
        b'{"choices": [{"message": []}]}',
    ],
)
def test_what_is_not_a_chat_completion_reads_as_none(body: bytes) -> None:
    assert parse_chat_completion(body) is None
