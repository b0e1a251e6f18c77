"""DataFrame helpers (the ``pandas`` extra). pandas is imported only when one is asked for.

Frames are built straight from the decoded JSON, not through the dataclasses, and carry the
response's meta in ``.attrs["meta"]`` as a dict of strings (so it survives copies, pickling
and Parquet metadata). The callers hand that dict over (``Meta.to_dict()``): this module
imports nothing of the package, so the models can import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import pandas as pd

MetaDict = Optional[Mapping[str, str]]

__all__ = [
    "BACKTEST_COLUMNS",
    "COMPANY_COLUMNS",
    "backtest_frame",
    "companies_frame",
    "company_row",
    "constituents_frame",
    "events_frame",
    "index_csv_frame",
    "index_frame",
    "indices_frame",
    "month_ends_frame",
    "require_pandas",
    "sectors_frame",
    "series_csv_frame",
    "series_frame",
    "targets_frame",
]

COMPANY_COLUMNS = (
    "slug",
    "name",
    "aliases",
    "sector",
    "status",
    "as_of_date",
    "value_usd",
    "lower_usd",
    "upper_usd",
    "confidence",
    "delta_30d_pct",
    "last_event_on",
    "last_event_type",
    "last_event_usd",
    "days_since_last_event",
    "outcome_type",
    "outcome_on",
    "vs_last_event_pct",
    "outcome_kind",
    "last_event_source_grade",
    "next_reported_usd",
)
SERIES_COLUMNS = ("date", "mark_usd", "lower_usd", "upper_usd")
EVENT_COLUMNS = (
    "occurred_on",
    "event_id",
    "event_type",
    "valuation_usd",
    "reported_as",
    "source_url",
    "source_grade",
    "note",
    "supersedes",
    "superseded_by",
    "retracted_by",
)
INDEX_COLUMNS = ("date", "level", "lower", "upper", "constituents")
INDICES_COLUMNS = ("index", "name", "sector", "first_date", "last_date", *INDEX_COLUMNS)
CONSTITUENT_COLUMNS = ("slug", "name", "weight", "mark_usd", "lower_usd", "upper_usd", "value_weight")
NUMBER_NAMES = ("mark", "next_print", "last_print")
OFFSET_NAMES = ("q10", "q90", "q025", "q975")
TARGET_COLUMNS = (
    "slug",
    "event_id",
    "kind",
    "event_type",
    "occurred_on",
    "marked_on",
    "gap_years",
    *(f"log_error_{name}" for name in NUMBER_NAMES),
    *(f"band_{name}" for name in OFFSET_NAMES),
    "confidence",
    "inside_80",
    "inside_95",
    "hit",
    "residuals_known",
    "observed_usd",
    "scored_usd",
    "mark_usd",
    "next_print_usd",
    "last_print_usd",
)
MONTH_END_COLUMNS = (
    "slug",
    "anchor_event_id",
    "anchor_type",
    "day",
    "gap_years",
    "next_kind",
    "next_on",
    *(f"next_reported_error_{name}" for name in NUMBER_NAMES),
    *(f"bridged_error_{name}" for name in NUMBER_NAMES),
    *(f"band_{name}" for name in OFFSET_NAMES),
    "confidence",
    "inside_80",
    "inside_95",
    "hit",
    "residuals_known",
    "mark_log",
    "next_print_log",
    "last_print_log",
    "next_log",
    "bridged_log",
)
BACKTEST_COLUMNS = (
    "kind",
    "event_type",
    "occurred_on",
    "marked_on",
    "gap_years",
    "mark_usd",
    "band_80_lower",
    "band_80_upper",
    "band_95_lower",
    "band_95_upper",
    "confidence",
    "next_print_usd",
    "last_print_usd",
    "event_id",
    "observed_usd",
    "scored_usd",
    "error_pct",
    "above",
    "inside_80",
    "inside_95",
    "hit",
)
# What the research form of a backtest leaves out (of events), and error_pct's nulls: floats
# in both forms, so the columns have one dtype whichever form a frame was built from.
BACKTEST_FLOATS = (
    "band_95_lower",
    "band_95_upper",
    "last_print_usd",
    "observed_usd",
    "scored_usd",
    "error_pct",
)
# What the public form of the scorecard's rows leaves out: empty columns there, of floats (NaN).
TARGET_FULL_ONLY_NUMBERS = ("observed_usd", "scored_usd", "mark_usd", "next_print_usd", "last_print_usd")
MONTH_END_FULL_ONLY_NUMBERS = ("mark_log", "next_print_log", "last_print_log", "next_log", "bridged_log")


def require_pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("DataFrames need pandas: pip install 'valuation-marks[pandas]'") from exc
    return pandas


def _dates(pd: Any, column: Any) -> Any:
    return pd.to_datetime(column, format="%Y-%m-%d")


def _attrs(frame: pd.DataFrame, meta: MetaDict, **extra: Any) -> pd.DataFrame:
    frame.attrs["meta"] = dict(meta) if meta is not None else None
    frame.attrs.update(extra)
    return frame


def company_row(item: Mapping[str, Any]) -> tuple[Any, ...]:
    """The ``companies_frame`` row of a ``listCompanies`` item (decoded JSON)."""
    mark = item.get("latest_mark") or {}
    last = item.get("last_event") or {}
    outcome = item.get("outcome") or {}
    return (
        item["slug"],
        item["name"],
        "; ".join(item.get("aliases") or ()),
        item.get("sector"),
        item.get("status"),
        mark.get("as_of_date"),
        mark.get("value_usd"),
        mark.get("lower_usd"),
        mark.get("upper_usd"),
        mark.get("confidence"),
        item.get("delta_30d_pct"),
        last.get("occurred_on"),
        last.get("event_type"),
        last.get("valuation_usd"),
        item.get("days_since_last_event"),
        outcome.get("event_type"),
        outcome.get("occurred_on"),
        mark.get("vs_last_event_pct"),
        outcome.get("kind"),
        last.get("source_grade"),
        (mark.get("next_reported") or {}).get("value_usd"),
    )


def companies_frame(rows: Sequence[tuple[Any, ...]], meta: MetaDict) -> pd.DataFrame:
    """One row per company, indexed by slug. Dates are datetime64 (NaT where there is none),
    days_since_last_event a nullable integer (Int64), the percentages, last_event_usd and
    next_reported_usd floats (NaN where there is none)."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(rows, columns=COMPANY_COLUMNS)
    for name in ("as_of_date", "last_event_on", "outcome_on"):
        frame[name] = _dates(pd, frame[name])
    for name in ("delta_30d_pct", "vs_last_event_pct", "last_event_usd", "next_reported_usd"):
        frame[name] = frame[name].astype("float64")
    frame["days_since_last_event"] = frame["days_since_last_event"].astype("Int64")
    frame = frame.set_index("slug")
    return _attrs(frame, meta)


