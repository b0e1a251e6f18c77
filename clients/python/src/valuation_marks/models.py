"""Typed results: frozen dataclasses built from the API's JSON.

Every model keeps the JSON object it was built from in ``raw`` (not compared, not shown), so
fields the API adds after this release are still at hand (``item.raw["new_field"]``); fields
it does not know are otherwise ignored (the API only ever adds fields under /v1). Dates
(``YYYY-MM-DD``) become ``datetime.date``; dataset versions stay strings, as they are what
``changes(since=...)`` takes back. Every result carries ``meta``: the response's own, or for
list items and export lines the meta of the page or export they came in.

A member that is one of several kinds of object, told apart by a tag (a company's
``observations``, by ``part``), is a ``Union`` of models whose tag field is a ``Literal``:
``isinstance`` or the tag narrows it. The scorecard's rows (``ScorecardTargets``) come in two
forms, by the key's tier: the members only the full form has (slugs, event ids, dollars, logs)
are ``None`` in the public one, and ``disclosure`` says which form a document is. A company's
backtest comes the same way: ``research`` (where each event fell, not its value) or ``full``
(pro and above).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping
from datetime import date
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Literal,
    Optional,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from ._frames import (
    backtest_frame,
    constituents_frame,
    events_frame,
    index_frame,
    indices_frame,
    month_ends_frame,
    sectors_frame,
    series_frame,
    targets_frame,
)
from .errors import ResponseError, SignatureError
from .signing import (
    KeysLike,
    TrustedKeys,
    TrustedLike,
    canonical_json,
    verify_record,
    verify_record_with_server_keys,
)
from .transparency import (
    Checkpoint,
    HistoryVerification,
    LogVerification,
    PinnedLike,
    band_95_digest,
    leaf_hash,
    verify_log,
    verify_published,
)

if TYPE_CHECKING:
    import pandas as pd

if sys.version_info >= (3, 10):  # pragma: no cover - depends on the interpreter
    from types import UnionType

    _UNION_TYPES: tuple[Any, ...] = (Union, UnionType)
else:  # pragma: no cover
    _UNION_TYPES = (Union,)

__all__ = [
    "Backtest",
    "BacktestSummary",
    "BacktestTarget",
    "Band",
    "Band95",
    "BandOffsets",
    "Change",
    "ChangesPage",
    "CompaniesPage",
    "Company",
    "CompanyListItem",
    "CompanyOutcome",
    "Comparison",
    "ComparisonDifference",
    "ConfidenceScore",
    "CoverageScore",
    "ErrorsByNumber",
    "EventDayScore",
    "EventDayScores",
    "Events",
    "Explanation",
    "ExportCompany",
    "ExportHeader",
    "ExportMarkPoint",
    "ExportSeries",
    "GapCoverage",
    "InForce",
    "IndexConstituent",
    "IndexConstituents",
    "IndexPoint",
    "IndexScorecardSummary",
    "IndexSeries",
    "IndexSummary",
    "Indices",
    "LastEvent",
    "LatestPrivateSummary",
    "LogBand95",
    "LogConsistency",
    "LogEntry",
    "LogEntryOutcome",
    "LogErrors",
    "LogFileEntry",
    "LogHead",
    "LogTree",
    "LogVersion",
    "MarkEvent",
    "MarkPoint",
    "MarkSeriesPoint",
    "Meta",
    "MonthEndScore",
    "NextReported",
    "Observation",
    "ObservationDrift",
    "ObservationEvent",
    "ObservationOutcome",
    "PageInfo",
    "ProfileKnot",
    "PublicationLog",
    "Published",
    "PublishedEntry",
    "Resolution",
    "ScoreErrors",
    "Scorecard",
    "ScorecardMonthEnd",
    "ScorecardNumber",
    "ScorecardTarget",
    "ScorecardTargets",
    "Sector",
    "Sectors",
    "Series",
    "SigningKey",
    "SigningKeys",
    "SilenceCell",
    "Usage",
    "UsageLimits",
    "from_json",
    "meta_from_headers",
]

JSON = Mapping[str, Any]
M = TypeVar("M")


def _raw() -> Any:
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


def _json_name(name: str) -> Any:
    """A field read from the JSON member ``name``, which is not a Python name (``from``)."""
    return dataclasses.field(default=None, metadata={"json": name})


def json_name(field: dataclasses.Field[Any]) -> str:
    """The JSON member a model's field is read from: its own name, unless it says otherwise."""
    name: str = field.metadata.get("json", field.name)
    return name


# --------------------------------------------------------------------------------------------
# Meta and the small building blocks


@dataclasses.dataclass(frozen=True)
class Meta:
    """Data mode, provenance and versions of a response. Read it before using any value."""

    data_mode: str
    provenance: str
    methodology_version: str
    dataset_version: str
    as_of: date
    disclaimer: str
    raw: JSON = _raw()

    @property
    def is_live(self) -> bool:
        """True for live marks; today's data is ``illustrative`` / ``backtest``."""
        return self.data_mode == "live" and self.provenance == "live"

    def to_dict(self) -> dict[str, str]:
        """The meta as plain strings (what DataFrames carry in ``.attrs["meta"]``)."""
        return {
            "data_mode": self.data_mode,
            "provenance": self.provenance,
            "methodology_version": self.methodology_version,
            "dataset_version": self.dataset_version,
            "as_of": self.as_of.isoformat(),
            "disclaimer": self.disclaimer,
        }


#: Where a CSV answer carries its meta: one response header per field.
META_HEADERS = {
    "data_mode": "X-Data-Mode",
    "provenance": "X-Provenance",
    "methodology_version": "X-Methodology-Version",
    "dataset_version": "X-Dataset-Version",
    "as_of": "X-As-Of",
    "disclaimer": "X-Disclaimer",
}


def meta_from_headers(headers: Mapping[str, str]) -> Optional[Meta]:
    """The meta of a CSV answer, read from its X-* headers (None when it has none)."""
    found = {field: headers.get(header) for field, header in META_HEADERS.items()}
    if any(value is None for value in found.values()):
        return None
    return from_json(Meta, found)


@dataclasses.dataclass(frozen=True)
class NextReported:
    """The next-print forecast published beside a mark: the valuation at which the company is
    likely to be next reported (its next round, tender, fund mark or outcome).

    It is not today's value estimate (the mark is): reported valuations are selected (companies
    announce rises), so it runs above the value on the day. ``label`` says so in words.
    """

    value_usd: int
    label: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class MarkPoint:
    """A latest mark: today's value estimate and its 80% interval, in US dollars.

    ``confidence`` is a published track record, not a probability for this company: the share
    of past month-end marks whose next reported valuation came within +/-20%, the same for
    every company marked on the same day. ``next_reported`` is the next-print forecast beside
    the mark (``None`` once the company's private period ended: listed, sold, bankrupt, wound
    down). ``vs_last_event_pct`` is the mark against the company's last event's value, in
    percent (``None`` when that value is 0). ``current`` says whether the mark is a value today:
    true while the company is private (a sale agreed and pending included), false for a listed,
    sold, bankrupt or wound-down company, whose latest mark is its last private one.
    """

    as_of_date: date
    value_usd: float
    lower_usd: float
    upper_usd: float
    confidence: float
    coverage: Optional[int]
    vs_last_event_pct: Optional[float]
    next_reported: Optional[NextReported] = None
    current: Optional[bool] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Band95:
    lower_usd: float
    upper_usd: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ExportMarkPoint:
    """A latest mark as the export carries it: with the 95% band of the same day (the other
    fields as ``MarkPoint``'s)."""

    as_of_date: date
    value_usd: float
    lower_usd: float
    upper_usd: float
    confidence: float
    coverage: Optional[int]
    band_95: Band95
    vs_last_event_pct: Optional[float]
    next_reported: Optional[NextReported] = None
    current: Optional[bool] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class MarkSeriesPoint:
    date: date
    mark_usd: float
    lower_usd: float
    upper_usd: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class PageInfo:
    limit: int
    next_cursor: Optional[str]
    has_more: bool
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Band:
    lower: float
    upper: float
    raw: JSON = _raw()


