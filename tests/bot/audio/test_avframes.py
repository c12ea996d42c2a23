"""PCM ↔ PyAV frames for any channel count."""

from __future__ import annotations

import av
import pytest

from bot.media.audio._avframes import layout_name


@pytest.mark.parametrize("channels", [1, 2, 3, 6])
def test_every_channel_count_has_a_layout(channels: int) -> None:
    # More than two channels once raised TypeError: PyAV takes a layout name, not a number.
    assert av.AudioLayout(layout_name(channels)).nb_channels == channels