def sectors_frame(sectors: Iterable[Mapping[str, Any]], meta: MetaDict) -> pd.DataFrame:
    """One row per sector, indexed by its name: companies, private."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(list(sectors), columns=("sector", "companies", "private"))
    frame = frame.set_index("sector")
    return _attrs(frame, meta)


def series_csv_frame(
    source: Any, meta: MetaDict, *, compression: Optional[str] = None, **attrs: Any
) -> pd.DataFrame:
    """The CSV form of a series (``getMarkSeries``, or the series export: a file path or a text
    stream, gzip or not) as a DataFrame: indexed by date for one company, by (slug, date) for
    several.

    Its text cells are the slug and the date, neither of which can start like a formula, so the
    table reads back exactly as the JSON would (the frames are equal).
    """
    pd = require_pandas()
    frame = pd.read_csv(
        source,
        dtype={"slug": "str", "mark_usd": "int64", "lower_usd": "int64", "upper_usd": "int64"},
        keep_default_na=False,
        compression=compression,
    )
    frame["date"] = _dates(pd, frame["date"])
    if "slug" in attrs:
        frame = frame.drop(columns="slug").set_index("date")
    else:
        frame = frame.set_index(["slug", "date"])
    return _attrs(frame, meta, **attrs)


def series_frame(
    points: Iterable[Mapping[str, Any]], meta: MetaDict, *, slug: str, coverage: int
) -> pd.DataFrame:
    """One row per day, indexed by date."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(list(points), columns=SERIES_COLUMNS)
    frame["date"] = _dates(pd, frame["date"])
    frame = frame.set_index("date")
    return _attrs(frame, meta, slug=slug, coverage=coverage)


def indices_frame(indices: Iterable[Mapping[str, Any]], meta: MetaDict) -> pd.DataFrame:
    """One row per index, indexed by its id: name, sector, first_date, last_date, then its
    latest day's date, level, lower, upper and constituents."""
    pd = require_pandas()
    rows = [
        (
            *(item.get(name) for name in INDICES_COLUMNS[:5]),
            *((item.get("latest") or {}).get(name) for name in INDEX_COLUMNS),
        )
        for item in indices
    ]
    frame = pd.DataFrame.from_records(rows, columns=INDICES_COLUMNS)
    for name in ("first_date", "last_date", "date"):
        frame[name] = _dates(pd, frame[name])
    frame = frame.set_index("index")
    return _attrs(frame, meta)


def index_frame(
    points: Iterable[Mapping[str, Any]], meta: MetaDict, *, index: str, coverage: int
) -> pd.DataFrame:
    """An index's days, indexed by date: level, lower, upper (floats), constituents (int64)."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(list(points), columns=INDEX_COLUMNS)
    frame["date"] = _dates(pd, frame["date"])
    for name in ("level", "lower", "upper"):
        frame[name] = frame[name].astype("float64")
    frame["constituents"] = frame["constituents"].astype("int64")
    frame = frame.set_index("date")
    return _attrs(frame, meta, index=index, coverage=coverage)


def index_csv_frame(source: Any, meta: MetaDict, *, index: str, coverage: int) -> pd.DataFrame:
    """The CSV form of an index's series (``getIndex``) as ``index_frame`` has it. Its text
    cells are the index's id and the date, neither of which can start like a formula."""
    pd = require_pandas()
    frame = pd.read_csv(
        source,
        dtype={
            "index": "str",
            "level": "float64",
            "lower": "float64",
            "upper": "float64",
            "constituents": "int64",
        },
        keep_default_na=False,
    )
    frame["date"] = _dates(pd, frame["date"])
    frame = frame.drop(columns="index").set_index("date")
    return _attrs(frame, meta, index=index, coverage=coverage)