# --------------------------------------------------------------------------------------------
# Companies


@dataclasses.dataclass(frozen=True)
class LastEvent:
    """A company's last observation of value on or before the as-of, in its effective view
    (corrections read, withdrawn records left out): for a company still private, what its
    latest mark starts from. No source or note; ``source_grade`` is the grade of its source
    (``"A"`` a primary document, ``"B"`` a major news organisation, ``"C"`` another outlet,
    ``"D"`` a blog or a copy; ``None`` for a record not yet graded)."""

    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    source_grade: Optional[str] = None
    raw: JSON = _raw()


#: The outcome kinds that end a company's private period (``sale_agreed`` and ``listing_agreed``
#: do not).
ENDED_KINDS = frozenset({"listed", "sold", "bankrupt", "wound_down"})


@dataclasses.dataclass(frozen=True)
class CompanyOutcome:
    """What ended a company's private period, or holds its mark, by ``kind``:

    - ``listed`` (an ``ipo``, ``direct_listing`` or ``spac_listing``), ``sold`` (an
      ``acquisition_closed``), ``bankrupt`` (a ``bankruptcy``), ``wound_down`` (a ``wind_down``):
      the private period ended; the latest mark is the last private one (the day before) and
      ``latest_mark.next_reported`` is ``None``;
    - ``sale_agreed`` (an ``acquisition`` no later record closed or terminated) and
      ``listing_agreed`` (a listing ``announced``, a SPAC merger or direct listing signed, that no
      later record completed or terminated): the mark holds the agreed price while the deal is
      pending.

    ``valuation_usd`` is as reported: 0 for a write-off or a sale at an undisclosed price.
    """

    event_id: str
    event_type: str
    occurred_on: date
    valuation_usd: float
    kind: str = ""
    raw: JSON = _raw()

    @property
    def ended(self) -> bool:
        """True when the outcome ended the private period (every kind but the agreed, pending ones)."""
        return self.kind in ENDED_KINDS


@dataclasses.dataclass(frozen=True)
class CompanyListItem:
    """A company as ``listCompanies`` shows it.

    ``aliases`` are the other names it is known by (former and brand names: ``("Cursor",)`` for
    anysphere), which ``companies(q=...)`` searches too; empty when it has none.

    Its mark explained: ``last_event`` (the event it moves from, with its source grade),
    ``days_since_last_event`` (to the dataset's as-of), ``latest_mark.vs_last_event_pct``,
    ``latest_mark.next_reported`` (the next-print forecast beside the mark), ``latest_mark.confidence``
    (a track record, the same for every company marked that day) and ``outcome`` with its ``kind``
    (``None`` while the company is private with no sale agreed). ``delta_30d_pct`` is ``None`` for
    a series that ended before the as-of (a company whose private period ended);
    ``delta_30d_basis`` says what it rests on: ``"events"`` when a value was reported within the
    30 days, ``"profile"`` when it is only the method's drift with the time since the last one
    (``None`` with no ``delta_30d_pct``).
    """

    slug: str
    name: str
    aliases: tuple[str, ...]
    sector: str
    status: str
    latest_mark: MarkPoint
    delta_30d_pct: Optional[float]
    meta: Meta
    last_event: Optional[LastEvent]
    days_since_last_event: Optional[int]
    outcome: Optional[CompanyOutcome]
    delta_30d_basis: Optional[str] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class CompaniesPage:
    """One page of ``listCompanies``."""

    meta: Meta
    companies: tuple[CompanyListItem, ...]
    page: PageInfo
    universe_note: Optional[str]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[CompanyListItem]:
        return iter(self.companies)

    def __len__(self) -> int:
        return len(self.companies)


