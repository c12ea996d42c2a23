"""Every handler through the real openai client against the fake server."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.kernel.errors import ModelError, ModelRequestRejected
from bot.kernel.models import ModelType
from bot.kernel.outgoing import OutgoingFile
from bot.runtime.shared import Shared
from bot.runtime.tracing import model_call, tracing
from plugins.openai._pools import HttpPools
from tests.fakes.openai_server import Body, Fail, FakeOpenAIServer, Served, UploadedFile, make_png

from ..fake_runtime import FakeCharacter, FakeRuntime
from .conftest import KEY, OTHER_KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
HI = {"prompt": "hi"}


# -- text -------------------------------------------------------------------------------------


async def test_text_small_sends_the_characters_system_and_the_prompt(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    reply = await runtime.use(ModelType.TEXT_SMALL, {"prompt": "Hello there"})
    assert reply == "echo: Hello there"
    (request,) = server.requests_for("chat")
    assert request.json == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "You are Ada."}, {"role": "user", "content": "Hello there"}],
        "max_tokens": 4096,  # bounded even when the caller gives no bound
    }


async def test_openai_max_tokens_bounds_calls_that_give_none_and_a_cut_answer_is_read(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.openai")
    runtime = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_TOKENS": "5"})
    server.script_chat("a weak model that runs on and on to the end of its context")
    assert await runtime.use(ModelType.TEXT_SMALL, HI) == "a weak model that runs"
    assert await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi", "max_tokens": 3}) == "a weak model"
    assert await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi", "max_tokens": 2, "on_delta": lambda _: None}) == (
        "a weak"
    )
    assert [r.json["max_tokens"] for r in server.requests_for("chat")] == [5, 3, 2]
    cut = [r.getMessage() for r in caplog.records if "stopped at its bound" in r.getMessage()]
    assert cut == [
        "Ada: gpt-4o-mini stopped at its bound of 5 tokens (TEXT_SMALL); reading what it wrote",
        "Ada: gpt-4o stopped at its bound of 3 tokens (TEXT_LARGE); reading what it wrote",
        "Ada: gpt-4o stopped at its bound of 2 tokens (TEXT_LARGE); reading what it wrote",
    ]


async def test_chat_and_embeddings_are_posted_as_json_with_the_key_and_no_sdk_client(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    await runtime.use(ModelType.TEXT_SMALL, HI)
    await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})
    for request in server.requests:
        headers = {name.lower(): value for name, value in request.headers.items()}
        assert headers["content-type"] == "application/json"
        assert headers["accept"] == "application/json"
        assert headers["user-agent"].startswith("troupe")
        assert request.auth_suffix == KEY[-4:]
    assert [r.endpoint for r in server.requests] == ["chat", "embeddings"]
    assert runtime.closers[0].__self__._calls.clients == {}  # type: ignore[attr-defined]


async def test_text_large_uses_the_large_model_and_passes_options(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_chat("Fine, thanks.")
    params = {"prompt": "How are you?", "system": "Be brief.", "temperature": 0.2, "max_tokens": 50, "stop": ["\n"]}
    assert await runtime.use(ModelType.TEXT_LARGE, params) == "Fine, thanks."
    body = server.requests_for("chat")[0].json
    assert body["model"] == "gpt-4o"
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.2, 50, ["\n"])


async def test_no_system_message_when_neither_params_nor_character_has_one(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}, character=FakeCharacter(system=None)
    )
    await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
    assert server.requests_for("chat")[0].json["messages"] == [{"role": "user", "content": "hi"}]


async def test_calls_are_logged_at_debug_without_the_prompt(
    runtime: FakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.openai")
    await runtime.use(ModelType.TEXT_SMALL, {"prompt": "a very private prompt"})
    (record,) = [r for r in caplog.records if r.name == "plugins.openai"]
    assert record.levelno == logging.DEBUG
    message = record.getMessage()
    assert message.startswith("Ada: TEXT_SMALL gpt-4o-mini via openai in ")
    assert message.endswith(" ms (tokens: prompt 7, completion 5)")
    assert "private" not in caplog.text


# -- objects ----------------------------------------------------------------------------------


async def test_object_asks_for_json_and_parses_fenced_replies(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_chat('```json\n{"thought": "ok", "message": "hi"}\n```')
    result = await runtime.use(ModelType.OBJECT_LARGE, {"prompt": "Reply as JSON with thought and message."})
    assert result == {"thought": "ok", "message": "hi"}
    body = server.requests_for("chat")[0].json
    assert body["model"] == "gpt-4o"
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "You are Ada."}


async def test_object_mentions_json_when_the_prompt_does_not(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    # OpenAI refuses json_object replies unless some message mentions JSON.
    result = await runtime.use(ModelType.OBJECT_SMALL, {"prompt": "Decide."})
    assert result == {"echo": "Decide."}
    body = server.requests_for("chat")[0].json
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"][0]["content"] == "You are Ada.\n\nReply with one JSON object and nothing else."


async def test_object_that_is_not_json_is_a_model_error(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_chat("I would rather not.")
    expected = r"^Ada: gpt-4o-mini on openai did not return a JSON object for OBJECT_SMALL"
    with pytest.raises(ModelError, match=expected) as info:
        await runtime.use(ModelType.OBJECT_SMALL, {"prompt": "json please"})
    assert (info.value.provider, info.value.model_type) == ("openai", "OBJECT_SMALL")


_NOT_A_COMPLETION = r"^Ada: gpt-4o-mini on openai answered something that is not a chat completion \(TEXT_SMALL\)"


@pytest.mark.parametrize(
    "body",
    [
        Body("{not json at all"),
        Body("<html><body>Bad gateway</body></html>", content_type="text/html"),
        Body("[1, 2, 3]"),
        Body('{"id": "x", "object": "chat.completion", "model": "gpt-4o-mini"}'),  # no choices
        Body('{"choices": {"message": {"content": "hi"}}}'),  # choices not a list
        Body('{"choices": ["hi"]}'),
        Body('{"choices": [{"message": {"role": "assistant", "content": 42}}]}'),
    ],
    ids=["garbage", "html", "a-list", "no-choices", "choices-not-a-list", "choice-not-an-object", "content-a-number"],
)
async def test_a_body_that_is_not_a_chat_completion_is_a_model_error(
    runtime: FakeRuntime, server: FakeOpenAIServer, body: Body
) -> None:
    server.script_chat(body)
    with pytest.raises(ModelError, match=_NOT_A_COMPLETION) as info:
        await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
    assert (info.value.provider, info.value.model_type) == ("openai", "TEXT_SMALL")


async def test_a_completion_without_choices_is_a_model_error(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_chat(Body('{"model": "gpt-4o-mini-2024", "choices": []}'))
    with pytest.raises(ModelError, match=r"^Ada: gpt-4o-mini-2024 on openai returned no choices \(TEXT_SMALL\)$"):
        await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})


async def test_a_refusal_is_a_model_error(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    message = {"role": "assistant", "content": None, "refusal": "I cannot help with that."}
    server.script_chat(Body(json.dumps({"model": "gpt-4o-mini", "choices": [{"index": 0, "message": message}]})))
    with pytest.raises(ModelError, match=r"^Ada: gpt-4o-mini on openai refused the request \(TEXT_LARGE\)$"):
        await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi"})


async def test_null_content_without_a_refusal_is_empty_text(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}
    server.script_chat(Body(json.dumps({"model": "gpt-4o-mini", "choices": [{"index": 0, "message": message}]})))
    assert await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"}) == ""


async def test_text_is_repaired_and_extra_fields_are_ignored(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    # A lone surrogate, as JSON can carry and some servers send; unknown fields, as providers add.
    choice = {"index": 0, "message": {"role": "assistant", "content": "caf\udce9", "reasoning": "…"}, "x": 1}
    server.script_chat(Body(json.dumps({"choices": [choice], "provider": "somewhere", "usage": None})))
    reply = await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
    assert reply.startswith("caf") and reply.encode("utf-8")


async def test_an_image_description_that_is_not_a_chat_completion_is_a_model_error(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_chat(Body("{not json"))
    expected = r"^Ada: gpt-4o-mini on openai answered something that is not a chat completion \(IMAGE_DESCRIPTION\)"
    with pytest.raises(ModelError, match=expected):
        await runtime.use(ModelType.IMAGE_DESCRIPTION, {"image_url": "https://example.com/cat.png"})


# -- embeddings -------------------------------------------------------------------------------


async def test_embedding_returns_the_servers_vector_with_dimensions_for_text_embedding_3(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    first = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    again = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    other = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "goodbye"})
    assert len(first) == 1536 and first == again and first != other
    body = server.requests_for("embeddings")[0].json
    assert body == {
        "model": "text-embedding-3-small",
        "input": "hello",
        "dimensions": 1536,
        "encoding_format": "base64",
    }


async def test_embedding_of_several_texts_takes_one_request_and_keeps_their_order(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    vectors = await runtime.use(ModelType.TEXT_EMBEDDING, {"texts": ["hello", "goodbye", "hello"]})
    assert len(vectors) == 3 and all(len(v) == 1536 for v in vectors)
    assert vectors[0] == vectors[2] == await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    assert vectors[1] == await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "goodbye"})
    first = server.requests_for("embeddings")[0].json
    assert first == {
        "model": "text-embedding-3-small",
        "input": ["hello", "goodbye", "hello"],
        "dimensions": 1536,
        "encoding_format": "base64",
    }


async def test_embeddings_fall_back_to_floats_once_a_server_refuses_base64(
    server: FakeOpenAIServer, runtime: FakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "plugins.openai")
    server.base64 = "refused"
    first = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    second = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "goodbye"})
    asked = [r.json["encoding_format"] for r in server.requests_for("embeddings")]
    assert asked == ["base64", "float", "float"]  # found out once, then floats straight away
    assert len(first) == len(second) == 1536 and first != second
    assert "refused base64 embeddings; asking it for floats from now on" in caplog.text


async def test_embeddings_read_floats_from_a_server_that_ignores_base64(
    server: FakeOpenAIServer, runtime: FakeRuntime
) -> None:
    server.base64 = "ignored"
    floats = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    server.base64 = "answered"
    packed = await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello there"})
    assert len(floats) == len(packed) == 1536
    assert [r.json["encoding_format"] for r in server.requests_for("embeddings")] == ["base64", "base64"]


async def test_an_embedding_request_refused_in_both_formats_says_why(
    server: FakeOpenAIServer, runtime: FakeRuntime
) -> None:
    server.script_embeddings(Fail(400, message="model 'nope' does not exist"))
    with pytest.raises(ModelRequestRejected, match="HTTP 400: model 'nope' does not exist"):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    assert [r.json["encoding_format"] for r in server.requests_for("embeddings")] == ["base64", "float"]


async def test_embedding_of_several_texts_refuses_an_empty_one_without_a_request(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    for texts in ([], ["fine", " "]):
        with pytest.raises(ModelError, match="cannot embed empty text"):
            await runtime.use(ModelType.TEXT_EMBEDDING, {"texts": texts})
    assert server.requests == []


async def test_the_length_probe_of_a_model_told_its_length_asks_nothing(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    # text-embedding-3 returns the length it is asked for: no request at every start.
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, None)) == 1536
    assert server.requests_for("embeddings") == []


async def test_the_length_probe_of_another_model_asks_it_once(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_EMBEDDING_MODEL": "nomic-embed-text"}
    )
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, None)) == server.embedding_dimensions
    (request,) = server.requests_for("embeddings")
    assert "dimensions" not in request.json and request.json["input"]


async def test_a_model_of_any_length_is_learned_from_its_first_answer(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    server.embedding_dimensions = 576
    runtime = await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_EMBEDDING_MODEL": "smollm2"})
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, None)) == 576
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})) == 576
    server.embedding_dimensions = 640  # another model behind the same name
    with pytest.raises(
        ModelError, match=r"returned 640 dimensions where it returned 576 before; restart the character"
    ):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hello again"})


async def test_a_server_answering_a_vector_per_token_is_named_for_it(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    """llama.cpp's server without pooling: a list of vectors per input."""
    per_token = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [[0.1, 0.2], [0.3, 0.4]]}]}
    server.script_embeddings(Body(json.dumps(per_token)))
    runtime = await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_EMBEDDING_MODEL": "smollm2"})
    expected = (
        r"answered one vector per token, not one per text: the server does not pool them \(start llama.cpp's "
        r"server with --pooling mean, or serve an embedding model\), or set OPENAI_EMBEDDING_MODEL to none"
    )
    with pytest.raises(ModelError, match=expected):
        await runtime.use(ModelType.TEXT_EMBEDDING, None)


