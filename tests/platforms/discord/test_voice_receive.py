"""The receive path on real RTP packets built the way Discord sends them: parsing, transport
decryption, DAVE failures, per-speaker utterances."""

from __future__ import annotations

import asyncio
import os
import types

import pytest

from bot.media.audio import DISCORD_PCM, OpusEncoder, VadConfig
from platforms.discord._voice_receive import VoiceReceiver, decrypt_rtpsize, parse_rtp

from ...bot.audio._signals import speech
from ...fakes.discord_voice import XCHACHA20, build_rtp_packet

KEY = bytes(range(32))


def packets_of(ssrc: int, seconds: float, *, seed: int = 1) -> list[bytes]:
    encoder = OpusEncoder()
    opus = encoder.encode(speech(seconds, DISCORD_PCM, seed=seed)) + encoder.flush()
    return [build_rtp_packet(ssrc, i, i * 960, frame, KEY, XCHACHA20, i) for i, frame in enumerate(opus)]


@pytest.mark.parametrize("with_extension", [True, False])
def test_a_discord_packet_parses_and_decrypts_to_its_opus_frame(with_extension: bool) -> None:
    opus = os.urandom(80)
    raw = build_rtp_packet(1234, 7, 6720, opus, KEY, XCHACHA20, 42, with_extension=with_extension)
    packet = parse_rtp(raw)
    assert packet is not None and (packet.ssrc, packet.sequence, packet.timestamp) == (1234, 7, 6720)
    assert decrypt_rtpsize(packet, KEY) == opus
    with pytest.raises(ValueError, match="does not decrypt"):
        decrypt_rtpsize(packet, bytes(32))


def test_rtcp_and_keepalives_are_not_voice() -> None:
    assert parse_rtp(bytes([0x81, 200]) + bytes(30)) is None  # an RTCP sender report
    assert parse_rtp(b"\x00" * 8) is None


class Connection:
    def __init__(self, mode: str = XCHACHA20, dave: object = None) -> None:
        self.mode, self.secret_key, self.dave_session, self.can_encrypt = mode, list(KEY), dave, dave is not None
        self.listeners: list = []

    def add_socket_listener(self, callback) -> None:
        self.listeners.append(callback)

    def remove_socket_listener(self, callback) -> None:
        self.listeners.remove(callback)


async def receive(connection: Connection, streams: list[list[bytes]], *, users: dict[int, int]) -> tuple[list, list]:
    heard: list = []
    failures: list[str] = []

    async def on_utterance(user: int, utterance) -> None:
        heard.append((user, utterance))

    async def on_failure(reason: str) -> None:
        failures.append(reason)

    client = types.SimpleNamespace(_connection=connection)
    receiver = VoiceReceiver(
        client, VadConfig(silence_s=0.3, min_speech_s=0.3), on_utterance=on_utterance, on_failure=on_failure
    )
    receiver.start()
    for ssrc, user in users.items():
        receiver.on_speaking({"ssrc": ssrc, "user_id": str(user), "speaking": 1})
    listener = connection.listeners[0]
    for batch in zip(*streams, strict=False):  # interleaved: people talking at once
        for raw in batch:
            listener(raw)
        await asyncio.sleep(0.002)
    async with asyncio.timeout(60):
        while len(heard) < len(streams) and not failures:
            await asyncio.sleep(0.02)
    await receiver.close()
    return heard, failures


async def test_two_people_talking_at_once_are_heard_separately() -> None:
    heard, failures = await receive(
        Connection(), [packets_of(11, 1.0, seed=1), packets_of(22, 1.2, seed=2)], users={11: 501, 22: 502}
    )
    assert not failures
    assert sorted(user for user, _ in heard) == [501, 502]
    assert all(u.duration_s > 0.5 for _, u in heard)


async def test_an_encryption_mode_troupe_cannot_decrypt_is_reported_once() -> None:
    heard, failures = await receive(Connection(mode="xsalsa20_poly1305"), [packets_of(11, 0.6)], users={11: 501})
    assert heard == [] and len(failures) == 1 and "xsalsa20_poly1305" in failures[0]


async def test_dave_decryption_that_keeps_failing_is_reported_once() -> None:
    class BrokenDave:
        def decrypt(self, user_id, media_type, frame):
            raise RuntimeError("no key for this sender")

    heard, failures = await receive(Connection(dave=BrokenDave()), [packets_of(11, 1.5)], users={11: 501})
    assert heard == [] and len(failures) == 1 and "DAVE" in failures[0]