@dataclasses.dataclass(frozen=True)
class Sector:
    """A sector and how many companies of the caller's universe it has, and of them how many
    are still marked as private."""

    sector: str
    companies: int
    private: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Sectors:
    """``listSectors``: every sector of the caller's universe (a free key's: its 10 companies),
    in name order. The names are what ``companies(sector=...)`` takes."""

    meta: Meta
    sectors: tuple[Sector, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[Sector]:
        return iter(self.sectors)

    def __len__(self) -> int:
        return len(self.sectors)

    def __getitem__(self, name: str) -> Sector:
        found = next((sector for sector in self.sectors if sector.sector == name), None)
        if found is None:
            raise KeyError(name)
        return found

    def to_pandas(self) -> pd.DataFrame:
        """One row per sector, indexed by its name: companies, private."""
        return sectors_frame(self.raw.get("sectors", ()), self.meta.to_dict())


@dataclasses.dataclass(frozen=True)
class ObservationEvent:
    """The event a latest mark starts from (``part == "event"``): the last observation of value
    on or before the mark's day, with its source grade. All of the mark moves with its value
    (``weight`` 1)."""

    part: Literal["event"]
    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    weight: float
    explanation: str
    source_grade: Optional[str] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ObservationDrift:
    """What today's value estimate adds to that event's value for the days since (``part ==
    "drift"``), in percent: learnt from how values moved between prints of companies quiet as
    long; 0 while an agreed sale is pending (the agreed price holds)."""

    part: Literal["drift"]
    days: int
    drift_pct: float
    explanation: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ObservationOutcome:
    """What ended the company's private period (``part == "outcome"``): its ``kind`` (``listed``,
    ``sold``, ``bankrupt``, ``wound_down``) and record. The latest mark is the last private one,
    of the day before, not a value today."""

    part: Literal["outcome"]
    kind: str
    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    explanation: str
    raw: JSON = _raw()


#: One part of what a latest mark rests on, told apart by ``part`` (or ``isinstance``).
Observation = Union[ObservationEvent, ObservationDrift, ObservationOutcome]


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The latest mark in words, built for its ``case``: ``recently_priced`` (last reported 90
    days ago or less), ``quiet`` (longer ago), ``sale_agreed`` or ``listing_agreed`` (a deal
    agreed and pending), or how the private period ended (``listed``, ``sold``, ``bankrupt``,
    ``wound_down``). Every figure in ``summary`` is one the profile carries, in three significant
    figures."""

    case: str
    summary: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Company:
    """A company profile: latest mark and what it rests on.

    ``observations`` are the parts of the latest mark: the event it starts from
    (``ObservationEvent``), what the method adds for the days since (``ObservationDrift``), and
    for a company whose private period ended, what ended it (``ObservationOutcome``). Values and
    grades only, without sources or notes: ``events()`` has the whole history (pro and above).
    ``last_event``, ``days_since_last_event``, ``outcome`` and the latest mark's fields as on
    every company item, and ``aliases`` (former and brand names); ``explanation`` says the mark
    in words; ``backtest()`` says how the method did on the company.
    """

    meta: Meta
    slug: str
    name: str
    aliases: tuple[str, ...]
    sector: Optional[str]
    status: Optional[str]
    latest_mark: Optional[MarkPoint]
    delta_30d_pct: Optional[float]
    observations: tuple[Observation, ...]
    last_event: Optional[LastEvent]
    days_since_last_event: Optional[int]
    outcome: Optional[CompanyOutcome]
    delta_30d_basis: Optional[str] = None
    explanation: Optional[Explanation] = None
    raw: JSON = _raw()

    @property
    def starting_event(self) -> Optional[ObservationEvent]:
        """The event the latest mark starts from, if it rests on one."""
        return next((o for o in self.observations if isinstance(o, ObservationEvent)), None)

    @property
    def drift(self) -> Optional[ObservationDrift]:
        """What the method adds for the days since that event."""
        return next((o for o in self.observations if isinstance(o, ObservationDrift)), None)

    @property
    def ending(self) -> Optional[ObservationOutcome]:
        """What ended the company's private period; None while it is private."""
        return next((o for o in self.observations if isinstance(o, ObservationOutcome)), None)


@dataclasses.dataclass(frozen=True)
class Series:
    """A company's daily mark series at one interval coverage (80 or 95)."""

    meta: Meta
    slug: str
    coverage: int
    series: tuple[MarkSeriesPoint, ...]
    raw: JSON = _raw()

    @property
    def points(self) -> tuple[MarkSeriesPoint, ...]:
        """The daily points, oldest first (the JSON ``series`` member)."""
        return self.series

    def __iter__(self) -> Iterator[MarkSeriesPoint]:
        return iter(self.series)

    def __len__(self) -> int:
        return len(self.series)

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame indexed by date (one row per day): mark_usd, lower_usd, upper_usd.

        ``.attrs`` carries ``meta`` (a dict of strings), ``slug`` and ``coverage``.
        """
        meta = self.meta.to_dict()
        return series_frame(self.raw.get("series", ()), meta, slug=self.slug, coverage=self.coverage)


@dataclasses.dataclass(frozen=True)
class MarkEvent:
    """One record of a company's append-only history of publicly reported valuation events.

    ``reported_as`` says how firm the figure was (``closed``, ``announced``, ``in_talks``,
    ``estimate``) and ``source_grade`` the grade of ``source_url`` (``A`` a primary document,
    ``B`` a major news organisation, ``C`` another outlet, ``D`` a blog or a copy); both ``None``
    in records published before those columns and not yet filled in.

    A published record is never changed or removed: a correction is a later record whose
    ``supersedes`` names the one it corrects (whose ``superseded_by`` names it back), a
    withdrawal a later ``retraction`` record (``retracted_by``). ``effective`` says whether the
    marks read this record.
    """

    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    source_url: str
    note: str
    reported_as: Optional[str] = None
    source_grade: Optional[str] = None
    supersedes: Optional[str] = None
    superseded_by: Optional[str] = None
    retracted_by: Optional[str] = None
    raw: JSON = _raw()

    @property
    def effective(self) -> bool:
        """Part of the effective view the marks, lists and pages read: neither corrected nor
        withdrawn by a later record, and not itself a retraction."""
        return self.superseded_by is None and self.retracted_by is None and self.event_type != "retraction"


@dataclasses.dataclass(frozen=True)
class Events:
    """A company's append-only event history: every record, oldest first (corrected and
    withdrawn ones included; ``effective`` has the records the marks read)."""

    meta: Meta
    slug: str
    events: tuple[MarkEvent, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[MarkEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, event_id: str) -> MarkEvent:
        """The record with this id."""
        found = next((event for event in self.events if event.event_id == event_id), None)
        if found is None:
            raise KeyError(event_id)
        return found

    @property
    def effective(self) -> tuple[MarkEvent, ...]:
        """The effective view, oldest first: the newest record of each chain of corrections,
        withdrawn records and retractions left out."""
        return tuple(event for event in self.events if event.effective)

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame of the events, one row each, indexed by ``occurred_on``."""
        return events_frame(self.raw.get("events", ()), self.meta.to_dict(), slug=self.slug)


@dataclasses.dataclass(frozen=True)
class BacktestSummary:
    """A company's scored events (targets of kind ``event``) counted: inside each band, and hits
    (within +/-20% of the mark)."""

    scored_events: int
    inside_80: int
    inside_95: int
    hits: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class BacktestTarget:
    """A scored reported value against the numbers of the day before it.

    ``kind`` is ``event`` (an observation of value after the company's first, forecast from the
    data before its day) or the outcome that ended the private period, marked the day before:
    ``listing``, ``failure`` (a bankruptcy or wind-down) or ``sale`` (a closed sale). The
    numbers of ``marked_on``: the mark (``mark_usd``) and its bands, the ``confidence`` in force
    (the track record), ``next_print_usd`` (the next-print forecast) and, in the full form,
    ``last_print_usd`` (the last reported value).

    ``above``, ``inside_80``, ``inside_95`` and ``hit`` (within +/-20%) say where the observed
    value fell in both forms. In the research form an event's ``event_id``, ``observed_usd`` and
    ``error_pct`` are ``None`` (an outcome's are given), and ``band_95`` and ``last_print_usd``
    always are; the full form has them all. ``observed_usd`` is the value as reported (0 for a
    write-off) and ``scored_usd`` the value as scored (a failure's floored at 1% of the value it
    was marked from); ``error_pct`` is (mark / scored - 1) in percent, and the flags are about
    the scored value.
    """

    kind: str
    event_type: str
    occurred_on: date
    marked_on: date
    gap_years: float
    mark_usd: int
    band_80: Band
    band_95: Optional[Band]
    confidence: float
    event_id: Optional[str]
    observed_usd: Optional[int]
    error_pct: Optional[float]
    above: bool
    inside_80: bool
    inside_95: bool
    hit: bool
    next_print_usd: int = 0
    last_print_usd: Optional[int] = None
    scored_usd: Optional[int] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Backtest:
    """How the method did on one company: every scored reported value with the numbers of the
    day before it, then its outcome (listing, failure or sale), in date order.

    ``disclosure`` is ``"research"`` (a research key: where each event fell, not its value) or
    ``"full"`` (pro and above: every value, the 95% band and the last print). ``hit`` is about
    landing within ``tolerance_pct`` (20) percent of the mark.
    """

    meta: Meta
    slug: str
    methodology_version: str
    disclosure: str
    summary: BacktestSummary
    targets: tuple[BacktestTarget, ...]
    tolerance_pct: Optional[float] = None
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[BacktestTarget]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def to_pandas(self) -> pd.DataFrame:
        """One row per target, in date order: kind, event_type, occurred_on, marked_on, gap_years,
        mark_usd, band_80_lower/upper, band_95_lower/upper, confidence, next_print_usd,
        last_print_usd, event_id, observed_usd, scored_usd, error_pct, above, inside_80, inside_95,
        hit.

        In the research form the columns of what it leaves out are empty (band_95_* and
        last_print_usd everywhere; an event's event_id, observed_usd and error_pct). ``.attrs``
        carries ``meta``, ``slug``, ``disclosure`` and ``tolerance_pct``.
        """
        return backtest_frame(
            self.raw.get("targets", ()),
            self.meta.to_dict(),
            slug=self.slug,
            disclosure=self.disclosure,
            tolerance_pct=self.tolerance_pct,
        )


