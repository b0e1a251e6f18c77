"""The API's operations as ``Call`` values (paths and parameters), shared by both clients."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any, Optional, Union

from ._core import CSV_ACCEPT, Call, next_cursor
from ._frames import companies_frame, company_row
from .errors import InvalidSlug, ResponseError
from .models import Meta, from_json, meta_from_headers

if TYPE_CHECKING:
    import pandas as pd

DateLike = Union[str, date]


#: The slug grammar, as the builder checks it (``is_valid_slug`` in builder/src/dataset.rs):
#: 1 to 64 characters of a-z, 0-9 and '-', starting with a letter or a digit.
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def _slug(slug: str) -> str:
    """A slug to put in a path, checked against the grammar before any URL is built.

    ``.``, ``..``, ``../usage``, ``Stripe`` or ``a/b`` would otherwise name another resource
    (or be refused by the server only after a request): they raise ``InvalidSlug``.
    """
    if not isinstance(slug, str) or not SLUG.fullmatch(slug):
        raise InvalidSlug(
            f"{slug!r} is not a company slug: 1 to 64 characters of a-z, 0-9 and '-', "
            "starting with a letter or a digit"
        )
    return slug


#: ``outcome=``: one outcome (``"listed"``), several comma-separated (``"none,sale_agreed"``), or
#: an iterable of them.
Outcomes = Union[str, Iterable[str]]


def outcomes(outcome: Optional[Outcomes]) -> Optional[str]:
    """``outcome`` as the API's comma-separated list (None: no filter)."""
    if outcome is None or isinstance(outcome, str):
        return outcome
    return ",".join(outcome)


def list_companies(
    *,
    limit: Optional[int],
    cursor: Optional[str],
    q: Optional[str],
    sector: Optional[str],
    status: Optional[str],
    sort: Optional[str],
    outcome: Optional[Outcomes] = None,
) -> Call:
    params = {
        "limit": limit,
        "cursor": cursor,
        "q": q,
        "sector": sector,
        "status": status,
        "sort": sort,
        "outcome": outcomes(outcome),
    }
    return Call("/v1/companies", params)


def list_sectors() -> Call:
    return Call("/v1/sectors")


def get_company(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}")


def as_date(value: Optional[DateLike]) -> Optional[date]:
    """A ``DateLike`` as a date (None stays None)."""
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(value)


def date_range(start: Optional[DateLike], end: Optional[DateLike]) -> dict[str, Any]:
    """``start`` and ``end`` as the API's ``from`` and ``to`` (both inclusive)."""
    return {"from": start, "to": end}


def get_mark_series(
    slug: str, coverage: Optional[int], start: Optional[DateLike] = None, end: Optional[DateLike] = None
) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/marks", {"coverage": coverage, **date_range(start, end)})


