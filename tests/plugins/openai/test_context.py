"""The context window: the setting, the presets' guesses, a server's refusal read in each known
wording (as ModelContextExceeded with the window it named), and the window learned from it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.kernel.errors import ConfigError, ModelContextExceeded, ModelRequestRejected
from bot.kernel.models import ModelType
from plugins.openai._context import LearnedContexts, context_refusal, preset_context_length
from tests.fakes.openai_server import Fail, FakeOpenAIServer

from ..fake_runtime import FakeRuntime
from .conftest import KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (
            "This model's maximum context length is 8192 tokens. However, you requested 8500 tokens "
            "(7476 in the messages, 1024 in the completion). Please reduce the length of the messages.",
            8192,
        ),
        ("Requested tokens (6868) exceed context window of 2048", 2048),
        ("The decoder prompt (length 5000) is longer than the maximum model length of 4096.", 4096),
        ("the request exceeds the available context size, try increasing it", None),
        ("prompt too long; exceeded max context length by 720 tokens", None),
        ("input length exceeds the context length", None),
    ],
)
def test_refusals_for_length_are_read_in_each_wording(message: str, limit: int | None) -> None:
    refusal = context_refusal(400, {"error": {"message": message}})
    assert refusal is not None and refusal.limit == limit


def test_llama_server_names_its_window_in_n_ctx() -> None:
    body = {"error": {"message": "the request exceeds the available context size", "n_ctx": 4096}}
    assert context_refusal(400, body) == context_refusal(400, {**body["error"]})
    refusal = context_refusal(400, body)
    assert refusal is not None and refusal.limit == 4096


def test_other_refusals_are_not_for_length() -> None:
    assert context_refusal(400, {"error": {"message": "Invalid value for 'temperature'"}}) is None
    assert context_refusal(500, "maximum context length is 2048") is None  # a server error is no refusal


def test_presets_guess_the_window() -> None:
    openai = "https://api.openai.com/v1"
    assert preset_context_length("openai", openai, "gpt-4o") == 128_000
    assert preset_context_length("openai", openai, "gpt-4") == 8_192
    assert preset_context_length("openai", openai, "gpt-3.5-turbo") == 16_385
    assert preset_context_length("openai", "http://localhost:8000/v1", "gpt-4o") == 8_192  # not OpenAI's
    assert preset_context_length("ollama", "http://localhost:11434/v1", "llama3.2") == 4_096


def test_only_a_smaller_window_is_news() -> None:
    learned = LearnedContexts()
    assert learned.learn("http://a", "m", 4096) and learned.get("http://a", "m") == 4096
    assert not learned.learn("http://a", "m", 8192) and learned.get("http://a", "m") == 4096
    assert learned.learn("http://a", "m", 2048) and learned.get("http://b", "m") is None


def window(runtime: FakeRuntime, kind: ModelType) -> int | None:
    measure = runtime.registration(kind).context_length
    assert measure is not None
    return measure()


async def test_the_text_models_say_their_window_and_learn_it_from_a_refusal(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url})
    assert window(runtime, ModelType.TEXT_LARGE) == window(runtime, ModelType.TEXT_SMALL) == 8_192
    assert runtime.registration(ModelType.TEXT_EMBEDDING).context_length is None
    server.script_chat(Fail(400, times=1, message="Requested tokens (6868) exceed context window of 2048"), "ok")
    with pytest.raises(ModelContextExceeded) as refused:
        await runtime.use(ModelType.TEXT_LARGE, {"prompt": "a long one"})
    assert isinstance(refused.value, ModelRequestRejected) and refused.value.limit == 2048
    assert "longer than the model's context window of 2048 tokens" in str(refused.value)
    assert window(runtime, ModelType.TEXT_LARGE) == 2048  # learned for gpt-4o at this server
    assert window(runtime, ModelType.TEXT_SMALL) == 8_192  # another model
    # Another character of the daemon, at the same server, knows it too.
    other = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}, shared=runtime.shared)
    assert window(other, ModelType.TEXT_LARGE) == 2048
    assert len(server.requests_for("chat")) == 1  # a refusal for length is not retried


async def test_the_setting_gives_the_window(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "MODEL_CONTEXT_LENGTH": "32768"}
    )
    assert window(runtime, ModelType.TEXT_LARGE) == 32_768
    with pytest.raises(ConfigError, match="MODEL_CONTEXT_LENGTH must be a whole number from 512"):
        await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "MODEL_CONTEXT_LENGTH": "lots"})


async def test_a_streamed_answer_refused_for_length_is_read_the_same(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url})
    message = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
    server.script_chat(Fail(400, times=1, message=message), "ok")
    pieces: list[str] = []
    with pytest.raises(ModelContextExceeded) as refused:
        await runtime.use(ModelType.TEXT_LARGE, {"prompt": "a long one", "on_delta": pieces.append})
    assert refused.value.limit == 4096 and pieces == []
    assert window(runtime, ModelType.TEXT_LARGE) == 4096