# --------------------------------------------------------------------------------------------
# Signed records and keys


@dataclasses.dataclass(frozen=True)
class SigningKey:
    """An Ed25519 public key (JWK) that verifies resolution records."""

    kty: str
    crv: str
    x: str
    kid: str
    alg: str
    use: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class SigningKeys:
    """The JWKS of ``/v1/signing-keys``; retired keys stay listed. Carries no meta (None)."""

    keys: tuple[SigningKey, ...]
    meta: Optional[Meta]
    raw: JSON = _raw()

    def get(self, kid: str) -> Optional[SigningKey]:
        return next((key for key in self.keys if key.kid == kid), None)

    def __getitem__(self, kid: str) -> SigningKey:
        key = self.get(kid)
        if key is None:
            raise KeyError(kid)
        return key

    def __contains__(self, kid: object) -> bool:
        return any(key.kid == kid for key in self.keys)

    def __iter__(self) -> Iterator[SigningKey]:
        return iter(self.keys)

    def __len__(self) -> int:
        return len(self.keys)


@dataclasses.dataclass(frozen=True)
class Resolution:
    """A signed resolution record: the mark of record at the dataset's ``as_of``.

    ``basis`` is ``"mark"`` for a company still private (an agreed sale pending included), else
    what ended its private period: ``"listing"``, ``"sale"``, ``"bankruptcy"`` or
    ``"wind_down"``, with ``value_usd`` the outcome's reported value (0 for a write-off or an
    undisclosed price) on ``basis_date`` and the bands of its last private mark (``marked_on``).
    """

    meta: Meta
    record_id: str
    slug: str
    value_usd: float
    band_80: Optional[Band]
    band_95: Optional[Band]
    basis: Optional[str]
    basis_date: Optional[date]
    marked_on: Optional[date]
    dataset_version: str
    methodology_version: str
    as_of: date
    key_id: str
    signature: str
    raw: JSON = _raw()

    def verify(self, trusted: Union[TrustedLike, TrustedKeys], *, keys: Optional[KeysLike] = None) -> bool:
        """Checks the signature against keys you trust, obtained apart from the server.

        ``trusted`` is a path to a JWKS file, a JWKS document, or one or more RFC 7638
        thumbprints of trusted keys (``str``); with thumbprints, the public keys may come from
        ``keys`` (e.g. ``client.signing_keys()``): only a key whose computed thumbprint is
        pinned is used, whatever ``kid`` it claims. ``key_id`` must be the thumbprint of the key
        that verifies.

        Returns True. Raises ``UnknownSigningKey`` if ``key_id`` is not the thumbprint of a
        trusted key and ``SignatureError`` if the record was changed (its fields, or the JSON it
        came from). The signed bytes are the RFC 8785 canonical JSON of the record as sent,
        minus ``signature``, so fields this release does not know are covered too.
        """
        self._check_fields()
        return verify_record(self.raw, trusted, keys=keys)

    def verify_with_server_keys(self, keys: KeysLike) -> bool:
        """Checks the signature against the keys the server published (``client.signing_keys()``).

        This proves integrity, not origin: the record is unchanged since one of those keys
        signed it, and its ``key_id`` is that key's thumbprint. Whoever runs the server can
        publish a key of their own and sign anything with it; to know the record comes from the
        signer you expect, use ``verify(trusted=...)`` with pinned thumbprints or a JWKS file.
        """
        self._check_fields()
        return verify_record_with_server_keys(self.raw, keys)

    def _check_fields(self) -> None:
        if from_json(Resolution, self.raw) != self:
            raise SignatureError(f"the fields of {self.record_id} differ from the signed record")


# --------------------------------------------------------------------------------------------
# Usage


@dataclasses.dataclass(frozen=True)
class UsageLimits:
    requests_per_minute: int
    page_size_default: int
    page_size_max: int
    coverages: tuple[int, ...]
    universe: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Usage:
    """The caller's tier, budget and scopes."""

    meta: Meta
    tier: str
    rate_per_min: int
    limits: UsageLimits
    scopes: tuple[str, ...]
    raw: JSON = _raw()


# --------------------------------------------------------------------------------------------
# Changes


@dataclasses.dataclass(frozen=True)
class Change:
    """A company that changed since a dataset version, as it is now."""

    slug: str
    changes: tuple[str, ...]
    events_added: int
    company: CompanyListItem
    meta: Meta
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ChangesPage:
    """One page of ``getChanges``."""

    meta: Meta
    since: str
    dataset_version: str
    versions: tuple[str, ...]
    changes: tuple[Change, ...]
    page: PageInfo
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[Change]:
        return iter(self.changes)

    def __len__(self) -> int:
        return len(self.changes)


# --------------------------------------------------------------------------------------------
# Exports