def constituents_frame(members: Iterable[Mapping[str, Any]], meta: MetaDict, **attrs: Any) -> pd.DataFrame:
    """One row per constituent, in the API's order (largest mark first), indexed by slug."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(list(members), columns=CONSTITUENT_COLUMNS)
    frame["weight"] = frame["weight"].astype("float64")
    frame["value_weight"] = frame["value_weight"].astype("float64")
    frame = frame.set_index("slug")
    return _attrs(frame, meta, **attrs)


def events_frame(events: Iterable[Mapping[str, Any]], meta: MetaDict, *, slug: str) -> pd.DataFrame:
    """One row per record of the history (corrected and withdrawn ones included), indexed by the
    day it occurred on."""
    pd = require_pandas()
    frame = pd.DataFrame.from_records(list(events), columns=EVENT_COLUMNS)
    frame["occurred_on"] = _dates(pd, frame["occurred_on"])
    frame = frame.set_index("occurred_on")
    return _attrs(frame, meta, slug=slug)


def _nested(row: Mapping[str, Any], member: str, names: Sequence[str]) -> tuple[Any, ...]:
    inner = row.get(member) or {}
    return tuple(inner.get(name) for name in names)


def targets_frame(targets: Iterable[Mapping[str, Any]], meta: MetaDict, **attrs: Any) -> pd.DataFrame:
    """One row per event-day target of the scorecard, in either form: the public form leaves
    slug, event_id and the dollar columns empty."""
    pd = require_pandas()
    rows = [
        (
            *(target.get(name) for name in TARGET_COLUMNS[:7]),
            *_nested(target, "log_error", NUMBER_NAMES),
            *_nested(target, "band_offsets", OFFSET_NAMES),
            *(target.get(name) for name in TARGET_COLUMNS[14:]),
        )
        for target in targets
    ]
    frame = pd.DataFrame.from_records(rows, columns=TARGET_COLUMNS)
    frame["occurred_on"] = _dates(pd, frame["occurred_on"])
    frame["marked_on"] = _dates(pd, frame["marked_on"])
    for name in TARGET_FULL_ONLY_NUMBERS:
        if frame[name].isna().all():
            frame[name] = frame[name].astype("float64")
    return _attrs(frame, meta, **attrs)


def month_ends_frame(month_ends: Iterable[Mapping[str, Any]], meta: MetaDict, **attrs: Any) -> pd.DataFrame:
    """One row per scored month-end of the scorecard, in either form: the public form leaves
    the company, the anchor and the logs empty."""
    pd = require_pandas()
    rows = [
        (
            *(row.get(name) for name in MONTH_END_COLUMNS[:7]),
            *_nested(row, "next_reported_error", NUMBER_NAMES),
            *_nested(row, "bridged_error", NUMBER_NAMES),
            *_nested(row, "band_offsets", OFFSET_NAMES),
            *(row.get(name) for name in MONTH_END_COLUMNS[17:]),
        )
        for row in month_ends
    ]
    frame = pd.DataFrame.from_records(rows, columns=MONTH_END_COLUMNS)
    frame["day"] = _dates(pd, frame["day"])
    frame["next_on"] = _dates(pd, frame["next_on"])
    for name in MONTH_END_FULL_ONLY_NUMBERS:
        frame[name] = frame[name].astype("float64")
    return _attrs(frame, meta, **attrs)


def backtest_frame(
    targets: Iterable[Mapping[str, Any]],
    meta: MetaDict,
    *,
    slug: str,
    disclosure: str,
    tolerance_pct: Optional[float],
) -> pd.DataFrame:
    """One row per target of a company's backtest, in date order, in either form: the research
    form leaves band_95_* and last_print_usd empty, and an event's event_id, observed_usd and
    error_pct."""
    pd = require_pandas()
    rows = []
    for target in targets:
        band_80, band_95 = target.get("band_80") or {}, target.get("band_95") or {}
        rows.append(
            (
                *(target.get(name) for name in BACKTEST_COLUMNS[:6]),
                band_80.get("lower"),
                band_80.get("upper"),
                band_95.get("lower"),
                band_95.get("upper"),
                *(target.get(name) for name in BACKTEST_COLUMNS[10:]),
            )
        )
    frame = pd.DataFrame.from_records(rows, columns=BACKTEST_COLUMNS)
    frame["occurred_on"] = _dates(pd, frame["occurred_on"])
    frame["marked_on"] = _dates(pd, frame["marked_on"])
    for name in BACKTEST_FLOATS:
        frame[name] = frame[name].astype("float64")
    return _attrs(frame, meta, slug=slug, disclosure=disclosure, tolerance_pct=tolerance_pct)
