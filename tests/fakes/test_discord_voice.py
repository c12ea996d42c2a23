"""FakeVoiceServer (wired into FakeDiscord) against real, unmodified discord.py voice clients."""

from __future__ import annotations

import asyncio
import fractions
import glob
import io
import itertools
import os
import socket
import ssl
import struct
import time
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import av
import davey
import discord
import nacl.exceptions
import numpy as np
import pytest
from discord.voice_state import VoiceConnectionState

from tests.fakes.discord_server import FakeDiscord, Overwrite, Permissions
from tests.fakes.discord_voice import (
    AES256_GCM,
    OPUS_SILENCE,
    SAMPLES_PER_FRAME,
    XCHACHA20,
    FakeVoiceServer,
    build_rtp_packet,
    parse_rtp_packet,
)

TONE_HZ = 440


# -- audio helpers ------------------------------------------------------------------------------


def tone_pcm(seconds: float, hz: float = TONE_HZ) -> bytes:
    """48 kHz stereo s16le: what discord.PCMAudio reads."""
    samples = (np.sin(2 * np.pi * hz * np.arange(int(48_000 * seconds)) / 48_000) * 10_000).astype("<i2")
    return np.repeat(samples, 2).tobytes()


def encode_opus(pcm: bytes) -> list[bytes]:
    """20 ms Opus packets (PyAV's bundled libopus)."""
    codec = av.CodecContext.create("libopus", "w")
    codec.sample_rate, codec.layout, codec.format, codec.bit_rate = 48_000, "stereo", "s16", 64_000
    frame = av.AudioFrame.from_ndarray(np.frombuffer(pcm, "<i2").reshape(1, -1), format="s16", layout="stereo")
    frame.sample_rate, frame.pts, frame.time_base = 48_000, 0, fractions.Fraction(1, 48_000)
    return [bytes(p) for p in [*codec.encode(frame), *codec.encode(None)]]


def decode_opus(packets: list[bytes]) -> np.ndarray:
    """The left channel of the decoded packets."""
    codec = av.CodecContext.create("libopus", "r")
    codec.sample_rate, codec.layout = 48_000, "stereo"
    chunks = [f.to_ndarray().reshape(-1)[::2] for p in packets for f in codec.decode(av.Packet(p))]
    return np.concatenate(chunks).astype(np.float64)


def dominant_hz(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum) * 48_000 / len(samples))


@pytest.fixture(scope="module", autouse=True)
def opus_loaded() -> None:
    """discord.PCMAudio needs libopus in discord.py: load PyAV's copy."""
    if not discord.opus.is_loaded():
        libs = glob.glob(os.path.join(os.path.dirname(av.__file__), "..", "av.libs", "libopus*"))
        discord.opus.load_opus(libs[0])


# -- clients ------------------------------------------------------------------------------------


class Recording(discord.VoiceClient):
    """A VoiceClient whose voice-websocket frames are kept (the hook discord.py offers)."""

    def create_connection_state(self) -> VoiceConnectionState:
        self.frames: list[dict[str, Any]] = []

        async def hook(ws: Any, msg: dict[str, Any]) -> None:
            self.frames.append(msg)

        return VoiceConnectionState(self, hook=hook)

    def received(self, op: int) -> list[Any]:
        return [f["d"] for f in self.frames if f["op"] == op]


def make_client(fake: FakeDiscord) -> discord.Client:
    """What troupe's adapter does with DISCORD_CA_FILE: trust the fake's CA for wss://."""
    ctx = ssl.create_default_context(cafile=fake.voice.ca_file)
    intents = discord.Intents.default()
    intents.members = True
    return discord.Client(intents=intents, guild_ready_timeout=0.05, connector=aiohttp.TCPConnector(ssl=ctx))


def voice_channel(client: discord.Client, channel_id: int) -> discord.VoiceChannel:
    """The cached channel ``channel_id``, which the test expects to be a voice channel."""
    channel = client.get_channel(channel_id)
    assert isinstance(channel, discord.VoiceChannel), channel
    return channel


@asynccontextmanager
async def running(*clients: tuple[discord.Client, str]) -> AsyncIterator[None]:
    tasks = [asyncio.create_task(client.start(token)) for client, token in clients]
    try:
        async with asyncio.timeout(60):
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