@dataclasses.dataclass(frozen=True)
class ExportHeader:
    """The first line of an export.

    A series export cut to a date range (``export_series(start=..., end=...)``) says which:
    ``start`` and ``end`` are its JSON ``from`` and ``to`` (``None`` for the one not given, and
    for every export that is not cut).
    """

    meta: Meta
    export: str
    coverage: Optional[int]
    companies: int
    start: Optional[date] = _json_name("from")
    end: Optional[date] = _json_name("to")
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ExportCompany:
    """A line of ``getExport``: a company with both bands, its events and its signed record."""

    slug: str
    name: str
    aliases: tuple[str, ...]
    sector: str
    status: str
    latest_mark: Optional[ExportMarkPoint]
    delta_30d_pct: Optional[float]
    events: tuple[MarkEvent, ...]
    resolution: Resolution
    meta: Meta
    last_event: Optional[LastEvent]
    days_since_last_event: Optional[int]
    outcome: Optional[CompanyOutcome]
    delta_30d_basis: Optional[str] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ExportSeries:
    """A line of ``getSeriesExport``: one company's daily series."""

    slug: str
    coverage: int
    series: tuple[MarkSeriesPoint, ...]
    meta: Meta
    raw: JSON = _raw()

    @property
    def points(self) -> tuple[MarkSeriesPoint, ...]:
        return self.series

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame indexed by date, as ``Series.to_pandas``."""
        meta = self.meta.to_dict()
        return series_frame(self.raw.get("series", ()), meta, slug=self.slug, coverage=self.coverage)


# --------------------------------------------------------------------------------------------
# Scorecard


#: The three numbers the scorecard scores, in its order.
NUMBERS = ("mark", "next_print", "last_print")


@dataclasses.dataclass(frozen=True)
class CoverageScore:
    """How often the mark's band held the observed value: ``observed_pct`` of ``n`` against
    ``nominal_pct``, with the range a band of exactly that coverage shows 90% of the time on
    ``n`` targets (outside it, the band is miscalibrated; inside, ``n`` cannot tell)."""

    nominal_pct: int
    observed_pct: Optional[float]
    inside: int
    n: int
    binomial_90_range_pct: Optional[tuple[float, ...]]
    within_binomial_90_range: Optional[bool]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScoreErrors:
    """One number's errors on one score, in logs (observed - number): median and mean of their
    absolute values, and their mean (``bias``: above 0, the number ran below what was
    observed)."""

    median_abs_log_error: Optional[float]
    mean_abs_log_error: Optional[float]
    bias: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ErrorsByNumber:
    """The errors of each of the three numbers on the same targets."""

    mark: ScoreErrors
    next_print: ScoreErrors
    last_print: ScoreErrors
    raw: JSON = _raw()

    def get(self, number: str) -> ScoreErrors:
        """The errors of one number, by name (``"mark"``, ``"next_print"``, ``"last_print"``)."""
        if number not in NUMBERS:
            raise KeyError(number)
        found: ScoreErrors = getattr(self, number)
        return found


@dataclasses.dataclass(frozen=True)
class EventDayScore:
    """The event-day score of one kind of target: each reported value against the three numbers
    of the day before it, the mark's band coverage, and the share within +/-20% of the mark."""

    n: int
    errors: ErrorsByNumber
    coverage_80: CoverageScore
    coverage_95: CoverageScore
    within_tolerance_pct: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class EventDayScores:
    """The event-day score by kind of target: ``event`` (an observation of value after a
    company's first), ``listing``, ``failure`` and ``sale`` (outcomes, marked the day before);
    ``None`` for a kind with no target."""

    event: Optional[EventDayScore]
    listing: Optional[EventDayScore]
    failure: Optional[EventDayScore]
    sale: Optional[EventDayScore]
    raw: JSON = _raw()

    def get(self, kind: str) -> Optional[EventDayScore]:
        """The score of one kind of target, by name."""
        if kind not in ("event", "listing", "failure", "sale"):
            raise KeyError(kind)
        found: Optional[EventDayScore] = getattr(self, kind)
        return found

    @property
    def n(self) -> int:
        """Targets of every kind."""
        scores = (self.event, self.listing, self.failure, self.sale)
        return sum(score.n for score in scores if score is not None)


@dataclasses.dataclass(frozen=True)
class GapCoverage:
    """The mark's band coverage at month-ends of one silence bucket (``"under 6 months"``,
    ``"6-12 months"``, ``"1-2 years"``, ``"over 2 years"``), against the next reported value."""

    bucket: str
    n: int
    coverage_80: CoverageScore
    coverage_95: CoverageScore
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ConfidenceScore:
    """``confidence`` judged as a forecast of the next reported value landing within
    ``tolerance_pct`` of the mark: the mean stated, the base rate, the Brier score and its skill
    against stating the base rate every time (at or below 0: no skill, which is why confidence is
    published as a track record)."""

    tolerance_pct: float
    n: int
    mean_stated: Optional[float]
    base_rate: Optional[float]
    brier: Optional[float]
    brier_skill: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class MonthEndScore:
    """Every calendar month-end mark scored: against the next reported value
    (``next_reported``, S1) and against the value on the day bridged log-linearly between the
    two reported values around it (``bridged``, S2, the score the mark is built for); the mark's
    band coverage against the next reported value, overall and by silence; the confidence judged
    as a forecast."""

    n: int
    next_reported: ErrorsByNumber
    bridged: ErrorsByNumber
    coverage_80: CoverageScore
    coverage_95: CoverageScore
    coverage_by_gap: tuple[GapCoverage, ...]
    confidence: ConfidenceScore
    raw: JSON = _raw()


class _Indexable:
    """Reads like the JSON object it was built from (``x["slug"]``, ``x.get("slug")``): these
    members were plain mappings before they had a model."""

    raw: JSON

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


@dataclasses.dataclass(frozen=True)
class ComparisonDifference(_Indexable):
    """One figure of a comparison: number a's, b's, a - b on the whole sample (negative: a's
    error is smaller), the 95% bootstrap interval of a - b, and the verdict (``"a_better"``,
    ``"b_better"`` or ``"tie"``: whether the interval excludes 0, and on which side)."""

    figure: str
    a: Optional[float]
    b: Optional[float]
    difference: Optional[float]
    interval_95: Optional[tuple[float, ...]]
    verdict: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Comparison(_Indexable):
    """Number ``a`` minus number ``b`` on one ``score`` (``"event_day"``,
    ``"month_end_next_reported"`` or ``"month_end_bridged"``): a company-clustered bootstrap,
    whole companies resampled with replacement, each figure with a 95% interval. Reads like its
    JSON object too (``comparison["differences"]``)."""

    a: str
    b: str
    method: str
    draws: int
    seed: int
    companies: int
    differences: tuple[ComparisonDifference, ...]
    score: str = ""
    raw: JSON = _raw()

    def difference(self, figure: str) -> ComparisonDifference:
        """The difference of one figure, by name (e.g. ``"median_abs_log_error"``)."""
        for difference in self.differences:
            if difference.figure == figure:
                return difference
        raise KeyError(figure)


@dataclasses.dataclass(frozen=True)
class ScorecardNumber:
    """One of the numbers the scorecard scores: ``mark`` (the published mark, today's value
    estimate), ``next_print`` (the next-print forecast, ``latest_mark.next_reported``) or
    ``last_print`` (the last reported value carried forward; no methodology)."""

    name: str
    methodology_version: Optional[str]
    description: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class SilenceCell:
    """Private companies whose latest mark is ``from_days`` to ``to_days`` (excluded; ``None``:
    no end) after their last observation of value, and their median mark over it."""

    label: str
    from_days: int
    to_days: Optional[int]
    n: int
    median_mark_over_last: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class LatestPrivateSummary:
    """The latest marks of companies still private against their last reported values: the
    median ratio, how many are below it and how many above 1.5 times it, by silence."""

    n: int
    median_mark_over_last: Optional[float]
    below_last: int
    share_below_last_pct: Optional[float]
    above_one_and_a_half: int
    share_above_one_and_a_half_pct: Optional[float]
    by_silence: tuple[SilenceCell, ...]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ProfileKnot:
    """A knot of a profile: the drift (in logs) after ``years`` of silence."""

    years: float
    drift: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class InForce:
    """What holds the day after the as-of (``day``): the mark's profile by silence
    (``fair_value_profile``), the next-print forecast's, the month-end residuals known, the band
    offsets per silence bucket (in logs at .10, .90, .025, .975; ``None`` while the normal
    fallback holds) and ``confidence_track_record``, the confidence every mark of that day
    carries."""

    day: date
    fair_value_profile: tuple[ProfileKnot, ...]
    next_print_profile: tuple[ProfileKnot, ...]
    residuals_known: int
    band_quantiles: Optional[tuple[tuple[float, ...], ...]]
    confidence_track_record: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class IndexScorecardSummary:
    """An index on its last day: its published ``level`` (weights capped) and the
    ``uncapped_level`` plain value weights would have reached from the same 100, with the
    largest constituent's share of the day's value before capping."""

    index: str
    name: str
    date: date
    constituents: int
    level: float
    uncapped_level: float
    largest_share_uncapped: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Scorecard:
    """The methodology's scorecard: three numbers on three scores, so that a reader sees which
    number wins which score and why.

    The numbers (``numbers``): the mark (today's value estimate), the next-print forecast
    published beside it and the last print carried forward. The scores: the event day
    (``event_day``, by kind of target), and every month-end against the next reported value and
    against the value on the day (``month_end``). Beside them the bootstrap ``comparisons``, the
    latest private marks against their last prints (``latest_private``), what is ``in_force``,
    the ``findings`` in words and the constants (``params``). ``indices`` shows each index as
    published (no constituent weighs more than ``index_weight_cap``) beside where plain value
    weights would have taken it.

    The figures are aggregates, the same for every caller; ``disclosure`` names the form of
    ``scorecard_targets()`` the caller gets (``"public"`` without a key or below pro, ``"full"``
    for pro and above).
    """

    meta: Meta
    methodology_version: str
    disclosure: Optional[str]
    params: Mapping[str, Any]
    numbers: tuple[ScorecardNumber, ...]
    event_day: EventDayScores
    month_end: Optional[MonthEndScore]
    comparisons: tuple[Comparison, ...]
    latest_private: Optional[LatestPrivateSummary]
    in_force: Optional[InForce]
    findings: tuple[str, ...]
    index_weight_cap: Optional[float] = None
    indices: tuple[IndexScorecardSummary, ...] = ()
    raw: JSON = _raw()

    def number(self, name: str) -> ScorecardNumber:
        """One of the numbers, by name (``"mark"``, ``"next_print"``, ``"last_print"``)."""
        for number in self.numbers:
            if number.name == name:
                return number
        raise KeyError(name)

    def comparison(self, score: str, a: str, b: str) -> Comparison:
        """The comparison of number ``a`` minus number ``b`` on ``score``."""
        for comparison in self.comparisons:
            if (comparison.score, comparison.a, comparison.b) == (score, a, b):
                return comparison
        raise KeyError((score, a, b))