async def test_embedding_sends_no_dimensions_to_other_models(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    server.embedding_dimensions = 768
    runtime = await make_runtime({"OPENAI_BASE_URL": server.url, "OPENAI_EMBEDDING_MODEL": "nomic-embed-text"})
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})) == 768
    assert "dimensions" not in server.requests_for("embeddings")[0].json
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, None)) == 768
    assert "dimensions" not in server.requests_for("embeddings")[1].json


async def test_embedding_of_the_wrong_length_names_both_lengths(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.url,
            "OPENAI_EMBEDDING_MODEL": "text-embedding-ada-002",
            "OPENAI_EMBEDDING_DIMENSIONS": "768",
        }
    )
    with pytest.raises(ModelError, match=r"returned 1536 dimensions, but OPENAI_EMBEDDING_DIMENSIONS is 768"):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})


async def test_embedding_of_empty_text_is_refused_without_a_request(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    with pytest.raises(ModelError, match="cannot embed empty text"):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "  "})
    assert server.requests == []


async def test_embeddings_can_use_their_own_server_and_key(make_runtime: MakeRuntime) -> None:
    async with FakeOpenAIServer() as chat_server, FakeOpenAIServer() as embedding_server:
        runtime = await make_runtime(
            {
                "OPENAI_API_KEY": KEY,
                "OPENAI_BASE_URL": chat_server.url,
                "OPENAI_EMBEDDING_URL": embedding_server.url,
                "OPENAI_EMBEDDING_API_KEY": OTHER_KEY,
            }
        )
        await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})
        assert [(r.endpoint, r.auth_suffix) for r in chat_server.requests] == [("chat", "0001")]
        assert [(r.endpoint, r.auth_suffix) for r in embedding_server.requests] == [("embeddings", "0002")]
        await runtime.close()


