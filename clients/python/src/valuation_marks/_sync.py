# generated from _async.py by scripts/unasync.py; do not edit.
# Change _async.py and run `python scripts/unasync.py` (tests/test_unasync.py checks it).
"""``Client``, the blocking client: ``httpx.Client`` and ``time.sleep`` drive the shared core.

Generated from ``_async.py``, the one source of both clients, by ``scripts/unasync.py``.
Requests, parsing, bounds and retry decisions are the shared ones of ``_core``; only the I/O
loop is here.
"""

from __future__ import annotations

import dataclasses
import io
import os
import tempfile
import time
from collections.abc import Generator, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, Optional, TypeVar, Union, overload

import httpx

from . import _calls as calls
from ._core import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    Call,
    ClientCore,
    ClientStats,
    ETagCache,
    Outcome,
    RateLimit,
    Received,
    Reply,
    ResponseInfo,
    RetryEvent,
    RetryPolicy,
    Send,
    Sleep,
    Step,
    next_cursor,
    operation,
)
from ._deadline import DEADLINE, install
from ._export import Download, ExportParser, FileTransfer, LogParser, StreamTransfer
from ._frames import index_csv_frame, series_csv_frame
from .errors import (
    InvalidRequest,
    LogVerificationError,
    RangeNotSatisfiable,
    ResponseError,
    UnknownSigningKey,
)
from .models import (
    Backtest,
    Change,
    ChangesPage,
    CompaniesPage,
    Company,
    CompanyListItem,
    Events,
    ExportCompany,
    ExportHeader,
    ExportSeries,
    IndexConstituents,
    IndexSeries,
    Indices,
    LogConsistency,
    Meta,
    PublicationLog,
    Published,
    Resolution,
    Scorecard,
    ScorecardTargets,
    Sectors,
    Series,
    SigningKeys,
    Usage,
    from_json,
)
from .signing import KeysLike
from .transparency import Checkpoint, HistoryVerification, PinnedLike, log_keys

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Client", "ExportStream", "Paginator"]

ExportFormat = Literal["ndjson", "csv"]

P = TypeVar("P", CompaniesPage, ChangesPage)
T = TypeVar("T")


class Paginator(Generic[P, T]):
    """Items of a paginated list, fetched page by page (by cursor) as iteration reaches them.

    Iterating again walks the list again from the first page. ``pages()`` yields the pages
    themselves (with their ``meta`` and ``page`` info); ``to_list()`` fetches every item.
    """

    def __init__(
        self,
        fetch: Callable[[Optional[str]], P],
        items: Callable[[P], Iterable[T]],
    ) -> None:
        self._fetch: Callable[[Optional[str]], P] = fetch
        self._items: Callable[[P], Iterable[T]] = items

    def pages(self) -> Iterator[P]:
        cursor: Optional[str] = None
        while True:
            page = self._fetch(cursor)
            yield page
            cursor = next_cursor(page.raw, cursor)
            if cursor is None:
                return

    def _walk(self) -> Iterator[T]:
        for page in self.pages():
            yield from self._items(page)

    def __iter__(self) -> Iterator[T]:
        return self._walk()

    def to_list(self) -> list[T]:
        """Every item, all pages fetched."""
        return list(self)


class ExportStream(Generic[T]):
    """An export's company (or series) lines, streamed, decoded and resumed after breaks.

    Read it once. ``header`` and ``meta`` are there once the first line has been read;
    ``resumes`` counts the byte ranges that continued it after a broken connection.
    """

    def __init__(self, client: Client, transfer: StreamTransfer, parser: ExportParser[T]) -> None:
        self._client = client
        self._transfer = transfer
        self._parser = parser
        self._started = False

    @property
    def header(self) -> Optional[ExportHeader]:
        return self._parser.header

    @property
    def meta(self) -> Optional[Meta]:
        return self._parser.header.meta if self._parser.header is not None else None

    @property
    def etag(self) -> Optional[str]:
        return self._transfer.etag

    @property
    def resumes(self) -> int:
        return len(self._transfer.resumed_at)

    @property
    def resumed_at(self) -> list[int]:
        return list(self._transfer.resumed_at)

    @property
    def bytes_received(self) -> int:
        return self._transfer.offset

    def _walk(self) -> Iterator[T]:
        for line in self._client._stream_lines(self._transfer):
            item = self._parser.parse(line)
            if item is not None:
                yield item
        self._parser.finish()

    def __iter__(self) -> Iterator[T]:
        if self._started:
            raise RuntimeError("an export stream is read once; call export() again")
        self._started = True
        return self._walk()