@dataclasses.dataclass(frozen=True)
class LogErrors:
    """The log error (ln observed - ln number) of each of the three numbers on one row."""

    mark: float
    next_print: float
    last_print: float
    raw: JSON = _raw()

    def get(self, number: str) -> float:
        """The error of one number, by name."""
        if number not in NUMBERS:
            raise KeyError(number)
        found: float = getattr(self, number)
        return found


@dataclasses.dataclass(frozen=True)
class BandOffsets:
    """The mark's bands as log offsets from it: the 80% band is mark x exp(``q10``) to
    mark x exp(``q90``), the 95% band exp(``q025``) to exp(``q975``)."""

    q10: float
    q90: float
    q025: float
    q975: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardTarget:
    """An event-day target: a reported value against the three numbers of ``marked_on``.

    Both forms: ``kind`` (``event``, ``listing``, ``failure``, ``sale``), the event type, days,
    silence, ``log_error`` of each number, the mark's ``band_offsets``, the ``confidence`` in
    force, the flags and ``residuals_known``. The full form (pro and above) adds the company,
    the event, the observed value as scored and each number in dollars and in unrounded logs;
    they are ``None`` in the public form.
    """

    kind: str
    event_type: str
    occurred_on: date
    marked_on: date
    gap_years: float
    log_error: LogErrors
    band_offsets: BandOffsets
    confidence: float
    inside_80: bool
    inside_95: bool
    hit: bool
    residuals_known: int
    slug: Optional[str] = None
    event_id: Optional[str] = None
    observed_usd: Optional[int] = None
    scored_usd: Optional[int] = None
    observed_log: Optional[float] = None
    mark_log: Optional[float] = None
    next_print_log: Optional[float] = None
    last_print_log: Optional[float] = None
    mark_usd: Optional[int] = None
    next_print_usd: Optional[int] = None
    last_print_usd: Optional[int] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardMonthEnd:
    """A scored month-end: the three numbers of ``day`` against the next reported value
    (``next_reported_error``, S1; its kind and day) and against the value on the day
    (``bridged_error``, S2), with the mark's bands and the confidence in force.

    The full form (pro and above) adds the company, the anchor the mark starts from and the
    unrounded logs; they are ``None`` in the public form.
    """

    day: date
    gap_years: float
    next_kind: str
    next_on: date
    next_reported_error: LogErrors
    bridged_error: LogErrors
    band_offsets: BandOffsets
    confidence: float
    inside_80: bool
    inside_95: bool
    hit: bool
    residuals_known: int
    slug: Optional[str] = None
    anchor_event_id: Optional[str] = None
    anchor_type: Optional[str] = None
    mark_log: Optional[float] = None
    next_print_log: Optional[float] = None
    last_print_log: Optional[float] = None
    next_log: Optional[float] = None
    bridged_log: Optional[float] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardTargets:
    """Every row the scorecard scores, so that each of its figures can be recomputed: the
    event-day ``targets`` and the ``month_ends``.

    Without a key, or with a free or research key, the public form: relative quantities only
    (log errors, band offsets, confidence, flags, silence, kind, event type and dates), ordered
    by date, with the company, the event and the dollars ``None``. A pro, business or enterprise
    key gets every field. ``disclosure`` says which form it is (``"public"`` or ``"full"``).
    """

    meta: Meta
    methodology_version: str
    tolerance_pct: float
    numbers: tuple[str, ...]
    targets: tuple[ScorecardTarget, ...]
    disclosure: Optional[str]
    month_ends: tuple[ScorecardMonthEnd, ...] = ()
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[ScorecardTarget]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def to_pandas(self) -> pd.DataFrame:
        """One row per event-day target (``TARGET_COLUMNS`` of the frames module): the log error
        of each number (``log_error_mark`` ...), the band offsets (``band_q10`` ...), the flags,
        and in the full form the company, event and dollars (empty columns in the public form).
        """
        return targets_frame(self.raw.get("targets", ()), self.meta.to_dict(), disclosure=self.disclosure)

    def month_ends_to_pandas(self) -> pd.DataFrame:
        """One row per scored month-end: day, silence, the next reported value's kind and day,
        each number's error against it (``next_reported_error_mark`` ...) and against the bridged
        value (``bridged_error_mark`` ...), the band offsets, the flags, and in the full form the
        company, the anchor and the logs (empty columns in the public form)."""
        rows = self.raw.get("month_ends", ())
        return month_ends_frame(rows, self.meta.to_dict(), disclosure=self.disclosure)


# --------------------------------------------------------------------------------------------
# Indices