def get_mark_events(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/events")


def get_resolution(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/resolution")


def get_backtest(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/backtest")


def _index_id(index: str) -> str:
    """An index id to put in a path: ``all`` or a sector's name, which have the slug grammar;
    anything else would name another resource and raises ``InvalidSlug`` before any request."""
    if not isinstance(index, str) or not SLUG.fullmatch(index):
        raise InvalidSlug(
            f"{index!r} is not an index id: all, or a sector's name as indices() gives it "
            "(1 to 64 characters of a-z, 0-9 and '-')"
        )
    return index


def list_indices() -> Call:
    return Call("/v1/indices")


def get_index(
    index: str, coverage: Optional[int], start: Optional[DateLike] = None, end: Optional[DateLike] = None
) -> Call:
    return Call(f"/v1/indices/{_index_id(index)}", {"coverage": coverage, **date_range(start, end)})


def get_index_constituents(index: str, day: Optional[DateLike], coverage: Optional[int]) -> Call:
    return Call(f"/v1/indices/{_index_id(index)}/constituents", {"date": day, "coverage": coverage})


def get_usage() -> Call:
    return Call("/v1/usage")


def get_changes(since: DateLike, *, limit: Optional[int], cursor: Optional[str]) -> Call:
    return Call("/v1/changes", {"since": since, "limit": limit, "cursor": cursor})


def get_signing_keys() -> Call:
    return Call("/v1/signing-keys")


def get_scorecard() -> Call:
    return Call("/v1/scorecard")


def get_scorecard_targets() -> Call:
    return Call("/v1/scorecard/targets")


def get_openapi() -> Call:
    return Call("/v1/openapi.json")


def get_published(slug: str, start: Optional[DateLike] = None, end: Optional[DateLike] = None) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/published", date_range(start, end))


#: What a call for a text/plain answer (a signed checkpoint) sends.
TEXT_ACCEPT = "text/plain, application/problem+json"


def get_log_checkpoint() -> Call:
    return Call("/v1/log/checkpoint", headers={"Accept": TEXT_ACCEPT}, text=True, text_type="text/plain")


def get_log_consistency(from_size: int) -> Call:
    """``from_size``: the tree size of a published checkpoint (a whole number from 1), checked
    before any request."""
    if isinstance(from_size, bool) or not isinstance(from_size, int) or from_size < 1:
        raise ValueError(
            f"from_size is the tree size of a published checkpoint (1 or more), not {from_size!r}"
        )
    return Call("/v1/log/consistency", {"from": from_size})


EXPORT_PATH = "/v1/export"
SERIES_EXPORT_PATH = "/v1/export/series"
LOG_EXPORT_PATH = "/v1/export/log"


def series_export_params(
    coverage: Optional[int], start: Optional[DateLike] = None, end: Optional[DateLike] = None
) -> dict[str, Any]:
    params = {"coverage": coverage, **date_range(start, end)}
    return {name: value for name, value in params.items() if value is not None}


def as_csv(call: Call) -> Call:
    """The same call for the route's CSV form: ``Accept: text/csv``, the body handed back as text."""
    return dataclasses.replace(call, headers={**call.headers, "Accept": CSV_ACCEPT}, text=True)


class CsvText(str):
    """A CSV table as the API sent it (RFC 4180, a header row, CRLF line ends), with the meta the
    answer carried in its X-* headers as ``.meta`` (None if it carried none)."""

    meta: Optional[Meta]

    def __new__(cls, text: str, meta: Optional[Meta]) -> CsvText:
        made = super().__new__(cls, text)
        made.meta = meta
        return made


def csv_text(text: str, headers: Mapping[str, str]) -> CsvText:
    return CsvText(text, meta_from_headers(headers))


class CompaniesCsvBuilder:
    """Collects the CSV pages of ``listCompanies`` (following ``X-Next-Cursor``) into one table:
    the first page's header row, then every page's rows."""

    def __init__(
        self,
        *,
        q: Optional[str],
        sector: Optional[str],
        status: Optional[str],
        sort: Optional[str],
        limit: int,
        outcome: Optional[Outcomes] = None,
    ) -> None:
        self.filters = {
            "q": q,
            "sector": sector,
            "status": status,
            "sort": sort,
            "outcome": outcomes(outcome),
        }
        self.limit = limit
        self.cursor: Optional[str] = None
        self.header: Optional[str] = None
        self.parts: list[str] = []
        self.meta: Optional[Meta] = None
        self.done = False

    def call(self) -> Call:
        return as_csv(list_companies(limit=self.limit, cursor=self.cursor, **self.filters))

    def add(self, text: str, headers: Mapping[str, str]) -> None:
        header, _, rows = text.partition("\r\n")
        if self.header is None:
            self.header = header
            self.meta = meta_from_headers(headers)
        elif header != self.header:
            raise ResponseError("the pages of the list have different columns")
        self.parts.append(rows)
        following = headers.get("X-Next-Cursor")
        if following is not None and following == self.cursor:
            raise ResponseError("the API sent the same cursor twice")
        self.cursor = following
        self.done = following is None

    def text(self) -> CsvText:
        return CsvText(f"{self.header}\r\n" + "".join(self.parts), self.meta)


class CompaniesFrameBuilder:
    """Collects ``listCompanies`` pages (decoded JSON) into one DataFrame row per company."""

    def __init__(
        self,
        *,
        q: Optional[str],
        sector: Optional[str],
        status: Optional[str],
        sort: Optional[str],
        limit: int,
        outcome: Optional[Outcomes] = None,
    ) -> None:
        self.filters = {
            "q": q,
            "sector": sector,
            "status": status,
            "sort": sort,
            "outcome": outcomes(outcome),
        }
        self.limit = limit
        self.cursor: Optional[str] = None
        self.rows: list[tuple[Any, ...]] = []
        self.meta: Optional[Meta] = None
        self.done = False

    def call(self) -> Call:
        return list_companies(limit=self.limit, cursor=self.cursor, **self.filters)

    def add(self, body: Any) -> None:
        if self.meta is None:
            self.meta = from_json(Meta, body.get("meta"))
        self.rows.extend(company_row(item) for item in body.get("companies", ()))
        self.cursor = next_cursor(body, self.cursor)
        self.done = self.cursor is None

    def frame(self) -> pd.DataFrame:
        return companies_frame(self.rows, self.meta.to_dict() if self.meta is not None else None)
