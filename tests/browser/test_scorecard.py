"""/scorecard: every figure on the page (elements with data-figure="FORECASTER.FIELD[.SUB]") is
the number /v1/scorecard serves."""

import math

from conftest import DESKTOP

REQUIRED = [
    "median_abs_log_error",
    "mean_abs_log_error",
    "mape_pct",
    "coverage_80.observed_pct",
    "coverage_95.observed_pct",
    "confidence.brier",
]


def served(scorecard, figure):
    name, *fields = figure.split(".")
    forecasters = {f["name"]: f for f in scorecard["forecasters"]}
    assert name in forecasters, f"data-figure={figure}: no forecaster {name}"
    value = forecasters[name]
    for field in fields:
        assert isinstance(value, dict) and field in value, f"data-figure={figure}: no field {field}"
        value = value[field]
    return value


def test_scorecard_figures_equal_the_api(open_page, server):
    scorecard = server.json("/v1/scorecard")
    page, _ = open_page(viewport=DESKTOP)
    page.goto("/scorecard")
    figures = page.locator("[data-figure]").evaluate_all(
        "(els) => els.map((e) => [e.getAttribute('data-figure'), e.textContent.trim()])"
    )
    assert figures, "the page carries its numbers in data-figure elements"
    for figure, text in figures:
        value = served(scorecard, figure)
        assert isinstance(value, (int, float)), f"{figure} is not a number in the API"
        shown = float(text.replace(",", "").rstrip("%"))
        assert math.isclose(shown, value, rel_tol=0, abs_tol=0), f"{figure}: page {text}, API {value}"
    shown = {f for f, _ in figures}
    missing = [
        f"{f['name']}.{field}"
        for f in scorecard["forecasters"]
        for field in REQUIRED
        if f"{f['name']}.{field}" not in shown
    ]
    assert missing == []
