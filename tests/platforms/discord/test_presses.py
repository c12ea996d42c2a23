"""Discord buttons as components: laid out in Discord's rows, kept by no one in discord.py."""

from __future__ import annotations

from bot.kernel.buttons import buttons_in
from platforms.discord._presses import components_of


async def test_no_buttons_no_components() -> None:
    assert components_of(buttons_in({"text": "hi"})) is None
    assert components_of(buttons_in({"buttons": [{"label": "", "value": "x"}]})) is None  # left out: no label


async def test_twenty_five_long_labels_fit_in_five_rows_of_five() -> None:
    view = components_of(
        buttons_in({"buttons": [{"label": f"a rather long label {i}", "value": str(i)} for i in range(25)]})
    )
    assert view is not None and view.is_finished()  # discord.py keeps no callback for it
    rows = view.to_components()
    assert [len(row["components"]) for row in rows] == [5] * 5
    assert rows[0]["components"][0] == {
        "type": 2,
        "style": 1,
        "disabled": False,
        "label": "a rather long label 0",
        "custom_id": "troupe:0",
    }


async def test_short_labels_are_laid_out_for_reading() -> None:
    view = components_of(
        buttons_in({"buttons": [{"label": "Yes", "value": "y"}, {"label": "A" * 40, "value": "long"}]})
    )
    assert view is not None
    assert [[c["label"] for c in row["components"]] for row in view.to_components()] == [["Yes"], ["A" * 40]]