@dataclasses.dataclass(frozen=True)
class IndexPoint:
    """One day of an index: its ``level`` (100 on its first day), its band (``lower``,
    ``upper``) at the coverage asked for (the latest day of ``indices()``: 80%) and how many
    companies it holds that day (``constituents``)."""

    date: date
    level: float
    lower: float
    upper: float
    constituents: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class IndexSummary:
    """An index as ``indices()`` lists it: its id (``index``: ``"all"`` or a sector's name, what
    ``index()`` takes), its name, its sector (``None`` for ``all``), its first and last day, and
    its latest day with the 80% band."""

    index: str
    name: str
    sector: Optional[str]
    first_date: date
    last_date: date
    latest: IndexPoint
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Indices:
    """``listIndices``: the private-market indices, ``all`` first, then one per sector.

    Each is daily, value-weighted by the companies' published marks and chain-linked, so a
    company entering or leaving moves nothing by itself; ``base_level`` (100) on its first day.
    Indexable by id (``indices["fintech"]``).
    """

    meta: Meta
    base_level: float
    indices: tuple[IndexSummary, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[IndexSummary]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: str) -> IndexSummary:
        found = next((item for item in self.indices if item.index == index), None)
        if found is None:
            raise KeyError(index)
        return found

    def to_pandas(self) -> pd.DataFrame:
        """One row per index, indexed by its id: name, sector, first_date, last_date, and its
        latest day's date, level, lower, upper (80%) and constituents."""
        return indices_frame(self.raw.get("indices", ()), self.meta.to_dict())