# -- audio and images -------------------------------------------------------------------------


async def test_transcription_uploads_the_audio_with_a_fitting_name(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    audio = b"OggS" + bytes(range(60))
    text = await runtime.use(ModelType.TRANSCRIPTION, {"audio": audio})
    assert text == "transcript of audio.ogg (64 bytes)"
    fields = server.requests_for("transcriptions")[0].fields
    assert fields is not None
    assert fields["model"] == "whisper-1"
    assert fields["file"] == UploadedFile("audio.ogg", fields["file"].content_type, audio)
    assert "language" not in fields


async def test_transcription_passes_filename_and_language(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_transcription(" Bonjour tout le monde. ")
    params = {"audio": b"RIFF....WAVE", "filename": "voice.wav", "language": "fr"}
    text = await runtime.use(ModelType.TRANSCRIPTION, params)
    assert text == "Bonjour tout le monde."
    fields = server.requests_for("transcriptions")[0].fields
    assert fields is not None
    assert fields["file"].filename == "voice.wav" and fields["language"] == "fr"


async def test_image_description_sends_the_image_and_reads_json(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_chat(json.dumps({"title": "A red bicycle", "description": "A red bicycle leans on a wall."}))
    url = "https://example.com/bike.png"
    result = await runtime.use(ModelType.IMAGE_DESCRIPTION, {"image_url": url})
    assert result == {"title": "A red bicycle", "description": "A red bicycle leans on a wall."}
    body = server.requests_for("chat")[0].json
    assert body["model"] == "gpt-4o-mini" and body["max_tokens"] == 8192
    (message,) = body["messages"]
    text_part, image_part = message["content"]
    assert text_part["text"].startswith("Describe this image.\n\n")
    assert '"title"' in text_part["text"] and '"description"' in text_part["text"]
    assert image_part == {"type": "image_url", "image_url": {"url": url}}


async def test_image_description_tolerates_prose_and_takes_a_custom_question(
    runtime: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_chat("Title: A receipt\nIt lists three coffees and a croissant.")
    params = {"image_url": "data:image/png;base64,AAAA", "prompt": "What was bought?"}
    result = await runtime.use(ModelType.IMAGE_DESCRIPTION, params)
    assert result == {"title": "A receipt", "description": "It lists three coffees and a croissant."}
    text_part = server.requests_for("chat")[0].json["messages"][0]["content"][0]
    assert text_part["text"].startswith("What was bought?\n\n")


# -- images drawn (IMAGE) ------------------------------------------------------------------


@pytest.fixture
async def drawer(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> FakeRuntime:
    """The plugin pointed at the fake server with an image model named (it draws only then)."""
    return await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "1", "IMAGE_MODEL": "dall-e-3"}
    )


async def test_image_asks_for_one_base64_picture_of_the_configured_size_and_returns_it_as_a_file(
    drawer: FakeRuntime, server: FakeOpenAIServer
) -> None:
    picture = make_png(2, 2)
    server.script_images(picture)
    (image,) = await drawer.use(ModelType.IMAGE, {"prompt": "a ginger cat"})
    assert isinstance(image, OutgoingFile)
    assert image.data == picture and image.content_type == "image/png" and image.filename == "image-1.png"
    assert image.description == "drawn: a ginger cat"  # the prompt the server says it drew
    (request,) = server.requests_for("images")
    assert request.json == {
        "model": "dall-e-3",
        "prompt": "a ginger cat",
        "n": 1,
        "size": "1024x1024",
        "response_format": "b64_json",
    }
    assert request.auth_suffix == KEY[-4:]


async def test_image_model_and_size_come_from_the_characters_settings(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    settings = {
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": server.url,
        "IMAGE_MODEL": "gpt-image-1",
        "IMAGE_SIZE": "512x512",
    }
    runtime = await make_runtime(settings)
    await runtime.use(ModelType.IMAGE, {"prompt": "a cat"})
    body = server.requests_for("images")[0].json
    # gpt-image models always answer base64 and refuse being asked for a format.
    assert body["model"] == "gpt-image-1" and body["size"] == "512x512" and "response_format" not in body


async def test_an_image_answered_as_a_url_is_fetched_without_the_key(
    drawer: FakeRuntime, server: FakeOpenAIServer
) -> None:
    picture = b"\xff\xd8\xff\xe0fake-jpeg"
    server.script_images(Served(picture))
    (image,) = await drawer.use(ModelType.IMAGE, {"prompt": "a cat"})
    assert image.data == picture and image.content_type == "image/jpeg" and image.filename == "image-1.jpg"
    (fetched,) = server.requests_for("image_files")
    assert not fetched.auth


async def test_an_images_answer_that_is_no_picture_is_a_model_error(
    drawer: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_images(b"<html>not a picture</html>", Body('{"data": []}'))
    with pytest.raises(ModelError, match=r"returned 26 bytes that are not a PNG, JPEG, WebP or GIF"):
        await drawer.use(ModelType.IMAGE, {"prompt": "a cat"})
    with pytest.raises(
        ModelError, match=r"not a list of images; does http://127.0.0.1:\d+/v1 serve /images/generations"
    ):
        await drawer.use(ModelType.IMAGE, {"prompt": "a cat"})


async def test_an_image_refused_by_the_server_says_why_and_an_empty_prompt_asks_nothing(
    drawer: FakeRuntime, server: FakeOpenAIServer
) -> None:
    server.script_images(Fail(400, message="Your request was rejected by the safety system."))
    with pytest.raises(
        ModelRequestRejected, match=r"IMAGE via openai \(dall-e-3\): HTTP 400: Your request was rejected"
    ):
        await drawer.use(ModelType.IMAGE, {"prompt": "something"})
    with pytest.raises(ModelError, match="cannot draw an empty prompt"):
        await drawer.use(ModelType.IMAGE, {"prompt": "  "})
    assert len(server.requests_for("images")) == 1


async def test_an_image_server_error_is_retried(drawer: FakeRuntime, server: FakeOpenAIServer) -> None:
    server.script_images(Fail(503, times=1), make_png())
    assert len(await drawer.use(ModelType.IMAGE, {"prompt": "a cat"})) == 1
    assert len(server.requests_for("images")) == 2


async def test_text_to_speech_returns_audio_bytes(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    audio = await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hello!"})
    assert audio == b"FAKE-AUDIO:mp3:Hello!"
    assert server.requests_for("speech")[0].json == {
        "input": "Hello!",
        "model": "gpt-4o-mini-tts",
        "voice": "nova",
        "response_format": "mp3",
    }


async def test_text_to_speech_takes_voice_format_and_instructions(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_TTS_INSTRUCTIONS": "Cheerful."}
    )
    server.script_speech(b"\x00\x01opus")
    audio = await runtime.use(ModelType.TEXT_TO_SPEECH, {"text": "Hi", "voice": "alloy", "format": "opus"})
    assert audio == b"\x00\x01opus"
    body = server.requests_for("speech")[0].json
    assert (body["voice"], body["response_format"], body["instructions"]) == ("alloy", "opus", "Cheerful.")


# -- per agent and presets --------------------------------------------------------------------


async def test_each_agent_uses_its_own_key_and_server(make_runtime: MakeRuntime) -> None:
    async with FakeOpenAIServer() as server_a, FakeOpenAIServer() as server_b:
        ada = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server_a.url})
        bob = await make_runtime(
            {"OPENAI_API_KEY": OTHER_KEY, "OPENAI_BASE_URL": server_b.url, "OPENAI_SMALL_MODEL": "bob-small"},
            agent_id="agent-bob",
            character=FakeCharacter(name="Bob", system="You are Bob."),
        )
        await ada.use(ModelType.TEXT_SMALL, {"prompt": "from Ada"})
        await bob.use(ModelType.TEXT_SMALL, {"prompt": "from Bob"})
        await ada.use(ModelType.TEXT_EMBEDDING, {"text": "Ada again"})
        assert [(r.endpoint, r.auth_suffix) for r in server_a.requests] == [("chat", "0001"), ("embeddings", "0001")]
        assert [(r.endpoint, r.auth_suffix) for r in server_b.requests] == [("chat", "0002")]
        bob_body = server_b.requests[0].json
        assert bob_body["model"] == "bob-small"
        assert bob_body["messages"][0]["content"] == "You are Bob."
        await ada.close()
        await bob.close()


async def test_characters_of_one_daemon_share_one_connection_each_with_its_own_key(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    shared = Shared()
    ada = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}, shared=shared)
    bob = await make_runtime(
        {"OPENAI_API_KEY": OTHER_KEY, "OPENAI_BASE_URL": server.url},
        agent_id="agent-bob",
        character=FakeCharacter(name="Bob"),
        shared=shared,
    )
    for runtime in (ada, bob, ada, bob):
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert [r.auth_suffix for r in server.requests] == ["0001", "0002", "0001", "0002"]
    assert len({r.client_port for r in server.requests}) == 1  # one pool, its one connection reused
    assert shared.instance_of(HttpPools).opened == 1


async def test_sdk_calls_and_direct_posts_share_one_connection(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    await runtime.use(ModelType.TEXT_SMALL, HI)
    await runtime.use(ModelType.TRANSCRIPTION, {"audio": b"RIFF-not-really-audio", "filename": "a.wav"})
    await runtime.use(ModelType.TEXT_SMALL, HI)
    assert [r.endpoint for r in server.requests] == ["chat", "transcriptions", "chat"]
    assert len({r.client_port for r in server.requests}) == 1


async def test_characters_of_different_daemons_or_servers_do_not_share_a_pool(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    shared = Shared()
    ada = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}, shared=shared)
    elsewhere = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url})  # another daemon
    async with FakeOpenAIServer() as other:
        bob = await make_runtime(
            {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": other.url}, character=FakeCharacter(name="Bob"), shared=shared
        )
        for runtime in (ada, elsewhere, bob):
            await runtime.use(ModelType.TEXT_SMALL, HI)
        assert shared.instance_of(HttpPools).opened == 2  # one per base URL
        await bob.close()
    assert len({r.client_port for r in server.requests}) == 2


async def test_closing_one_character_leaves_the_pool_to_the_others(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    shared = Shared()
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}
    ada = await make_runtime(settings, shared=shared)
    bob = await make_runtime(settings, character=FakeCharacter(name="Bob"), shared=shared)
    await ada.use(ModelType.TEXT_SMALL, HI)
    await ada.close()
    await ada.close()  # closing again does not count twice
    assert await bob.use(ModelType.TEXT_SMALL, HI) == "echo: hi"
    assert len({r.client_port for r in server.requests}) == 1
    pools = shared.instance_of(HttpPools)
    assert pools.opened == 1
    await bob.close()
    assert pools.opened == 0  # the last character out closed it
    carol = await make_runtime(settings, character=FakeCharacter(name="Carol"), shared=shared)
    assert await carol.use(ModelType.TEXT_SMALL, HI) == "echo: hi"  # a later character opens a new one
    assert pools.opened == 1


async def test_ollama_preset_reaches_the_v1_route_with_the_ollama_key(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    server.embedding_dimensions = 768
    native = server.url.removesuffix("/v1") + "/api"
    runtime = await make_runtime({"OLLAMA_API_ENDPOINT": native}, model_preset="ollama")
    assert await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"}) == "echo: hi"
    assert await runtime.use(ModelType.OBJECT_LARGE, {"prompt": "json"}) == {"echo": "json"}
    assert len(await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})) == 768
    chat, obj, embedding = server.requests
    assert chat.path == "/v1/chat/completions" and chat.auth_suffix == "lama"
    assert (chat.json["model"], obj.json["model"]) == ("llama3.2", "llama3.1:70b")
    assert embedding.json == {"model": "nomic-embed-text", "input": "hi", "encoding_format": "base64"}


async def test_openrouter_preset_chats_there_and_embeds_elsewhere(make_runtime: MakeRuntime) -> None:
    async with FakeOpenAIServer() as router, FakeOpenAIServer(embedding_dimensions=768) as local:
        runtime = await make_runtime(
            {
                "OPENROUTER_API_KEY": "sk-or-test-key-7777",
                "OPENROUTER_BASE_URL": router.url,
                "OPENAI_EMBEDDING_URL": local.url,
                "OPENAI_EMBEDDING_MODEL": "nomic-embed-text",
            },
            model_preset="openrouter",
        )
        await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi"})
        await runtime.use(ModelType.IMAGE_DESCRIPTION, {"image_url": "https://example.com/a.png"})
        assert len(await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})) == 768
        assert [(r.json["model"], r.auth_suffix) for r in router.requests] == [
            ("google/gemini-2.5-flash-preview-05-20", "7777"),
            ("anthropic/claude-3-5-sonnet", "7777"),
        ]
        (embedding,) = local.requests
        assert embedding.endpoint == "embeddings" and embedding.auth_suffix == "-key"
        await runtime.close()


