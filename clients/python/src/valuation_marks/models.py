"""Typed results: frozen dataclasses built from the API's JSON.

Every model keeps the JSON object it was built from in ``raw`` (not compared, not shown), so
fields the API adds after this release are still at hand (``item.raw["new_field"]``); fields
it does not know are otherwise ignored (the API only ever adds fields under /v1). Dates
(``YYYY-MM-DD``) become ``datetime.date``; dataset versions stay strings, as they are what
``changes(since=...)`` takes back. Every result carries ``meta``: the response's own, or for
list items and export lines the meta of the page or export they came in.

A member that is one of several kinds of object, told apart by a tag (a company's
``observations``, by ``part``), is a ``Union`` of models whose tag field is a ``Literal``:
``isinstance`` or the tag narrows it. The scorecard's documents come in two forms, by the key's
tier: the members only the full form has (slugs, event ids, dollars) are ``None`` in the public
one, and ``disclosure`` says which form a document is. A company's backtest comes the same way:
``research`` (where each event fell, not its value) or ``full`` (pro and above).
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
    sectors_frame,
    series_frame,
    targets_frame,
)
from .errors import ResponseError, SignatureError
from .signing import KeysLike, TrustedKeys, TrustedLike, verify_record, verify_record_with_server_keys

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
    "BandsInForce",
    "BankruptcyOutcome",
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
    "Events",
    "ExportCompany",
    "ExportHeader",
    "ExportMarkPoint",
    "ExportSeries",
    "ForecasterScore",
    "GapCoverage",
    "IndexConstituent",
    "IndexConstituents",
    "IndexPoint",
    "IndexSeries",
    "IndexSummary",
    "Indices",
    "LastEvent",
    "ListingValidation",
    "MapeContributor",
    "MarkEvent",
    "MarkPoint",
    "MarkSeriesPoint",
    "Meta",
    "Observation",
    "ObservationDrift",
    "ObservationEvent",
    "OutcomeEstimate",
    "PageInfo",
    "RelativeBand",
    "ReliabilityBin",
    "Resolution",
    "Scorecard",
    "ScorecardMiss",
    "ScorecardTarget",
    "ScorecardTargets",
    "Sector",
    "Sectors",
    "Series",
    "SigningKey",
    "SigningKeys",
    "TargetForecast",
    "Usage",
    "UsageLimits",
    "VerdictCounts",
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
class MarkPoint:
    """A latest mark: the point estimate and its 80% interval, in US dollars.

    ``vs_last_event_pct`` is the mark against the company's last event's value, in percent
    (``None`` when that value is 0, a bankruptcy written off).
    """

    as_of_date: date
    value_usd: float
    lower_usd: float
    upper_usd: float
    confidence: float
    coverage: Optional[int]
    vs_last_event_pct: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Band95:
    lower_usd: float
    upper_usd: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ExportMarkPoint:
    """A latest mark as the export carries it: with the 95% band of the same day."""

    as_of_date: date
    value_usd: float
    lower_usd: float
    upper_usd: float
    confidence: float
    coverage: Optional[int]
    band_95: Band95
    vs_last_event_pct: Optional[float]
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
    """A company's most recent reported event: what its latest mark moves from (no source or note)."""

    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class CompanyOutcome:
    """What ended a company's private marks (``ipo``, ``direct_listing``, ``bankruptcy``) or fixed
    them (``acquisition``: an agreed sale that is its last event)."""

    event_id: str
    event_type: str
    occurred_on: date
    valuation_usd: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class CompanyListItem:
    """A company as ``listCompanies`` shows it.

    ``aliases`` are the other names it is known by (former and brand names: ``("Cursor",)`` for
    anysphere), which ``companies(q=...)`` searches too; empty when it has none.

    Its mark explained: ``last_event`` (the event it moves from), ``days_since_last_event`` (to
    the dataset's as-of), ``latest_mark.vs_last_event_pct`` and ``outcome`` (``None`` while the
    company is marked as private). ``delta_30d_pct`` is ``None`` for a series that ended before
    the as-of (a listed or bankrupt company).
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
    """The event a latest mark starts from (``part == "event"``): all of the mark moves with its
    value (``weight`` 1). After a bankruptcy, the value reported is the mark."""

    part: Literal["event"]
    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    weight: float
    explanation: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ObservationDrift:
    """What the method adds to that event's value for the days since (``part == "drift"``), in
    percent; learnt from how valuations moved after similar gaps. None after a bankruptcy."""

    part: Literal["drift"]
    days: int
    drift_pct: float
    explanation: str
    raw: JSON = _raw()


#: One part of what a latest mark rests on, told apart by ``part`` (or ``isinstance``).
Observation = Union[ObservationEvent, ObservationDrift]


@dataclasses.dataclass(frozen=True)
class Company:
    """A company profile: latest mark and what it rests on.

    ``observations`` are the parts of the latest mark: the event it starts from
    (``ObservationEvent``), then what the method adds for the days since (``ObservationDrift``,
    absent after a bankruptcy). Values only, without sources or notes: ``events()`` has the
    whole history (pro and above). ``last_event``, ``days_since_last_event``, ``outcome`` and
    ``latest_mark.vs_last_event_pct`` as on every company item, and ``aliases`` (former and brand
    names); ``backtest()`` says how the method did on the company.
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
    raw: JSON = _raw()

    @property
    def starting_event(self) -> Optional[ObservationEvent]:
        """The event the latest mark starts from, if it rests on one."""
        return next((o for o in self.observations if isinstance(o, ObservationEvent)), None)

    @property
    def drift(self) -> Optional[ObservationDrift]:
        """What the method adds for the days since that event; None after a bankruptcy."""
        return next((o for o in self.observations if isinstance(o, ObservationDrift)), None)


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
    """A publicly reported valuation event."""

    event_id: str
    occurred_on: date
    event_type: str
    valuation_usd: float
    source_url: str
    note: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Events:
    """A company's append-only event history, oldest first."""

    meta: Meta
    slug: str
    events: tuple[MarkEvent, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[MarkEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame of the events, one row each, indexed by ``occurred_on``."""
        return events_frame(self.raw.get("events", ()), self.meta.to_dict(), slug=self.slug)


@dataclasses.dataclass(frozen=True)
class BacktestSummary:
    """A company's scored events (targets of kind ``event``) counted: inside each band, and hits."""

    scored_events: int
    inside_80: int
    inside_95: int
    hits: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class BacktestTarget:
    """A scored event (``kind == "event"``), or the listing or bankruptcy that ended the
    company's private marks, against the method's mark made before it.

    ``above``, ``inside_80``, ``inside_95`` and ``hit`` say where the observed value fell in both
    forms. In the research form an event's ``event_id``, ``observed_usd`` and ``error_pct`` are
    ``None`` (an outcome's are given), and ``band_95`` always is; the full form has them all.
    ``error_pct`` is (mark / observed - 1) in percent, ``None`` when the observed value is 0;
    ``verdict`` is an outcome's (``hit``, ``covered_80``, ``covered_95`` or ``miss``).
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
    verdict: Optional[str]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Backtest:
    """How the method did on one company: every scored event with the mark, bands and
    confidence published before it, then its listing or bankruptcy, in date order.

    ``disclosure`` is ``"research"`` (a research key: where each event fell, not its value) or
    ``"full"`` (pro and above: every value, and the 95% band).
    """

    meta: Meta
    slug: str
    methodology_version: str
    forecaster: str
    disclosure: str
    summary: BacktestSummary
    targets: tuple[BacktestTarget, ...]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[BacktestTarget]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def to_pandas(self) -> pd.DataFrame:
        """One row per target, in date order: kind, event_type, occurred_on, marked_on, gap_years,
        mark_usd, band_80_lower/upper, band_95_lower/upper, confidence, event_id, observed_usd,
        error_pct, above, inside_80, inside_95, hit, verdict.

        In the research form the columns of what it leaves out are empty for events (band_95_*
        everywhere). ``.attrs`` carries ``meta``, ``slug``, ``forecaster`` and ``disclosure``.
        """
        return backtest_frame(
            self.raw.get("targets", ()),
            self.meta.to_dict(),
            slug=self.slug,
            forecaster=self.forecaster,
            disclosure=self.disclosure,
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
    """A signed resolution record: the mark of record at the dataset's ``as_of``."""

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


@dataclasses.dataclass(frozen=True)
class CoverageScore:
    nominal_pct: int
    observed_pct: Optional[float]
    inside: int
    n: int
    binomial_90_range_pct: Optional[tuple[float, ...]]
    within_binomial_90_range: Optional[bool]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ReliabilityBin:
    lower: float
    upper: float
    n: int
    mean_stated: Optional[float]
    observed: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ConfidenceScore:
    tolerance_pct: float
    n: int
    hits: int
    brier: Optional[float]
    base_rate: Optional[float]
    brier_base_rate: Optional[float]
    brier_skill: Optional[float]
    reliability: tuple[ReliabilityBin, ...]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class GapCoverage:
    bucket: str
    n: int
    coverage_80: CoverageScore
    coverage_95: CoverageScore
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class VerdictCounts:
    hit: int
    covered_80: int
    covered_95: int
    miss: int
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class RelativeBand:
    """A band as multiples of its mark: the dollar band is ``mark * lower`` to ``mark * upper``."""

    lower: float
    upper: float
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
class MapeContributor:
    """A scored event's share of MAPE; ``slug`` and ``event_id`` in the full form only."""

    slug: Optional[str]
    event_id: Optional[str]
    event_type: str
    occurred_on: date
    abs_pct_error: float
    share_of_mape_pct: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardMiss(_Indexable):
    """A scored event outside the forecaster's 95% band.

    ``slug``, ``event_id``, ``valuation_usd``, ``predicted_usd`` and ``band_95`` (dollars) in
    the full form only (pro and above); ``log_error`` and ``band_95_rel`` in both.
    """

    slug: Optional[str]
    event_id: Optional[str]
    event_type: str
    occurred_on: date
    valuation_usd: Optional[int]
    predicted_usd: Optional[int]
    band_95: Optional[Band]
    log_error: float
    band_95_rel: RelativeBand
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class OutcomeEstimate:
    """One forecaster's mark the day before a listing or bankruptcy.

    The full form has the mark and bands in dollars (``mark_usd``, ``band_80``, ``band_95``);
    the public form the bands as multiples of the mark (``band_80_rel``, ``band_95_rel``).
    """

    forecaster: str
    mark_usd: Optional[int]
    error_pct: Optional[float]
    band_80: Optional[Band]
    band_95: Optional[Band]
    band_80_rel: Optional[RelativeBand]
    band_95_rel: Optional[RelativeBand]
    inside_80: bool
    inside_95: bool
    verdict: str
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ListingValidation(_Indexable):
    """A listing against each forecaster's mark the day before.

    Its day is ``listed_on`` in the full form and ``occurred_on`` in the public one;
    ``event_id`` and ``listing_value_usd`` in the full form only.
    """

    slug: str
    event_id: Optional[str]
    event_type: str
    listed_on: Optional[date]
    occurred_on: Optional[date]
    listing_value_usd: Optional[int]
    marked_on: date
    estimates: tuple[OutcomeEstimate, ...]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class BankruptcyOutcome(_Indexable):
    """A bankruptcy against each forecaster's mark the day before.

    ``event_id`` and ``value_usd`` in the full form only, ``event_type`` in the public one.
    """

    slug: str
    event_id: Optional[str]
    event_type: Optional[str]
    occurred_on: date
    value_usd: Optional[int]
    marked_on: date
    estimates: tuple[OutcomeEstimate, ...]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ForecasterScore:
    """One forecaster's walk-forward figures."""

    name: str
    methodology_version: Optional[str]
    description: str
    n: int
    mape_pct: Optional[float]
    median_abs_log_error: Optional[float]
    mean_abs_log_error: Optional[float]
    coverage_80: CoverageScore
    coverage_95: CoverageScore
    median_band_width_80_pct: Optional[float]
    median_band_width_95_pct: Optional[float]
    listings: Mapping[str, Any]
    misses_total: int
    misses: tuple[ScorecardMiss, ...]
    mape_top_contributors: tuple[MapeContributor, ...]
    confidence: ConfidenceScore
    coverage_by_gap: tuple[GapCoverage, ...]
    outcome_verdicts: VerdictCounts
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ComparisonDifference(_Indexable):
    """One figure of a comparison: forecaster a's, b's, a - b on the whole sample (negative: a's
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
    """A company-clustered bootstrap of forecaster ``a`` minus forecaster ``b``: whole companies
    resampled with replacement, each figure with a 95% interval. Reads like its JSON object too
    (``comparison["differences"]``), as it was a plain mapping before it had a model."""

    a: str
    b: str
    method: str
    draws: int
    seed: int
    companies: int
    differences: tuple[ComparisonDifference, ...]
    raw: JSON = _raw()

    def difference(self, figure: str) -> ComparisonDifference:
        """The difference of one figure, by name (e.g. ``"median_abs_log_error"``)."""
        for difference in self.differences:
            if difference.figure == figure:
                return difference
        raise KeyError(figure)


@dataclasses.dataclass(frozen=True)
class BandsInForce:
    """The method's bands in force after the as-of: the quantiles of |z| for the 80% and 95%
    bands, and the 80% level adapted to its own misses (with what set it)."""

    q80: float
    q95: float
    residuals: int
    conformal_era: int
    misses: int
    rank80: int
    level80: float
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class Scorecard:
    """The methodology's walk-forward backtest beside the previous methods and two baselines.

    Without a key, or with a free or research key, the public form: every figure, but misses,
    MAPE's contributors, listings and bankruptcies without event ids or dollars (their fields
    for those are ``None``). A pro, business or enterprise key gets the full form;
    ``disclosure`` says which (``"public"`` or ``"full"``). ``comparison`` is the bootstrap of
    the method minus the last-event baseline, ``comparison_with_previous`` of the method minus
    the previous methodology.
    """

    meta: Meta
    methodology_version: str
    params: Mapping[str, Any]
    quantiles_in_force: Optional[Mapping[str, Any]]
    forecasters: tuple[ForecasterScore, ...]
    listing_validations: tuple[ListingValidation, ...]
    comparison_params: Optional[Mapping[str, Any]]
    comparison: Optional[Comparison]
    bankruptcy_outcomes: tuple[BankruptcyOutcome, ...]
    disclosure: Optional[str]
    bands_in_force: Optional[BandsInForce]
    comparison_with_previous: Optional[Comparison]
    raw: JSON = _raw()

    def forecaster(self, name: str) -> ForecasterScore:
        """The scores of one forecaster, by name (e.g. ``"adaptive_gap_profile"``, the method)."""
        for score in self.forecasters:
            if score.name == name:
                return score
        raise KeyError(name)


@dataclasses.dataclass(frozen=True)
class TargetForecast:
    """One forecaster's numbers at a target: the bands as multiples of the mark, the forecast's
    ``scale`` and the quantiles ``q80`` and ``q95`` that set them in both forms, the mark and
    bands in dollars (``mark_usd``, ``band_80``, ``band_95``) in the full form only."""

    forecaster: str
    mark_usd: Optional[float]
    band_80: Optional[Band]
    band_95: Optional[Band]
    band_80_rel: RelativeBand
    band_95_rel: RelativeBand
    confidence: float
    log_error: Optional[float]
    inside_80: bool
    inside_95: bool
    hit: bool
    verdict: Optional[str]
    scale: Optional[float]
    q80: Optional[float]
    q95: Optional[float]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardTarget:
    """A scored target; ``slug``, ``event_id`` and ``observed_usd`` in the full form only."""

    slug: Optional[str]
    event_id: Optional[str]
    kind: str
    event_type: str
    occurred_on: date
    marked_on: date
    observed_usd: Optional[int]
    gap_years: float
    gap_bucket: str
    forecasts: tuple[TargetForecast, ...]
    raw: JSON = _raw()


@dataclasses.dataclass(frozen=True)
class ScorecardTargets:
    """Every target the scorecard scores, with each forecaster's numbers.

    Without a key, or with a free or research key, the public form: relative quantities only
    (log error, bands as multiples of the mark, confidence, flags, verdict, gap, event type and
    dates), ordered by date, with ``slug``, ``event_id``, ``observed_usd``, ``mark_usd``,
    ``band_80`` and ``band_95`` ``None``. A pro, business or enterprise key gets every field.
    ``disclosure`` says which form it is (``"public"`` or ``"full"``).
    """

    meta: Meta
    methodology_version: str
    tolerance_pct: float
    forecasters: tuple[str, ...]
    targets: tuple[ScorecardTarget, ...]
    disclosure: Optional[str]
    raw: JSON = _raw()

    def __iter__(self) -> Iterator[ScorecardTarget]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def to_pandas(self) -> pd.DataFrame:
        """One row per (target, forecaster), the target's fields beside the forecast's.

        In the public form the columns of what it leaves out (slug, event_id, observed_usd,
        mark_usd, band_80_*, band_95_*) are empty; band_80_rel_* and band_95_rel_* are filled in
        both.
        """
        return targets_frame(self.raw.get("targets", ()), self.meta.to_dict())


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
    """A company in an index on one day: its published mark and band of that day, and its
    ``weight`` (its mark over the sum of the day's marks, rounded to 6 decimals)."""

    slug: str
    name: str
    weight: float
    mark_usd: float
    lower_usd: float
    upper_usd: float
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
        lower_usd, upper_usd. ``.attrs`` carries ``meta``, ``index``, ``date``, ``coverage``
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