class Client:
    """The Valuation Marks API.

    ``api_key`` defaults to ``$MARKS_API_KEY``, ``base_url`` to ``$MARKS_BASE_URL`` (else
    ``http://127.0.0.1:8080``). 429 is retried after ``Retry-After`` (at most ``max_retries``
    times, waits of at most ``max_retry_wait`` seconds), 503 and connection errors with
    exponential backoff; nothing else. ``cache=True`` (or an ``ETagCache``) revalidates
    repeated requests with ``If-None-Match``. ``on_retry`` is called with a ``RetryEvent``
    before each wait.

    Bounds, against a broken or hostile server: ``timeout`` (seconds, default 30) for each
    wait for bytes; ``deadline`` (seconds, default 120; None: none) for a whole call, retries
    and their waits included (``DeadlineExceeded``); ``max_response_bytes`` (default 64 MiB)
    for an answer, as sent and once decoded (``ResponseTooLarge``); exports are bounded by the
    length they declare instead. A redirect is not an answer (``ResponseError``) unless
    ``follow_redirects=True``, and the API key is never sent outside the base URL's origin.

    Use it as ``with Client() as client:``, or call ``close()``.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        backoff: float = 0.5,
        cache: Union[ETagCache, bool, None] = None,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
        headers: Optional[dict[str, str]] = None,
        max_resumes: int = 5,
        http_client: Optional[httpx.Client] = None,
        deadline: Optional[float] = DEFAULT_DEADLINE,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        follow_redirects: bool = False,
    ) -> None:
        policy = RetryPolicy(max_retries=max_retries, backoff=backoff, max_retry_wait=max_retry_wait)
        self._core = ClientCore(
            api_key=api_key,
            base_url=base_url,
            retry=policy,
            cache=cache,
            on_retry=on_retry,
            headers=headers,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
            follow_redirects=follow_redirects,
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        install(self._http)
        self.max_resumes = max_resumes

    # ---------------------------------------------------------------------------------------
    # Plumbing

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def stats(self) -> ClientStats:
        """Requests sent, retries waited out, 304s served from the cache, exports resumed."""
        return self._core.stats

    @property
    def rate_limit(self) -> Optional[RateLimit]:
        """The key's budget as the last answer reported it."""
        return self._core.rate_limit

    @property
    def last_response(self) -> Optional[ResponseInfo]:
        return self._core.last_response

    @property
    def cache(self) -> Optional[ETagCache]:
        return self._core.cache

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _send(self, step: Send) -> Outcome:
        """One request, its body read (bounded) unless it is a streamed call's 200 or 206."""
        token = DEADLINE.set(step.deadline)
        try:
            request = self._http.build_request(step.method, step.url, headers=dict(step.headers))
            response = self._http.send(request, stream=True, follow_redirects=False)
            if step.keep_open(response):
                return Received(response, None)
            try:
                reader = step.reader(response)
                for chunk in response.iter_raw():
                    reader.feed(chunk)
                return Received(response, reader.finish())
            finally:
                response.close()
        except httpx.TransportError as exc:
            return exc
        finally:
            DEADLINE.reset(token)

    def _drive(self, exchange: Generator[Step, Outcome, Reply]) -> Reply:
        outcome: Outcome = None
        try:
            while True:
                step = exchange.send(outcome)
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    outcome = None
                else:
                    outcome = self._send(step)
        except StopIteration as stop:
            reply: Reply = stop.value
            return reply
        finally:
            exchange.close()

    def _json(self, call: Call) -> Any:
        reply = self._drive(self._core.exchange(call))
        return reply.body

    def _csv(self, call: Call) -> calls.CsvText:
        reply = self._drive(self._core.exchange(calls.as_csv(call)))
        return calls.csv_text(reply.body, reply.response.headers)

    def request(
        self,
        path: str,
        params: Optional[dict[str, Any]] = None,
        *,
        method: str = "GET",
        headers: Optional[dict[str, str]] = None,
    ) -> Any:
        """Any API path, as decoded JSON, with the client's key, retries, bounds and errors.

        For operations this release has no method for yet; ``method`` exists for HEAD (no body,
        returns None) and to see a refusal, since the API is read-only.
        """
        return self._json(Call(path, params or {}, headers or {}, method=method.upper()))

    # ---------------------------------------------------------------------------------------
    # Companies

    @operation("listCompanies")
    def companies(
        self,
        *,
        q: Optional[str] = None,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        limit: Optional[int] = None,
        outcome: Optional[calls.Outcomes] = None,
    ) -> Paginator[CompaniesPage, CompanyListItem]:
        """Every company matching the filters, fetched lazily page by page (``limit`` per page).

        ``q`` searches names: a company matches when every word of ``q`` starts a word of its
        name, of one of its aliases (former and brand names) or of its slug, whatever the case
        and accents (``q="cursor"`` finds anysphere); at most 100 characters, with a letter or a
        digit. Without ``sort`` a search is in relevance order: names that start with the whole
        of ``q`` first, then the larger marks. ``sector`` is read in any case (``"Developer
        Tools"``; ``sectors()`` names them). ``sort`` is ``slug``, ``name``, ``value_usd``,
        ``delta_30d_pct``, ``last_event_on`` or ``outcome_on``, with a leading ``-`` for
        descending (nulls last either way). ``outcome`` keeps the companies with these outcomes:
        ``none`` (private, no deal agreed), ``listed``, ``sold``, ``sale_agreed``, ``bankrupt``,
        ``wound_down``, ``listing_agreed``, one or several (a list, or a comma-separated ``str``);
        ``["none", "sale_agreed", "listing_agreed"]`` lists the companies whose marks are current.
        """

        def fetch(cursor: Optional[str]) -> CompaniesPage:
            return self.companies_page(
                limit=limit,
                cursor=cursor,
                q=q,
                sector=sector,
                status=status,
                sort=sort,
                outcome=outcome,
            )

        return Paginator(fetch, lambda page: page.companies)

    @operation("listCompanies")
    def companies_page(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        q: Optional[str] = None,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        outcome: Optional[calls.Outcomes] = None,
    ) -> CompaniesPage:
        """One page of the company list; pass ``page.next_cursor`` as ``cursor`` for the next
        (with the same ``q``, filters and sort)."""
        call = calls.list_companies(
            limit=limit, cursor=cursor, q=q, sector=sector, status=status, sort=sort, outcome=outcome
        )
        return from_json(CompaniesPage, self._json(call))

    @operation("listCompanies")
    def companies_frame(
        self,
        *,
        q: Optional[str] = None,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        limit: int = 200,
        outcome: Optional[calls.Outcomes] = None,
    ) -> pd.DataFrame:
        """Every company matching ``q`` and the filters as a DataFrame, one row each, indexed by slug.

        Columns: name, aliases (joined with ``"; "``, empty when none), sector, status,
        as_of_date, value_usd, lower_usd, upper_usd, confidence, delta_30d_pct, then what
        explains the mark: last_event_on, last_event_type, last_event_usd,
        days_since_last_event, outcome_type, outcome_on (empty while the company is private)
        and vs_last_event_pct. ``.attrs["meta"]`` holds the meta. Needs the
        ``pandas`` extra.
        """
        builder = calls.CompaniesFrameBuilder(
            q=q, sector=sector, status=status, sort=sort, limit=limit, outcome=outcome
        )
        while not builder.done:
            builder.add(self._json(builder.call()))
        return builder.frame()

    @operation("listCompanies")
    def companies_csv(
        self,
        *,
        q: Optional[str] = None,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        limit: int = 200,
        outcome: Optional[calls.Outcomes] = None,
    ) -> calls.CsvText:
        """Every company matching ``q`` and the filters as one CSV table (the API's
        ``Accept: text/csv``: every page fetched by ``X-Next-Cursor``, one header row).

        The text as the API sends it: RFC 4180, CRLF line ends, text cells quoted, one that would
        start a spreadsheet formula (``=``, ``+``, ``-``, ``@``, a tab or CR) with a ``'`` before
        it. A ``str`` whose ``.meta`` is the answer's meta (from its X-* headers).
        """
        builder = calls.CompaniesCsvBuilder(
            q=q, sector=sector, status=status, sort=sort, limit=limit, outcome=outcome
        )
        while not builder.done:
            reply = self._drive(self._core.exchange(builder.call()))
            builder.add(reply.body, reply.response.headers)
        return builder.text()

    @operation("listSectors")
    def sectors(self) -> Sectors:
        """Every sector of the key's universe (a free key's: its 10 companies) with how many
        companies it has and how many are private; any key. ``.to_pandas()`` gives one row each."""
        return from_json(Sectors, self._json(calls.list_sectors()))

    @operation("getCompany")
    def company(self, slug: str) -> Company:
        """A company's profile: latest mark, delta and what the mark rests on (``observations``:
        the event it starts from, then the drift since).

        ``slug`` is checked against the slug grammar first (``InvalidSlug``), as for every
        method that takes one.
        """
        return from_json(Company, self._json(calls.get_company(slug)))

    @operation("getMarkSeries")
    def series(
        self,
        slug: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> Series:
        """A company's daily mark series; ``coverage`` 80 (the default) or 95 (pro and above).

        ``start`` and ``end`` (a ``datetime.date`` or ``"YYYY-MM-DD"``; the API's ``from`` and
        ``to``) keep the days between them, both included; either may be left out. A range
        outside the series gives no points; ``start`` after ``end`` is ``InvalidParameter``.
        """
        return from_json(Series, self._json(calls.get_mark_series(slug, coverage, start, end)))

    @operation("getMarkSeries")
    def series_frame(
        self,
        slug: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> pd.DataFrame:
        """The series as ``series(...).to_pandas()`` has it (indexed by date: mark_usd,
        lower_usd, upper_usd), read from the API's CSV form, which is quicker. Needs pandas."""
        text = self._csv(calls.get_mark_series(slug, coverage, start, end))
        meta = text.meta.to_dict() if text.meta is not None else None
        return series_csv_frame(io.StringIO(text), meta, slug=slug, coverage=coverage or 80)

    @operation("getMarkSeries")
    def series_csv(
        self,
        slug: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> calls.CsvText:
        """The series as CSV: ``slug,date,mark_usd,lower_usd,upper_usd``, one row per day (a
        ``str`` with ``.meta``; see ``companies_csv``)."""
        return self._csv(calls.get_mark_series(slug, coverage, start, end))

    @operation("getMarkEvents")
    def events(self, slug: str) -> Events:
        """A company's append-only event history (pro and above): every record, oldest first, with
        ``reported_as``, ``source_grade`` and the record links (``supersedes``, ``superseded_by``,
        ``retracted_by``); ``.effective`` has the records the marks read."""
        return from_json(Events, self._json(calls.get_mark_events(slug)))

    @operation("getMarkEvents")
    def events_csv(self, slug: str) -> calls.CsvText:
        """The events as CSV: ``slug,event_id,occurred_on,event_type,valuation_usd,reported_as,
        source_url,source_grade,note,supersedes,superseded_by,retracted_by`` (a ``str`` with
        ``.meta``; see ``companies_csv``)."""
        return self._csv(calls.get_mark_events(slug))

    @operation("getResolution")
    def resolution(self, slug: str) -> Resolution:
        """A company's signed resolution record (enterprise); check it with ``.verify(trusted=...)``."""
        return from_json(Resolution, self._json(calls.get_resolution(slug)))

    @operation("getBacktest")
    def backtest(self, slug: str) -> Backtest:
        """How the method did on a company (research and above): each scored reported value
        against the numbers of the day before it (the mark, its bands, the confidence in force,
        the next-print forecast), then its outcome (listing, failure or sale).

        A research key gets where each event fell but not its value (``disclosure ==
        "research"``); pro and above every value, the 95% band and the last print (``"full"``).
        ``.to_pandas()`` gives one row per target.
        """
        return from_json(Backtest, self._json(calls.get_backtest(slug)))

    # ---------------------------------------------------------------------------------------
    # Indices

    @operation("listIndices")
    def indices(self) -> Indices:
        """The private-market indices (research and above): ``all``, then one per sector, each
        with its first and last day and its latest level with the 80% band. Indexable by id;
        ``.to_pandas()`` gives one row each."""
        return from_json(Indices, self._json(calls.list_indices()))

    @operation("getIndex")
    def index(
        self,
        id: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> IndexSeries:
        """An index's daily levels with their band at ``coverage`` (80, the default, or 95: pro
        and above) and how many companies it holds each day.

        ``id`` is ``"all"`` or a sector's name (``indices()`` lists them; another one is
        ``NotFound``, one outside the slug grammar ``InvalidSlug`` before any request).
        ``start`` and ``end`` keep the days between them, both included, as in ``series()``.
        """
        return from_json(IndexSeries, self._json(calls.get_index(id, coverage, start, end)))

    @operation("getIndex")
    def index_frame(
        self,
        id: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> pd.DataFrame:
        """The index's days as ``index(...).to_pandas()`` has them (indexed by date: level,
        lower, upper, constituents), read from the API's CSV form. Needs pandas."""
        text = self._csv(calls.get_index(id, coverage, start, end))
        meta = text.meta.to_dict() if text.meta is not None else None
        return index_csv_frame(io.StringIO(text), meta, index=id, coverage=coverage or 80)

    @operation("getIndex")
    def index_csv(
        self,
        id: str,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> calls.CsvText:
        """The index's days as CSV: ``index,date,level,lower,upper,constituents``, one row per
        day (a ``str`` with ``.meta``; see ``companies_csv``)."""
        return self._csv(calls.get_index(id, coverage, start, end))

    @operation("getIndexConstituents")
    def index_constituents(
        self, id: str, date: Optional[calls.DateLike] = None, coverage: Optional[int] = None
    ) -> IndexConstituents:
        """The companies in an index on ``date`` (the index's last day when None), largest mark
        first, each with its mark and band of that day at ``coverage`` (80 or 95: pro) and its
        weight. A date that is not a day of the index is ``InvalidParameter``.
        ``.to_pandas()`` gives one row per company."""
        call = calls.get_index_constituents(id, date, coverage)
        return from_json(IndexConstituents, self._json(call))

    @operation("getIndexConstituents")
    def index_constituents_csv(
        self, id: str, date: Optional[calls.DateLike] = None, coverage: Optional[int] = None
    ) -> calls.CsvText:
        """The constituents as CSV: ``index,date,slug,name,weight,mark_usd,lower_usd,upper_usd``
        (a ``str`` with ``.meta``; see ``companies_csv``)."""
        return self._csv(calls.get_index_constituents(id, date, coverage))

    # ---------------------------------------------------------------------------------------
    # Account, keys, methodology

    @operation("getUsage")
    def usage(self) -> Usage:
        """The key's tier, budget, limits and scopes (research and above)."""
        return from_json(Usage, self._json(calls.get_usage()))

    @operation("getSigningKeys")
    def signing_keys(self) -> SigningKeys:
        """The Ed25519 keys (JWKS) the server publishes; needs no key.

        They say which public key has which thumbprint, not which keys to trust: verify records
        against thumbprints or a JWKS file you obtained apart from this server.
        """
        return from_json(SigningKeys, self._json(calls.get_signing_keys()))

    @operation("getScorecard")
    def scorecard(self) -> Scorecard:
        """The methodology's scorecard: the mark, the next-print forecast and the last print on
        the event-day and month-end scores, with coverage, the confidence judged as a forecast,
        bootstrap comparisons and findings in words; needs no key.

        The figures are the same for every caller; ``disclosure`` names the form of
        ``scorecard_targets()`` the caller gets. A client with a key sends it: the call is
        metered.
        """
        return from_json(Scorecard, self._json(calls.get_scorecard()))

    @operation("getScorecardTargets")
    def scorecard_targets(self) -> ScorecardTargets:
        """Every row the scorecard scores (event-day ``targets`` and ``month_ends``), with each
        number's log error; needs no key.

        Without a key, or with a free or research key, the public form (relative quantities
        only: no slug, event id, dollars or logs per row); a pro, business or enterprise key gets
        every field. A client with a key sends it: the call is metered.
        """
        return from_json(ScorecardTargets, self._json(calls.get_scorecard_targets()))

    @operation("getOpenApi")
    def openapi(self) -> dict[str, Any]:
        """The served OpenAPI document, as decoded JSON."""
        document: dict[str, Any] = self._json(calls.get_openapi())
        return document

    # ---------------------------------------------------------------------------------------
    # The publication log

    @operation("getPublished")
    def published(
        self,
        slug: str,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> Published:
        """A company's marks as first published, in the publication log (research and above):
        each entry with its leaf hash and inclusion proof in the tree of today's signed
        checkpoint (``.log``), and every published version (``.versions``). Pro and above also
        get each entry's 95% bounds (``band_95``), which the entry commits to by a digest.

        ``start`` and ``end`` keep the entries whose ``as_of`` is between them, both included.
        Check the answer with ``.verify(trusted)`` or ``verify_history``: nothing in it is to be
        trusted before.
        """
        found = from_json(Published, self._json(calls.get_published(slug, start, end)))
        if start is None and end is None:
            return found
        as_date = calls.as_date
        return dataclasses.replace(found, start=as_date(start), end=as_date(end))

    @operation("getPublished")
    def published_csv(
        self,
        slug: str,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> calls.CsvText:
        """The published entries as CSV, one row each (the inclusion proof's hashes joined by
        spaces; the 95% bounds and salt for pro and above): a ``str`` with ``.meta``."""
        return self._csv(calls.get_published(slug, start, end))

    @operation("getLogCheckpoint")
    def log_checkpoint(self) -> Checkpoint:
        """Today's signed checkpoint of the publication log (research and above), parsed: its
        origin, tree size and root hash, and the signed note whole (``.note``: keep it, and pass
        it as ``kept=`` to ``verify_history`` later). Not verified: ``.verify(trusted)`` does."""
        note = self._json(calls.get_log_checkpoint())
        try:
            return Checkpoint.parse(note)
        except LogVerificationError as exc:
            raise ResponseError(f"GET /v1/log/checkpoint: not a signed checkpoint ({exc.detail})") from None

    @operation("getLogConsistency")
    def log_consistency(self, from_size: int) -> LogConsistency:
        """The consistency proof from the tree of a published checkpoint (``from_size`` entries,
        one of ``published(...).versions``) to today's (research and above). A size that is no
        published checkpoint's is ``InvalidParameter``; today's own gives the empty proof."""
        return from_json(LogConsistency, self._json(calls.get_log_consistency(from_size)))

    def verify_history(
        self,
        slug: str,
        trusted: PinnedLike,
        *,
        keys: Optional[KeysLike] = None,
        kept: Union[str, Checkpoint, None] = None,
        origin: Optional[str] = None,
    ) -> HistoryVerification:
        """Fetches a company's published history and checks it against the key you pinned (see
        ``verify_history``); given ``kept``, a checkpoint you kept from before (its note), also
        fetches the consistency proof from it and checks that today's log extends it.

        ``trusted`` is a PEM public key (or its file), a JWKS file or document, or RFC 7638
        thumbprints; with thumbprints and no ``keys``, the public keys come from
        ``signing_keys()``, used only if their thumbprint is pinned. Returns a
        ``HistoryVerification``; raises ``LogVerificationError``.
        """
        if keys is None:
            try:
                log_keys(trusted)
            except UnknownSigningKey:
                keys = self.signing_keys()
        published = self.published(slug)
        consistency: Optional[LogConsistency] = None
        kept_checkpoint = Checkpoint.parse(kept) if kept is not None else None
        for _ in range(2):
            if kept_checkpoint is None:
                break
            size, sizes = published.log.tree_size, {version.tree_size for version in published.versions}
            if not (kept_checkpoint.tree_size < size and kept_checkpoint.tree_size in sizes):
                break  # nothing to fetch: equal sizes, or a refusal the check words
            try:
                consistency = self.log_consistency(kept_checkpoint.tree_size)
            except InvalidRequest as refused:
                raise LogVerificationError(
                    "consistency",
                    f"the server proves no consistency from {kept_checkpoint.tree_size} entries: "
                    f"{refused.detail}",
                ) from None
            if consistency.to.tree_size == size:
                break
            published = self.published(slug)  # the log moved between the two answers
        return published.verify(
            trusted, keys=keys, kept=kept_checkpoint, consistency=consistency, origin=origin
        )

    # ---------------------------------------------------------------------------------------
    # Changes and exports

    @operation("getChanges")
    def changes(
        self, since: calls.DateLike, *, limit: Optional[int] = None
    ) -> Paginator[ChangesPage, Change]:
        """Companies changed since the dataset version ``since``, fetched lazily (pro and above).

        Nothing when ``since`` is the version served. ``InvalidParameter`` when ``since`` is
        older than the change log: re-sync from ``export()``.
        """

        def fetch(cursor: Optional[str]) -> ChangesPage:
            return self.changes_page(since, limit=limit, cursor=cursor)

        return Paginator(fetch, lambda page: page.changes)

    @operation("getChanges")
    def changes_page(
        self, since: calls.DateLike, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> ChangesPage:
        """One page of the changes since ``since``."""
        return from_json(ChangesPage, self._json(calls.get_changes(since, limit=limit, cursor=cursor)))

    @overload
    def export(self, *, raw: Literal[False] = ...) -> ExportStream[ExportCompany]: ...
    @overload
    def export(self, *, raw: Literal[True]) -> ExportStream[dict[str, Any]]: ...

    @operation("getExport", ExportHeaderLine=ExportHeader, ExportCompanyLine=ExportCompany)
    def export(self, *, raw: bool = False) -> ExportStream[Any]:
        """The whole dataset version, one ``ExportCompany`` per company (enterprise).

        Streamed in the stored gzip, decoded as it arrives, resumed with ``Range``/``If-Range``
        if the connection breaks (at most ``max_resumes`` times without progress). ``raw=True``
        yields the decoded JSON objects instead of models (about twice as fast). Bounded by the
        length the answer declares; the deadline covers each request's headers, not the
        reading, which goes at the pace of the loop that reads it: the time spent waiting for
        the body's bytes may reach the deadline plus the declared length at 64 KiB/s.
        """
        transfer = self._stream_transfer(calls.EXPORT_PATH, {})
        return ExportStream(self, transfer, ExportParser(ExportCompany, raw=raw))

    @overload
    def export_series(
        self,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
        raw: Literal[False] = ...,
    ) -> ExportStream[ExportSeries]: ...
    @overload
    def export_series(
        self,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
        raw: Literal[True],
    ) -> ExportStream[dict[str, Any]]: ...

    @operation("getSeriesExport", ExportHeaderLine=ExportHeader, ExportSeriesLine=ExportSeries)
    def export_series(
        self,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
        raw: bool = False,
    ) -> ExportStream[Any]:
        """Every company's daily series at ``coverage`` (80 by default, or 95), streamed as ``export``.

        ``start`` and ``end`` cut every series to the days between them, both included, as in
        ``series()``; ``header.start`` and ``header.end`` say so. A cut export is made for the
        request and sent whole (no gzip, no byte ranges): after a break it is asked for again and
        what was read already is skipped.
        """
        params = calls.series_export_params(coverage, start, end)
        transfer = self._stream_transfer(calls.SERIES_EXPORT_PATH, params)
        return ExportStream(self, transfer, ExportParser(ExportSeries, raw=raw))

    @operation("getExport")
    def download_export(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        format: ExportFormat = "ndjson",
        max_bytes: Optional[int] = None,
    ) -> Download:
        """Stores the export as served (gzip) in ``path``; resumes a part left by an earlier call.

        ``format="csv"`` stores its CSV form instead (one row per company with both bands, no
        events or records; ``Download.meta`` has its meta), which pandas reads as it is:
        ``pd.read_csv(path, compression="gzip")`` when ``Download.encoding`` is ``"gzip"``.
        ``max_bytes`` stops once the part holds that many bytes (a later call resumes it). Read
        an NDJSON file with ``read_export(path)``.
        """
        return self._download(path, calls.EXPORT_PATH, {}, max_bytes, format)

    @operation("getSeriesExport")
    def download_export_series(
        self,
        path: Union[str, os.PathLike[str]],
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
        format: ExportFormat = "ndjson",
        max_bytes: Optional[int] = None,
    ) -> Download:
        """Stores the series export in ``path``, as ``download_export``; ``start`` and ``end`` cut
        it as in ``export_series`` (a cut export is stored as NDJSON or CSV text, not gzip)."""
        params = calls.series_export_params(coverage, start, end)
        return self._download(path, calls.SERIES_EXPORT_PATH, params, max_bytes, format)

    @operation("getSeriesExport")
    def export_series_frame(
        self,
        coverage: Optional[int] = None,
        *,
        start: Optional[calls.DateLike] = None,
        end: Optional[calls.DateLike] = None,
    ) -> pd.DataFrame:
        """Every company's series as one DataFrame indexed by (slug, date): mark_usd, lower_usd,
        upper_usd. The CSV form of the export, downloaded to a temporary file (resumed if the
        connection breaks) and read by pandas: about three times quicker than the NDJSON.
        ``.attrs`` has ``meta`` and ``coverage``. Needs pandas."""
        with tempfile.TemporaryDirectory(prefix="valuation-marks-") as directory:
            path = os.path.join(directory, "series.csv")
            download = self.download_export_series(path, coverage, start=start, end=end, format="csv")
            meta = download.meta.to_dict() if download.meta is not None else None
            compression = "gzip" if download.encoding == "gzip" else None
            return series_csv_frame(path, meta, compression=compression, coverage=coverage or 80)

    @operation("getLogExport")
    def export_log(self) -> PublicationLog:
        """The whole publication log (enterprise): every entry with its 95% bounds and every
        version's checkpoint, read as ``export`` streams (gzip, resumed after a break).
        ``.verify(trusted)`` replays it, checkpoint by checkpoint."""
        transfer = self._stream_transfer(calls.LOG_EXPORT_PATH, {})
        parser = LogParser()
        for line in self._stream_lines(transfer):
            parser.parse(line)
        return parser.finish()

    @operation("getLogExport")
    def download_export_log(
        self, path: Union[str, os.PathLike[str]], *, max_bytes: Optional[int] = None
    ) -> Download:
        """Stores the log file in ``path`` as ``download_export`` stores the export (resumed by
        a later call); read it with ``read_publication_log(path)``."""
        return self._download(path, calls.LOG_EXPORT_PATH, {}, max_bytes)

    def _stream_transfer(self, url_path: str, params: dict[str, Any]) -> StreamTransfer:
        limit, deadline = self._core.max_response_bytes, self._core.deadline
        return StreamTransfer(url_path, params, self.stats, self.max_resumes, limit, deadline)

    @staticmethod
    def _read(
        transfer: Union[StreamTransfer, FileTransfer],
        chunks: Iterator[bytes],
    ) -> Optional[bytes]:
        """The next chunk of an export's body (None at its end), the wait counted in its budget."""
        with transfer.reading():
            try:
                return chunks.__next__()
            except StopIteration:
                return None

    def _download(
        self,
        path: Union[str, os.PathLike[str]],
        url_path: str,
        params: dict[str, Any],
        max_bytes: Optional[int],
        format: ExportFormat = "ndjson",
    ) -> Download:
        url = self._core.url(url_path, params)
        limit, deadline = self._core.max_response_bytes, self._core.deadline
        transfer = FileTransfer(
            path, url, url_path, params, self.stats, self.max_resumes, max_bytes, limit, deadline, format
        )
        while not transfer.complete:
            try:
                reply = self._drive(self._core.exchange(transfer.call()))
            except RangeNotSatisfiable as refused:
                if transfer.range_refused(refused):
                    break
                continue
            response = reply.response
            wait: Optional[float] = None
            try:
                transfer.begin(response)
                chunks = response.iter_raw()
                while (chunk := self._read(transfer, chunks)) is not None:
                    if transfer.write(chunk):
                        return transfer.result()  # max_bytes reached
                transfer.ended()
                if not transfer.complete:
                    raise httpx.RemoteProtocolError("the answer ended before the export did")
            except httpx.TransportError as exc:
                wait = transfer.broken(exc)
            finally:
                transfer.end()
                response.close()
            if wait is not None:
                time.sleep(wait)
        return transfer.result()

    def _stream_lines(self, transfer: StreamTransfer) -> Iterator[bytes]:
        while True:
            reply = self._drive(self._core.exchange(transfer.call()))
            response = reply.response
            wait: Optional[float] = None
            try:
                transfer.begin(response)
                chunks = response.iter_raw()
                while (chunk := self._read(transfer, chunks)) is not None:
                    yield from transfer.feed(chunk)
                if not transfer.complete and transfer.total is not None:
                    raise httpx.RemoteProtocolError("the answer ended before the export did")
            except httpx.TransportError as exc:
                wait = transfer.broken(exc)
            finally:
                response.close()
            if wait is None:
                yield from transfer.finish()
                return
            time.sleep(wait)
