"""The API's operations as ``Call`` values (paths and parameters), shared by both clients."""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Any, Optional, Union

from ._core import Call, next_cursor
from ._frames import companies_frame, company_row
from .errors import InvalidSlug
from .models import Meta, from_json

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


def list_companies(
    *,
    limit: Optional[int],
    cursor: Optional[str],
    sector: Optional[str],
    status: Optional[str],
    sort: Optional[str],
) -> Call:
    params = {"limit": limit, "cursor": cursor, "sector": sector, "status": status, "sort": sort}
    return Call("/v1/companies", params)


def get_company(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}")


def get_mark_series(slug: str, coverage: Optional[int]) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/marks", {"coverage": coverage})


def get_mark_events(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/events")


def get_resolution(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/resolution")


def get_backtest(slug: str) -> Call:
    return Call(f"/v1/companies/{_slug(slug)}/backtest")


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


EXPORT_PATH = "/v1/export"
SERIES_EXPORT_PATH = "/v1/export/series"


def series_export_params(coverage: Optional[int]) -> dict[str, Any]:
    return {"coverage": coverage} if coverage is not None else {}


class CompaniesFrameBuilder:
    """Collects ``listCompanies`` pages (decoded JSON) into one DataFrame row per company."""

    def __init__(
        self, *, sector: Optional[str], status: Optional[str], sort: Optional[str], limit: int
    ) -> None:
        self.filters = {"sector": sector, "status": status, "sort": sort}
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
