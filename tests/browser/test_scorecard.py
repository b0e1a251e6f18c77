"""/scorecard: every figure on the page (elements with data-figure="PATH", a path into the
document) is the number /v1/scorecard serves; its tables fit their boxes."""

import math

import pytest
from conftest import DESKTOP, PHONE


def served(scorecard, path):
    """The value /v1/scorecard serves at a data-figure path ("month_end.bridged.mark.
    median_abs_log_error", "indices.0.level": object members and list indices)."""
    value = scorecard
    for part in path.split("."):
        if isinstance(value, list):
            assert part.isdigit() and int(part) < len(value), f"data-figure={path}: no item {part}"
            value = value[int(part)]
        else:
            assert isinstance(value, dict) and part in value, f"data-figure={path}: no field {part}"
            value = value[part]
    return value


def test_scorecard_figures_equal_the_api(open_page, server):
    scorecard = server.json("/v1/scorecard")
    page, _ = open_page(viewport=DESKTOP)
    page.goto("/scorecard")
    figures = page.locator("[data-figure]").evaluate_all(
        "(els) => els.map((e) => [e.getAttribute('data-figure'), e.textContent.trim()])"
    )
    assert len(figures) > 50, "the page carries its numbers in data-figure elements"
    for figure, text in figures:
        value = served(scorecard, figure)
        if value is None:
            assert text == "\N{EN DASH}", f"{figure}: the API has none, the page shows {text}"
            continue
        assert isinstance(value, (int, float)), f"{figure} is not a number in the API"
        shown = float(text.replace(",", "").rstrip("%"))
        assert math.isclose(shown, value, rel_tol=0, abs_tol=0), f"{figure}: page {text}, API {value}"
    shown = {f for f, _ in figures}
    for score in ("bridged", "next_reported"):
        for number in scorecard["numbers"]:
            name = number["name"] if isinstance(number, dict) else number
            for field in ("median_abs_log_error", "mean_abs_log_error"):
                assert f"month_end.{score}.{name}.{field}" in shown
    for field in ("coverage_80.observed_pct", "coverage_95.observed_pct", "confidence.brier", "confidence.brier_skill"):
        assert f"month_end.{field}" in shown


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_main_table_fits_its_box(open_page, viewport):
    """The scores table (three numbers on three scores) is never wider than its box, at 1280
    and 390 pixels; at 1280 no table is; on a phone, a wider one scrolls inside its own box,
    never the page."""
    page, _ = open_page(viewport=viewport)
    page.goto("/scorecard")
    boxes = page.locator("main .table-scroll").evaluate_all(
        "(ds) => ds.map((d) => [d.getAttribute('aria-label'), d.querySelector('table').getBoundingClientRect().width,"
        " d.clientWidth])"
    )
    assert boxes, "the tables are in scroll boxes"
    main = next(b for b in boxes if b[0] == "Scores by number")
    assert main[1] <= main[2] + 1, f"the scores table is {main[1]} wide in a box of {main[2]}"
    if viewport == DESKTOP:
        assert [b for b in boxes if b[1] > b[2] + 1] == []
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