async def until(check: Any, timeout: float = 30.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (result := check()):
            await asyncio.sleep(0.005)
    return result


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        server.patch_discord()
        yield server


@pytest.fixture
def world(fake: FakeDiscord) -> types.SimpleNamespace:
    ada, bob = fake.add_bot("token-ada", "Ada"), fake.add_bot("token-bob", "Bob")
    sam = fake.add_user("Sam")
    guild = fake.add_guild("Guild", owner=sam, members=[ada, bob])
    lounge = fake.add_channel(guild, "Lounge", "voice")
    return types.SimpleNamespace(ada=ada, bob=bob, sam=sam, guild=guild, lounge=lounge)


# -- pure functions -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [XCHACHA20, AES256_GCM])
@pytest.mark.parametrize("with_extension", [True, False])
def test_rtp_packets_round_trip(mode: str, with_extension: bool) -> None:
    key = os.urandom(32)
    packet = build_rtp_packet(4242, 65535, 2**32 - 1, b"opus!", list(key), mode, 7, with_extension)
    header = struct.unpack_from(">BBHII", packet)
    assert header == (0x90 if with_extension else 0x80, 0x78, 65535, 2**32 - 1, 4242)
    if with_extension:
        assert packet[12:16] == b"\xbe\xde\x00\x01"  # in the clear: part of the additional data
    assert packet[-4:] == b"\x00\x00\x00\x07"
    parsed = parse_rtp_packet(packet, key, mode)
    assert (parsed.ssrc, parsed.sequence, parsed.timestamp, parsed.nonce, parsed.payload) == (
        4242,
        65535,
        2**32 - 1,
        7,
        b"opus!",
    )
    assert parsed.extension_profile == (0xBEDE if with_extension else None)
    assert len(parsed.extension) == (4 if with_extension else 0)
    tampered = bytearray(packet)
    tampered[2] ^= 1  # the header is authenticated
    with pytest.raises(Exception):  # noqa: B017 - whatever the cipher raises on a forged packet
        parse_rtp_packet(bytes(tampered), key, mode)
    with pytest.raises(Exception):  # noqa: B017 - likewise for the wrong key
        parse_rtp_packet(packet, os.urandom(32), mode)


def test_build_matches_discord_py_byte_for_byte() -> None:
    """discord.py's own encryption (no extension) and build_rtp_packet agree exactly."""
    key = list(os.urandom(32))
    sender = types.SimpleNamespace(secret_key=key, _incr_nonce=5)
    sender.checked_add = lambda attr, value, limit: setattr(sender, attr, getattr(sender, attr) + value)
    header = struct.pack(">BBHII", 0x80, 0x78, 3, 1920, 99)
    # a stand-in with just what the method reads, instead of a connected VoiceClient
    encrypt = discord.VoiceClient._encrypt_aead_xchacha20_poly1305_rtpsize
    theirs = encrypt(sender, header, b"\x01\x02\x03")  # type: ignore[arg-type]
    assert theirs == build_rtp_packet(99, 3, 1920, b"\x01\x02\x03", key, XCHACHA20, 5, with_extension=False)
    with pytest.raises(nacl.exceptions.CryptoError):
        parse_rtp_packet(theirs, bytes(32), XCHACHA20)


# -- against discord.py -------------------------------------------------------------------------


async def test_a_bot_joins_voice_and_the_other_bot_sees_it(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    ada_client, bob_client = make_client(fake), make_client(fake)
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        vc: discord.VoiceClient = await voice_channel(ada_client, world.lounge.id).connect(timeout=5)
        assert vc.is_connected() and vc.mode == XCHACHA20  # discord.py supports no AES-GCM
        session = await fake.voice.wait_connected(world.ada, world.lounge)
        assert session.mode == XCHACHA20 and bytes(vc.secret_key) == session.secret_key
        assert session.ssrc == vc.ssrc and session.address == vc._connection.socket.getsockname()
        assert session.address is not None
        assert session.selected == {"address": "127.0.0.1", "port": session.address[1], "mode": XCHACHA20}
        assert session.identify["max_dave_protocol_version"] == 1 and session.dave_protocol_version == 0
        assert session.speaking == [{"speaking": 0, "delay": 0, "ssrc": vc.ssrc}]
        assert fake.voice.queries == [{"v": "8"}]
        ada_voice = fake.voice_state(world.ada, world.guild)
        assert ada_voice is not None and ada_voice.channel is world.lounge
        assert world.ada.voice_state_updates[0]["channel_id"] == world.lounge.id
        seen_by_bob = voice_channel(bob_client, world.lounge.id)
        await until(lambda: [m.id for m in seen_by_bob.members] == [world.ada.id])
        await vc.disconnect()
        assert not vc.is_connected() and fake.voice_state(world.ada, world.guild) is None
        await until(lambda: not seen_by_bob.members)
        await fake.voice.wait_for(lambda: session.closes == [1000])


async def test_deafening_itself_keeps_the_voice_connection(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc: discord.VoiceClient = await voice_channel(client, world.lounge.id).connect(timeout=5)
        await vc.guild.change_voice_state(channel=vc.channel, self_deaf=True)
        await until(lambda: vc.guild.me.voice is not None and vc.guild.me.voice.self_deaf)
        ada_voice = fake.voice_state(world.ada, world.guild)
        assert ada_voice is not None and ada_voice.self_deaf
        await asyncio.sleep(0.05)
        assert vc.is_connected() and len(fake.voice.sessions) == 1 and fake.voice.sessions[0].connected


async def test_a_bot_without_connect_permission_gets_no_voice_server(
    fake: FakeDiscord, world: types.SimpleNamespace
) -> None:
    closed = fake.add_channel(
        world.guild, "Closed", "voice", overwrites=[Overwrite(world.guild.everyone, deny=Permissions.CONNECT)]
    )
    client = make_client(fake)
    async with running((client, "token-ada")):
        with pytest.raises(asyncio.TimeoutError):
            await voice_channel(client, closed.id).connect(timeout=0.3)
    assert fake.voice.sessions == [] and fake.voice_state(world.ada, world.guild) is None


async def test_what_a_bot_plays_is_recorded_as_20ms_opus_frames(
    fake: FakeDiscord, world: types.SimpleNamespace
) -> None:
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc: discord.VoiceClient = await voice_channel(client, world.lounge.id).connect(timeout=5)
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        vc.play(discord.PCMAudio(io.BytesIO(tone_pcm(0.4))), after=lambda _: loop.call_soon_threadsafe(done.set))
        await asyncio.wait_for(done.wait(), 3)
        packets = await fake.voice.wait_for_packets(world.ada, 25, silence=True)
        session = fake.voice.session(world.ada)
        assert session is not None and not session.rejected
        audio, tail = packets[:20], packets[20:]
        assert all(p.silence for p in tail) and not any(p.silence for p in audio)
        assert [p.opus for p in tail] == [OPUS_SILENCE] * 5
        assert [p.sequence for p in packets] == list(range(1, 26))
        assert [p.timestamp for p in packets] == [i * SAMPLES_PER_FRAME for i in range(25)]
        assert [p.nonce for p in packets] == list(range(25))
        assert {p.ssrc for p in packets} == {vc.ssrc}
        gaps = np.diff([p.arrived for p in audio])
        assert 0.015 < gaps.mean() < 0.03, gaps  # discord.py paces on an absolute 20 ms grid
        assert dominant_hz(decode_opus(session.opus_frames)) == pytest.approx(TONE_HZ, abs=10)
        assert [s["speaking"] for s in session.speaking] == [0, 1, 0]


async def test_a_user_speaking_reaches_the_bot_socket(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc = await voice_channel(client, world.lounge.id).connect(timeout=5, cls=Recording)
        raw: list[bytes] = []
        vc._connection.add_socket_listener(raw.append)
        await fake.user_joins_voice(world.sam, world.lounge)
        channel = voice_channel(client, world.lounge.id)
        await until(lambda: world.sam.id in channel.voice_states)
        ssrc = fake.voice.participant_ssrc(world.sam)
        await until(lambda: vc.received(11))
        assert vc.received(11) == [{"user_ids": [str(world.sam.id)]}]

        opus = encode_opus(tone_pcm(0.2))
        started = time.monotonic()
        sequences = await fake.voice.user_speaks(world.sam, opus, pace=0.02)
        assert time.monotonic() - started >= 0.02 * (len(opus) + 4)
        assert vc.received(5) == [{"user_id": str(world.sam.id), "ssrc": ssrc, "speaking": 1}]
        await until(lambda: len(raw) == len(opus) + 5)
        packets = [parse_rtp_packet(p, vc.secret_key, vc.mode) for p in raw]
        assert [p.payload for p in packets] == [*opus, *[OPUS_SILENCE] * 5]
        assert [p.sequence for p in packets] == sequences
        assert {p.ssrc for p in packets} == {ssrc} and all(p.extension_profile == 0xBEDE for p in packets)
        steps = {(b.timestamp - a.timestamp) % 2**32 for a, b in itertools.pairwise(packets)}
        assert steps == {SAMPLES_PER_FRAME}
        assert [p.nonce for p in packets] == list(range(len(packets)))
        assert dominant_hz(decode_opus([p.payload for p in packets[: len(opus)]])) == pytest.approx(TONE_HZ, abs=10)

        raw.clear()
        await fake.voice.user_speaks(world.sam, [b"\xfc\xff\xfe"] * 3, pace=0, silence_frames=0)
        await until(lambda: len(raw) == 3)
        more = [parse_rtp_packet(p, vc.secret_key, vc.mode) for p in raw]
        assert more[0].sequence == (sequences[-1] + 1) % 2**16  # streams continue across calls

        await fake.user_leaves_voice(world.sam, world.guild)
        await until(lambda: vc.received(13))
        assert vc.received(13) == [{"user_id": str(world.sam.id)}]
        assert world.sam.id not in channel.voice_states
        with pytest.raises(KeyError):
            await fake.voice.user_speaks(world.sam, opus)


async def test_a_bot_hears_another_bot(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    ada_client, bob_client = make_client(fake), make_client(fake)
    async with running((ada_client, "token-ada"), (bob_client, "token-bob")):
        ada_vc: discord.VoiceClient = await voice_channel(ada_client, world.lounge.id).connect(timeout=5)
        bob_vc = await voice_channel(bob_client, world.lounge.id).connect(timeout=5, cls=Recording)
        raw: list[bytes] = []
        bob_vc._connection.add_socket_listener(raw.append)
        for _ in range(3):
            ada_vc.send_audio_packet(b"\xfc\x01\x02", encode=False)
        await until(lambda: len(raw) == 3)
        heard = [parse_rtp_packet(p, bob_vc.secret_key, bob_vc.mode) for p in raw]
        expected = [(ada_vc.ssrc, n, b"\xfc\x01\x02") for n in (1, 2, 3)]
        assert [(p.ssrc, p.sequence, p.payload) for p in heard] == expected
        # SPEAKING and CLIENTS_CONNECT come over the voice websocket, not with the UDP packets:
        # they may land a moment later.
        await until(lambda: {"user_id": str(world.ada.id), "ssrc": ada_vc.ssrc, "speaking": 1} in bob_vc.received(5))
        await until(lambda: {"user_ids": [str(world.ada.id)]} in bob_vc.received(11))


async def test_a_server_side_disconnect_ends_the_voice_client(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc: discord.VoiceClient = await voice_channel(client, world.lounge.id).connect(timeout=5)
        await fake.user_leaves_voice(world.ada, world.guild)
        await until(lambda: not vc.is_connected() and not client.voice_clients)
        session = fake.voice.session(world.ada)
        assert session is not None
        await fake.voice.wait_for(lambda: session.closes)
        assert world.ada.voice_state_updates[-1]["channel_id"] is None  # discord.py confirmed the leave


async def test_a_new_voice_server_makes_the_bot_identify_again(fake: FakeDiscord, world: types.SimpleNamespace) -> None:
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc: discord.VoiceClient = await voice_channel(client, world.lounge.id).connect(timeout=5)
        first = fake.voice.session(world.ada)
        await fake.voice_server_update(world.ada, world.guild)
        second = await fake.voice.wait_for(
            lambda: (s := fake.voice.session(world.ada)) is not first and s is not None and s.connected and s
        )
        assert first is not None and second
        assert first.closes == [4014] and second.token != first.token
        await until(lambda: vc.is_connected() and vc.ssrc == second.ssrc)
        assert bytes(vc.secret_key) == second.secret_key != first.secret_key


# -- the protocol without discord.py --------------------------------------------------------------


async def close_code(ws: aiohttp.ClientWebSocketResponse) -> int:
    msg = await ws.receive()
    assert msg.type == aiohttp.WSMsgType.CLOSE, msg
    return int(msg.data)


async def test_identify_resume_and_heartbeats_on_the_raw_protocol() -> None:
    async with FakeVoiceServer() as voice, aiohttp.ClientSession() as http:
        token = voice.grant(7, 8, 9, "gateway-session")
        url = f"wss://{voice.endpoint}/?v=8"
        ctx = voice.client_ssl_context()
        async with http.ws_connect(url, ssl=ctx) as ws:
            assert (await ws.receive_json())["op"] == 8
            await ws.send_json({"op": 0, "d": {"server_id": "8", "user_id": "7", "session_id": "nope", "token": token}})
            assert await close_code(ws) == 4004

        ws = await http.ws_connect(url, ssl=ctx)
        await ws.receive_json()
        identify = {"server_id": "8", "user_id": "7", "session_id": "gateway-session", "token": token}
        await ws.send_json({"op": 0, "d": {**identify, "max_dave_protocol_version": 0}})
        ready = (await ws.receive_json())["d"]
        assert ready["ip"] == "127.0.0.1" and ready["port"] == voice.udp_port
        assert ready["modes"] == [AES256_GCM, XCHACHA20]

        loop = asyncio.get_running_loop()
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)

        async def receive() -> bytes:
            return await asyncio.wait_for(loop.sock_recv(udp, 2048), 2)

        await loop.sock_sendto(udp, struct.pack(">HHI", 1, 70, ready["ssrc"]) + bytes(66), ("127.0.0.1", ready["port"]))
        answer = await receive()
        assert len(answer) == 74 and answer[:8] == struct.pack(">HHI", 2, 70, ready["ssrc"])
        assert answer[8:].split(b"\0")[0] == b"127.0.0.1"
        assert struct.unpack(">H", answer[-2:])[0] == udp.getsockname()[1]

        await ws.send_json(
            {
                "op": 1,
                "d": {
                    "protocol": "udp",
                    "data": {"address": "127.0.0.1", "port": udp.getsockname()[1], "mode": AES256_GCM},
                },
            }
        )
        description = (await ws.receive_json())["d"]
        assert description["mode"] == AES256_GCM and len(description["secret_key"]) == 32
        assert description["dave_protocol_version"] == 0
        await ws.send_json({"op": 3, "d": {"t": 123, "seq_ack": -1}})
        assert await ws.receive_json() == {"op": 6, "d": {"t": 123}}

        voice.participant_joined(5, 8, 9)
        event = await ws.receive_json()
        assert event["op"] == 11 and event["d"] == {"user_ids": ["5"]} and event["seq"] == 1
        await ws.receive_json(), await ws.receive_json()  # 18 and 20, seq 2 and 3
        await voice.user_speaks(5, [b"\xfc\x00"], pace=0, silence_frames=0, lead=0)
        packet = parse_rtp_packet(await receive(), description["secret_key"], AES256_GCM)
        assert packet.payload == b"\xfc\x00" and packet.ssrc == voice.participant_ssrc(5)
        assert (await ws.receive_json())["seq"] == 4  # the SPEAKING before it

        session = voice.session(7)
        assert session is not None and session.heartbeats == 1 and session.seq_acks == [-1]
        await voice.drop(7, 4015)
        assert await close_code(ws) == 4015
        await ws.close()
        await voice.wait_for(lambda: session.closes == [4015])
        assert not session.ended  # 4015 keeps the session for RESUME

        async with http.ws_connect(url, ssl=ctx) as again:
            await again.receive_json()
            await again.send_json({"op": 7, "d": {**identify, "seq_ack": 2}})
            replayed = [await again.receive_json() for _ in range(3)]
            assert [f.get("seq") for f in replayed] == [3, 4, None] and replayed[-1]["op"] == 9
            resumed = {"server_id": "8", "user_id": "7", "session_id": "gateway-session", "seq_ack": 2}
            assert session.resumes == [resumed]  # the token is never kept
        udp.close()
        voice.revoke(7, 8)
        assert session.ended and session.channel_id is None
        async with http.ws_connect(url, ssl=ctx) as late:
            await late.receive_json()
            await late.send_json({"op": 7, "d": {**identify, "seq_ack": 4}})
            assert await close_code(late) == 4006
    await voice.close()  # idempotent


# -- DAVE ---------------------------------------------------------------------------------------


@pytest.fixture
async def dave_fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(voice=FakeVoiceServer(dave=True)) as server:
        server.patch_discord()
        yield server


async def test_dave_bot_first_commits_the_user_in_and_frames_are_end_to_end(dave_fake: FakeDiscord) -> None:
    fake = dave_fake
    ada, sam = fake.add_bot("token-ada", "Ada"), fake.add_user("Sam")
    guild = fake.add_guild("Guild", owner=sam, members=[ada])
    lounge = fake.add_channel(guild, "Lounge", "voice")
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc = await voice_channel(client, lounge.id).connect(timeout=5, cls=Recording)
        session = fake.voice.session(ada)
        assert session is not None and session.dave_protocol_version == 1
        await fake.voice.wait_for(lambda: session.dave_key_packages)
        vc.send_audio_packet(b"\xfc\x00", encode=False)  # alone: the group is pending, frames pass through
        first = (await fake.voice.wait_for_packets(ada, 1))[0]
        assert first.opus == b"\xfc\x00" and not first.dave

        await fake.user_joins_voice(sam, lounge)  # the bot is the only member: it commits the add
        await fake.voice.wait_dave(ada)
        assert session.dave_commits and session.dave_ready == [1] and session.dave_executed == [1]
        assert fake.voice.dave_members(guild, lounge) == [ada.id, sam.id] and not fake.voice.dave_errors
        await until(lambda: vc._connection.can_encrypt)
        assert vc.voice_privacy_code is not None

        for _ in range(3):
            vc.send_audio_packet(b"\xfc\x01\x02", encode=False)
        packets = (await fake.voice.wait_for_packets(ada, 4))[1:]
        assert [(p.opus, p.dave, p.dave_error) for p in packets] == [(b"\xfc\x01\x02", True, None)] * 3

        raw: list[bytes] = []
        vc._connection.add_socket_listener(raw.append)
        await fake.voice.user_speaks(sam, [b"\xfc\x03\x04"] * 2, pace=0, silence_frames=1)
        await until(lambda: len(raw) == 3)
        frames = [parse_rtp_packet(p, vc.secret_key, vc.mode).payload for p in raw]
        assert frames[0].endswith(b"\xfa\xfa") and frames[2] == OPUS_SILENCE  # DAVE frames; silence in the clear
        dave = vc._connection.dave_session
        assert dave is not None
        assert [dave.decrypt(sam.id, davey.MediaType.audio, f) for f in frames[:2]] == [b"\xfc\x03\x04"] * 2


async def test_dave_a_bot_joining_people_is_welcomed_and_membership_follows_the_channel(
    dave_fake: FakeDiscord,
) -> None:
    fake = dave_fake
    ada, sam, kim = fake.add_bot("token-ada", "Ada"), fake.add_user("Sam"), fake.add_user("Kim")
    guild = fake.add_guild("Guild", owner=sam, members=[ada, kim])
    lounge = fake.add_channel(guild, "Lounge", "voice")
    await fake.user_joins_voice(sam, lounge)
    client = make_client(fake)
    async with running((client, "token-ada")):
        vc = await voice_channel(client, lounge.id).connect(timeout=5, cls=Recording)
        session = await fake.voice.wait_dave(ada)
        assert session.dave_commits == [] and session.dave_ready == [1]  # joined by welcome (op 30)
        assert fake.voice.dave_members(guild, lounge) == [sam.id, ada.id]

        await fake.user_joins_voice(kim, lounge)
        voice = fake.voice
        await voice.wait_for(lambda: voice.dave_settled(guild, lounge) and voice.dave_epoch(guild, lounge) == 2)
        await fake.user_leaves_voice(sam, guild)
        await voice.wait_for(lambda: voice.dave_settled(guild, lounge) and voice.dave_epoch(guild, lounge) == 3)
        assert fake.voice.dave_members(guild, lounge) == [None, ada.id, kim.id] and not fake.voice.dave_errors
        assert session.dave_executed == [1, 2, 3]
        kim_dave = fake.voice.participant_dave(kim)
        assert kim_dave.own_leaf_index == 2
        await until(
            lambda: (
                (dave := vc._connection.dave_session) is not None and dave.get_user_ids() == [str(ada.id), str(kim.id)]
            )
        )

        vc.send_audio_packet(b"\xfc\x05", encode=False)
        packet = (await fake.voice.wait_for_packets(ada, 1))[-1]
        assert (packet.opus, packet.dave, packet.dave_error) == (b"\xfc\x05", True, None)