async def test_a_closed_plugin_refuses_calls(runtime: FakeRuntime, server: FakeOpenAIServer) -> None:
    handler = runtime.registration(ModelType.TEXT_SMALL).handler
    await runtime.close()
    with pytest.raises(ModelError, match="the openai plugin is closed"):
        await handler(runtime, {"prompt": "hi"})
    assert server.requests == []


async def test_characters_of_one_daemon_share_one_request_for_the_same_text(
    server: FakeOpenAIServer, make_runtime: Any
) -> None:
    shared = Shared()
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0"}
    ada, brann = await make_runtime(settings, shared=shared), await make_runtime(settings, shared=shared)
    other_model = await make_runtime({**settings, "OPENAI_EMBEDDING_MODEL": "text-embedding-3-large"}, shared=shared)
    elsewhere = await make_runtime(settings)  # another daemon
    said = {"text": "Ada, Brann: the hives are swarming"}
    vectors = await asyncio.gather(
        ada.use(ModelType.TEXT_EMBEDDING, said),
        brann.use(ModelType.TEXT_EMBEDDING, said),
        other_model.use(ModelType.TEXT_EMBEDDING, said),
        elsewhere.use(ModelType.TEXT_EMBEDDING, said),
    )
    assert vectors[0] == vectors[1] and vectors[0] is not vectors[1]  # each its own list
    assert [r.json["model"] for r in server.requests_for("embeddings")].count("text-embedding-3-small") == 2
    assert len(server.requests_for("embeddings")) == 3  # Ada and Brann shared one; the others asked for theirs
    await ada.use(ModelType.TEXT_EMBEDDING, said)  # moments later: still shared
    assert len(server.requests_for("embeddings")) == 3


async def test_a_failed_embedding_is_not_shared_each_asks_again(server: FakeOpenAIServer, make_runtime: Any) -> None:
    shared = Shared()
    settings = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "OPENAI_MAX_RETRIES": "0"}
    ada, brann = await make_runtime(settings, shared=shared), await make_runtime(settings, shared=shared)
    server.script_embeddings(Fail(500, times=1))
    with pytest.raises(ModelError):
        await ada.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})
    assert len(await brann.use(ModelType.TEXT_EMBEDDING, {"text": "hello"})) == 1536
    assert len(server.requests_for("embeddings")) == 2


# -- the message's trace ----------------------------------------------------------------------


async def test_a_call_says_its_model_and_tokens_for_the_messages_trace(runtime: FakeRuntime) -> None:
    with tracing() as tracer, model_call(tracer) as details:
        assert await runtime.use(ModelType.TEXT_SMALL, {"prompt": "Hello there"}) == "echo: Hello there"
    assert (details.model, details.prompt_tokens, details.completion_tokens) == ("gpt-4o-mini", 5, 3)
    # Outside a traced message nothing is noted, and nothing fails.
    assert await runtime.use(ModelType.TEXT_SMALL, {"prompt": "again"}) == "echo: again"