@dataclasses.dataclass(frozen=True)
class IndexSeries:
    """``getIndex``: an index's days, oldest first, with the band at ``coverage`` (80 or 95)."""

    meta: Meta
    index: str
    name: str
    sector: Optional[str]
    coverage: int
    series: tuple[IndexPoint, ...]
    raw: JSON = _raw()

    @property
    def points(self) -> tuple[IndexPoint, ...]:
        """The days, oldest first (the JSON ``series`` member)."""
        return self.series

    def __iter__(self) -> Iterator[IndexPoint]:
        return iter(self.series)

    def __len__(self) -> int:
        return len(self.series)

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame indexed by date (one row per day): level, lower, upper, constituents.

        ``.attrs`` carries ``meta`` (a dict of strings), ``index`` and ``coverage``.
        """
        meta = self.meta.to_dict()
        return index_frame(self.raw.get("series", ()), meta, index=self.index, coverage=self.coverage)


@dataclasses.dataclass(frozen=True)
class IndexConstituent:
    """A company in an index on one day: its published mark and band of that day, its ``weight``
    in the index (its mark's share of the day's value, capped at 10% with ten constituents or
    more, what a capped company gives up shared by value among the others; 1/n each with fewer)
    and its ``value_weight`` (its mark over the sum of the day's marks, before capping), both
    rounded to 6 decimals."""

    slug: str
    name: str
    weight: float
    mark_usd: float
    lower_usd: float
    upper_usd: float
    value_weight: Optional[float] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class IndexConstituents:
    """``getIndexConstituents``: the companies in an index on ``date``, largest mark first, with
    the bands at ``coverage``; ``level`` is the index's level that day."""

    meta: Meta
    index: str
    date: date
    coverage: int
    level: float
    constituents: tuple[IndexConstituent, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[IndexConstituent]:
        return iter(self.constituents)

    def __len__(self) -> int:
        return len(self.constituents)

    def to_pandas(self) -> pd.DataFrame:
        """One row per company, largest first, indexed by slug: name, weight, mark_usd,
        lower_usd, upper_usd, value_weight. ``.attrs`` carries ``meta``, ``index``, ``date``, ``coverage``
        and ``level``."""
        return constituents_frame(
            self.raw.get("constituents", ()),
            self.meta.to_dict(),
            index=self.index,
            date=self.date.isoformat(),
            coverage=self.coverage,
            level=self.level,
        )


# --------------------------------------------------------------------------------------------
# The publication log


@dataclasses.dataclass(frozen=True)
class LogEntryOutcome:
    """What ended a company's private period, as its entry in the log states it."""

    kind: str
    event_id: str
    occurred_on: date
    valuation_usd: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class LogEntry:
    """A mark as first published: one leaf of the publication log.

    The leaf is the RFC 8785 canonical JSON of the entry as sent (``raw``), and every number in
    it is an integer: dollars, and the confidence in basis points (``confidence_bp``, 2041 for
    0.2041; ``confidence`` has it as a fraction). ``band_95_digest`` commits to the 95% bounds
    (``LogBand95``), which a research key does not read. ``marked_on`` is the day of the
    mark: ``as_of``, or the day before the company's outcome.
    """

    slug: str
    dataset_version: str
    methodology_version: str
    as_of: date
    marked_on: date
    value_usd: int
    lower_80_usd: int
    upper_80_usd: int
    band_95_digest: str
    confidence_bp: int
    outcome: Optional[LogEntryOutcome]
    raw: JSON = _raw()

    @property
    def confidence(self) -> float:
        return self.confidence_bp / 10_000

    @property
    def leaf(self) -> bytes:
        """The leaf's bytes: the canonical JSON of the entry as the API sent it."""
        return canonical_json(self.raw)

    @property
    def leaf_hash(self) -> bytes:
        """SHA-256(0x00 || leaf), computed here."""
        return leaf_hash(self.leaf)


@dataclasses.dataclass(frozen=True)
class LogBand95:
    """The 95% bounds an entry commits to, with the publisher's salt (pro and above)."""

    lower_usd: int
    upper_usd: int
    salt: str
    raw: JSON = _raw()

    @property
    def digest(self) -> str:
        """The digest an entry carries of these bounds (``band_95_digest``), computed here."""
        return band_95_digest(self.raw)


@dataclasses.dataclass(frozen=True)
class PublishedEntry:
    """A company's entry in the log, where it is: ``leaf_index``, the ``leaf_hash`` and the
    ``inclusion_proof`` (base64 hashes) in the tree of the log's checkpoint; ``date`` is the
    entry's ``as_of``. ``band_95`` for pro and above, else None."""

    date: date
    leaf_index: int
    entry: LogEntry
    leaf_hash: str
    inclusion_proof: tuple[str, ...]
    band_95: Optional[LogBand95] = None
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class LogHead:
    """The tree the proofs of an answer are against: its origin, size, root hash (base64) and
    its signed checkpoint (the note, as text: ``parse()`` reads it; None while the log has
    none)."""

    origin: str
    tree_size: int
    root_hash: str
    checkpoint: Optional[str]
    raw: JSON = _raw()

    def parse(self) -> Checkpoint:
        """The checkpoint the note states (not verified: ``.verify(trusted)`` on it does);
        ``LogVerificationError`` (``check == "format"``) when there is none."""
        return Checkpoint.parse(self.checkpoint)


@dataclasses.dataclass(frozen=True)
class LogVersion:
    """A published version of the log: its dataset version and the tree size its checkpoint
    signs (what ``log_consistency`` takes)."""

    dataset_version: str
    tree_size: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Published:
    """``getPublished``: a company's marks as first published, in log order, each with its
    inclusion proof in the tree of ``log``, and every published version of the log.

    Nothing here is trusted until checked: ``verify(trusted)`` checks it against a key you
    pinned (``verify_history``). ``start`` and ``end`` are the dates the answer was cut to,
    as asked (``None``: not cut).
    """

    meta: Meta
    slug: str
    log: LogHead
    versions: tuple[LogVersion, ...]
    series: tuple[PublishedEntry, ...]
    start: Optional[date] = _json_name("from")
    end: Optional[date] = _json_name("to")
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[PublishedEntry]:
        return iter(self.series)

    def __len__(self) -> int:
        return len(self.series)

    def verify(
        self,
        trusted: PinnedLike,
        *,
        keys: Optional[KeysLike] = None,
        kept: Union[str, Checkpoint, None] = None,
        consistency: Optional[LogConsistency] = None,
        origin: Optional[str] = None,
    ) -> HistoryVerification:
        """Checks the answer against keys you pinned, as ``verify_history`` does; ``kept`` (a
        checkpoint you kept) needs ``consistency``, the answer of ``log_consistency(kept size)``
        (unless its size is today's). Raises ``LogVerificationError``."""
        return verify_published(
            self.raw,
            trusted,
            keys=keys,
            kept=kept,
            consistency=consistency.raw if consistency is not None else None,
            origin=origin,
            cut=self.end is not None,
        )


@dataclasses.dataclass(frozen=True)
class LogTree:
    """A tree of the log by its size and root hash (base64), as of a dataset version."""

    dataset_version: str
    tree_size: int
    root_hash: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class LogConsistency:
    """``getLogConsistency``: the RFC 6962 consistency proof (base64 hashes) that the tree of a
    published checkpoint (``from_``, the JSON ``from``) is a prefix of today's (``to``).
    ``verify_history(..., kept=...)`` checks it against the checkpoint you kept."""

    meta: Meta
    proof: tuple[str, ...]
    to: LogHead
    from_: LogTree = _json_name("from")
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class LogFileEntry:
    """An entry line of the log file: the entry (the leaf) and the 95% bounds it commits to."""

    leaf: LogEntry
    band_95: LogBand95
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class PublicationLog:
    """``getLogExport``: the whole publication log, every entry and every version's checkpoint,
    in the order of the file. ``verify(trusted)`` replays it (``verify_log``)."""

    origin: str
    format: int
    entries: tuple[LogFileEntry, ...]
    checkpoints: tuple[Checkpoint, ...]
    lines: tuple[JSON, ...] = dataclasses.field(default=(), repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.entries)

    def verify(
        self,
        trusted: PinnedLike,
        *,
        keys: Optional[KeysLike] = None,
        kept: Union[str, Checkpoint, None] = None,
        origin: Optional[str] = None,
    ) -> LogVerification:
        """Replays the log against keys you pinned (see ``verify_log``); ``kept``, a checkpoint
        you kept, must be one of its prefixes. Raises ``LogVerificationError``."""
        return verify_log(self.lines, trusted, keys=keys, kept=kept, origin=origin)


# --------------------------------------------------------------------------------------------
# Building models from JSON
#
# Each model class gets a plan once, from its type hints: per field its name, a converter
# (dates, nested models, tuples) and what a missing member gives. Building is one pass over
# the plan; the instance's __dict__ is filled as dataclass' __init__ would, without the
# per-field object.__setattr__ that a frozen dataclass' __init__ pays (exports build some
# fifteen objects per company).

Converter = Callable[[Any, Optional[Meta]], Any]

_MISSING = object()
_ERROR, _NONE, _EMPTY, _META, _OPTIONAL_META = range(5)  # what a missing member gives
_PLANS: dict[type, tuple[tuple[str, Optional[Converter], int, str], ...]] = {}
_HAS_META: dict[type, bool] = {}


def _date(value: Any, _meta: Optional[Meta]) -> Any:
    return date.fromisoformat(value) if type(value) is str else value


def _tagged(members: list[Any]) -> Optional[Converter]:
    """A converter for a union of models told apart by a tag: the field each of them declares
    as a ``Literal`` (the same field in all of them), whose value picks the model."""
    tag = ""
    by_value: dict[Any, type[Any]] = {}
    for member in members:
        if not (isinstance(member, type) and dataclasses.is_dataclass(member)):
            return None
        hints = get_type_hints(member)
        field = next(
            (f.name for f in dataclasses.fields(member) if get_origin(hints[f.name]) is Literal), None
        )
        if field is None or tag not in ("", field):
            return None
        tag = field
        by_value.update(dict.fromkeys(get_args(hints[field]), member))
    names = " or ".join(repr(value) for value in by_value)

    def convert(value: Any, meta: Optional[Meta]) -> Any:
        # ValueError: from_json names the member it was reading.
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        model = by_value.get(value.get(tag))
        if model is None:
            raise ValueError(f"{tag} is {value.get(tag)!r}, not {names}")
        return from_json(model, value, meta)

    return convert


def _converter(tp: Any) -> Optional[Converter]:
    origin = get_origin(tp)
    if origin in _UNION_TYPES:
        args = [arg for arg in get_args(tp) if arg is not type(None)]
        inner = _converter(args[0]) if len(args) == 1 else _tagged(args)
        if inner is None:
            return None
        return lambda value, meta: None if value is None else inner(value, meta)
    if origin is tuple:
        item = _converter(get_args(tp)[0])
        if item is None:
            return lambda value, _meta: tuple(value)
        return lambda value, meta: tuple([item(x, meta) for x in value])
    if tp is date:
        return _date
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        cls: type[Any] = tp
        return lambda value, meta: from_json(cls, value, meta)
    return None


def _plan(cls: type) -> tuple[tuple[str, Optional[Converter], int, str], ...]:
    hints = get_type_hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        if field.name == "raw":
            continue
        tp = hints[field.name]
        optional = get_origin(tp) in _UNION_TYPES and type(None) in get_args(tp)
        if field.name == "meta":
            missing = _OPTIONAL_META if optional else _META
        elif optional:
            missing = _NONE
        elif get_origin(tp) is tuple:
            missing = _EMPTY
        else:
            missing = _ERROR
        convert = None if field.name == "meta" else _converter(tp)
        fields.append((field.name, convert, missing, json_name(field)))
    plan = _PLANS[cls] = tuple(fields)
    _HAS_META[cls] = any(name == "meta" for name, _, _, _ in fields)
    return plan


def from_json(cls: type[M], data: Any, meta: Optional[Meta] = None) -> M:
    """Builds model ``cls`` from a decoded JSON object.

    Unknown members are ignored (they stay in ``raw``). A ``meta`` member missing from the
    object is taken from ``meta``, the enclosing response's. Raises ``ResponseError`` when a
    member the model needs is missing or cannot be read.
    """
    if type(data) is not dict and not isinstance(data, Mapping):
        raise ResponseError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
    plan = _PLANS.get(cls) or _plan(cls)
    if _HAS_META[cls] and "meta" in data:
        meta = from_json(Meta, data["meta"])
    values: dict[str, Any] = {"raw": data}
    name = ""
    try:
        for name, convert, missing, member in plan:
            value = data.get(member, _MISSING)
            if value is _MISSING:
                if missing == _NONE:
                    values[name] = None
                elif missing == _EMPTY:
                    values[name] = ()
                elif missing == _OPTIONAL_META or (missing == _META and meta is not None):
                    values[name] = meta
                else:
                    raise ResponseError(f"{cls.__name__}: the response has no {name!r}")
            elif missing in (_META, _OPTIONAL_META):
                values[name] = meta
            elif convert is not None and value is not None:
                values[name] = convert(value, meta)
            else:
                values[name] = value
    except (TypeError, ValueError, AttributeError) as exc:
        raise ResponseError(f"{cls.__name__}.{name}: {exc}") from exc
    instance: M = object.__new__(cls)
    instance.__dict__.update(values)
    return instance
