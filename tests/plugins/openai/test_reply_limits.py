"""Every body read from a model server is counted as it arrives and cut off at a limit: a chat
completion of 1.5 GB once took the daemon from 127 MB to 3.76 GB. Over the limit the call is a
model error that names the endpoint, what was read and the limit, at once and not retried."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import pytest

from bot.kernel.errors import ModelError
from bot.kernel.models import ModelType
from plugins.openai._posting import MAX_REPLY_BYTES
from tests.fakes.openai_server import Endless, FakeOpenAIServer, Served, make_png

from ..fake_runtime import FakeRuntime
from .conftest import KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
#: What the sockets between the fake and the client may hold besides what the client read.
_IN_FLIGHT = 16 * 1024 * 1024


async def at(server: FakeOpenAIServer, make_runtime: MakeRuntime, **settings: str) -> FakeRuntime:
    return await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, **settings})


@pytest.mark.parametrize(
    ("kind", "params", "endpoint"),
    [
        (ModelType.TEXT_SMALL, {"prompt": "hi"}, "chat"),
        (ModelType.TEXT_EMBEDDING, {"text": "hi"}, "embeddings"),
    ],
    ids=["chat", "embeddings"],
)
async def test_a_body_that_never_ends_is_cut_off_at_the_limit(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, kind: ModelType, params: dict[str, str], endpoint: str
) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="2")
    server.script(endpoint, Endless())
    with pytest.raises(ModelError) as raised:
        await runtime.use(kind, params)
    message = str(raised.value)
    assert message.startswith(f"Ada: {kind.value} via openai (")
    found = re.search(
        rf"the answer from {re.escape(server.url)} went on past the {MAX_REPLY_BYTES} bytes troupe reads "
        r"\(stopped at (\d+)\)$",
        message,
    )
    assert found, message
    assert MAX_REPLY_BYTES < int(found.group(1)) <= MAX_REPLY_BYTES + 1024 * 1024
    assert KEY not in message
    assert len(server.requests_for(endpoint)) == 1  # not asked again: it would send as much
    # The client stopped reading there: the server wrote little more than the limit.
    assert server.endless_sent < MAX_REPLY_BYTES + _IN_FLIGHT


async def test_a_body_that_declares_more_than_the_limit_is_refused_before_reading(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime)
    server.script_chat(Endless(declared=1_500_000_000))
    with pytest.raises(ModelError, match=r"declares 1500000000 bytes, more than the \d+ troupe reads$"):
        await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
    assert server.endless_sent < _IN_FLIGHT


async def test_a_picture_fetched_from_its_address_arrives_whole(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    """Read against the limit, not with ``content.read(limit + 1)``, which returns what has
    arrived so far: a picture larger than one chunk came back cut short."""
    runtime = await at(server, make_runtime, IMAGE_MODEL="dall-e-3")
    picture = make_png(padding=3 * 1024 * 1024)
    server.script_images(Served(picture))
    (image,) = await runtime.use(ModelType.IMAGE, {"prompt": "a cat"})
    assert image.data == picture
