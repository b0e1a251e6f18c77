"""``AsyncClient``: the asyncio client (``httpx.AsyncClient`` and ``asyncio.sleep`` drive the core).

The same methods as ``Client``: coroutines, and async iterators for lists and exports. Requests,
parsing and retry decisions are the shared ones of ``_core``; only the I/O loop is here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Generator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, Optional, TypeVar, Union, overload

import httpx

from . import _calls as calls
from ._core import (
    Call,
    ClientCore,
    ClientStats,
    ETagCache,
    Outcome,
    RateLimit,
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
from ._export import Download, ExportParser, FileTransfer, StreamTransfer
from .errors import RangeNotSatisfiable
from .models import (
    Change,
    ChangesPage,
    CompaniesPage,
    Company,
    CompanyListItem,
    Events,
    ExportCompany,
    ExportHeader,
    ExportSeries,
    Meta,
    Resolution,
    Scorecard,
    ScorecardTargets,
    Series,
    SigningKeys,
    Usage,
    from_json,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AsyncClient", "AsyncExportStream", "AsyncPaginator"]

P = TypeVar("P", CompaniesPage, ChangesPage)
T = TypeVar("T")


class AsyncPaginator(Generic[P, T]):
    """Items of a paginated list, fetched page by page as ``async for`` reaches them."""

    def __init__(
        self, fetch: Callable[[Optional[str]], Awaitable[P]], items: Callable[[P], Iterable[T]]
    ) -> None:
        self._fetch: Callable[[Optional[str]], Awaitable[P]] = fetch
        self._items: Callable[[P], Iterable[T]] = items

    async def pages(self) -> AsyncIterator[P]:
        cursor: Optional[str] = None
        while True:
            page = await self._fetch(cursor)
            yield page
            cursor = next_cursor(page.raw, cursor)
            if cursor is None:
                return

    async def _walk(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in self._items(page):
                yield item

    def __aiter__(self) -> AsyncIterator[T]:
        return self._walk()

    async def to_list(self) -> list[T]:
        """Every item, all pages fetched."""
        return [item async for item in self]


class AsyncExportStream(Generic[T]):
    """An export's lines for ``async for``: streamed, decoded, resumed after breaks. Read once."""

    def __init__(self, client: AsyncClient, transfer: StreamTransfer, parser: ExportParser[T]) -> None:
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

    async def _walk(self) -> AsyncIterator[T]:
        async for line in self._client._stream_lines(self._transfer):
            item = self._parser.parse(line)
            if item is not None:
                yield item
        self._parser.finish()

    def __aiter__(self) -> AsyncIterator[T]:
        if self._started:
            raise RuntimeError("an export stream is read once; call export() again")
        self._started = True
        return self._walk()


class AsyncClient:
    """The Valuation Marks API for asyncio; see ``Client`` for the options.

    Use it as ``async with AsyncClient() as client:``, or ``await client.aclose()``.
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
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        policy = RetryPolicy(max_retries=max_retries, backoff=backoff, max_retry_wait=max_retry_wait)
        self._core = ClientCore(
            api_key=api_key, base_url=base_url, retry=policy, cache=cache, on_retry=on_retry, headers=headers
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)
        self.max_resumes = max_resumes

    # ---------------------------------------------------------------------------------------
    # Plumbing

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def stats(self) -> ClientStats:
        return self._core.stats

    @property
    def rate_limit(self) -> Optional[RateLimit]:
        return self._core.rate_limit

    @property
    def last_response(self) -> Optional[ResponseInfo]:
        return self._core.last_response

    @property
    def cache(self) -> Optional[ETagCache]:
        return self._core.cache

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def _send(self, step: Send) -> Outcome:
        request = self._http.build_request(step.method, step.url, headers=dict(step.headers))
        try:
            response = await self._http.send(request, stream=step.stream)
        except httpx.TransportError as exc:
            return exc
        if step.stream and response.status_code >= 300:
            try:
                await response.aread()
            except httpx.TransportError as exc:
                await response.aclose()
                return exc
        return response

    async def _drive(self, exchange: Generator[Step, Outcome, Reply]) -> Reply:
        outcome: Outcome = None
        try:
            while True:
                step = exchange.send(outcome)
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    outcome = None
                else:
                    outcome = await self._send(step)
        except StopIteration as stop:
            reply: Reply = stop.value
            return reply

    async def _json(self, call: Call) -> Any:
        return (await self._drive(self._core.exchange(call))).body

    async def request(
        self,
        path: str,
        params: Optional[dict[str, Any]] = None,
        *,
        method: str = "GET",
        headers: Optional[dict[str, str]] = None,
    ) -> Any:
        """Any API path, as decoded JSON; see ``Client.request``."""
        return await self._json(Call(path, params or {}, headers or {}, method=method.upper()))

    # ---------------------------------------------------------------------------------------
    # Companies

    @operation("listCompanies")
    def companies(
        self,
        *,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> AsyncPaginator[CompaniesPage, CompanyListItem]:
        """Every company matching the filters, for ``async for``, fetched page by page."""

        async def fetch(cursor: Optional[str]) -> CompaniesPage:
            return await self.companies_page(
                limit=limit, cursor=cursor, sector=sector, status=status, sort=sort
            )

        return AsyncPaginator(fetch, lambda page: page.companies)

    @operation("listCompanies")
    async def companies_page(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
    ) -> CompaniesPage:
        call = calls.list_companies(limit=limit, cursor=cursor, sector=sector, status=status, sort=sort)
        return from_json(CompaniesPage, await self._json(call))

    @operation("listCompanies")
    async def companies_frame(
        self,
        *,
        sector: Optional[str] = None,
        status: Optional[str] = None,
        sort: Optional[str] = None,
        limit: int = 200,
    ) -> pd.DataFrame:
        builder = calls.CompaniesFrameBuilder(sector=sector, status=status, sort=sort, limit=limit)
        while not builder.done:
            builder.add(await self._json(builder.call()))
        return builder.frame()

    @operation("getCompany")
    async def company(self, slug: str) -> Company:
        return from_json(Company, await self._json(calls.get_company(slug)))

    @operation("getMarkSeries")
    async def series(self, slug: str, coverage: Optional[int] = None) -> Series:
        return from_json(Series, await self._json(calls.get_mark_series(slug, coverage)))

    @operation("getMarkEvents")
    async def events(self, slug: str) -> Events:
        return from_json(Events, await self._json(calls.get_mark_events(slug)))

    @operation("getResolution")
    async def resolution(self, slug: str) -> Resolution:
        return from_json(Resolution, await self._json(calls.get_resolution(slug)))

    # ---------------------------------------------------------------------------------------
    # Account, keys, methodology

    @operation("getUsage")
    async def usage(self) -> Usage:
        return from_json(Usage, await self._json(calls.get_usage()))

    @operation("getSigningKeys")
    async def signing_keys(self) -> SigningKeys:
        return from_json(SigningKeys, await self._json(calls.get_signing_keys()))

    @operation("getScorecard")
    async def scorecard(self) -> Scorecard:
        return from_json(Scorecard, await self._json(calls.get_scorecard()))

    @operation("getScorecardTargets")
    async def scorecard_targets(self) -> ScorecardTargets:
        return from_json(ScorecardTargets, await self._json(calls.get_scorecard_targets()))

    @operation("getOpenApi")
    async def openapi(self) -> dict[str, Any]:
        document: dict[str, Any] = await self._json(calls.get_openapi())
        return document

    # ---------------------------------------------------------------------------------------
    # Changes and exports

    @operation("getChanges")
    def changes(
        self, since: calls.DateLike, *, limit: Optional[int] = None
    ) -> AsyncPaginator[ChangesPage, Change]:
        async def fetch(cursor: Optional[str]) -> ChangesPage:
            return await self.changes_page(since, limit=limit, cursor=cursor)

        return AsyncPaginator(fetch, lambda page: page.changes)

    @operation("getChanges")
    async def changes_page(
        self, since: calls.DateLike, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> ChangesPage:
        return from_json(ChangesPage, await self._json(calls.get_changes(since, limit=limit, cursor=cursor)))

    @overload
    def export(self, *, raw: Literal[False] = ...) -> AsyncExportStream[ExportCompany]: ...
    @overload
    def export(self, *, raw: Literal[True]) -> AsyncExportStream[dict[str, Any]]: ...

    @operation("getExport", ExportHeaderLine=ExportHeader, ExportCompanyLine=ExportCompany)
    def export(self, *, raw: bool = False) -> AsyncExportStream[Any]:
        transfer = StreamTransfer(calls.EXPORT_PATH, {}, self.stats, self.max_resumes)
        return AsyncExportStream(self, transfer, ExportParser(ExportCompany, raw=raw))

    @overload
    def export_series(
        self, coverage: Optional[int] = None, *, raw: Literal[False] = ...
    ) -> AsyncExportStream[ExportSeries]: ...
    @overload
    def export_series(
        self, coverage: Optional[int] = None, *, raw: Literal[True]
    ) -> AsyncExportStream[dict[str, Any]]: ...

    @operation("getSeriesExport", ExportHeaderLine=ExportHeader, ExportSeriesLine=ExportSeries)
    def export_series(self, coverage: Optional[int] = None, *, raw: bool = False) -> AsyncExportStream[Any]:
        transfer = StreamTransfer(
            calls.SERIES_EXPORT_PATH, calls.series_export_params(coverage), self.stats, self.max_resumes
        )
        return AsyncExportStream(self, transfer, ExportParser(ExportSeries, raw=raw))

    @operation("getExport")
    async def download_export(
        self, path: Union[str, os.PathLike[str]], *, max_bytes: Optional[int] = None
    ) -> Download:
        return await self._download(path, calls.EXPORT_PATH, {}, max_bytes)

    @operation("getSeriesExport")
    async def download_export_series(
        self,
        path: Union[str, os.PathLike[str]],
        coverage: Optional[int] = None,
        *,
        max_bytes: Optional[int] = None,
    ) -> Download:
        return await self._download(
            path, calls.SERIES_EXPORT_PATH, calls.series_export_params(coverage), max_bytes
        )

    async def _download(
        self,
        path: Union[str, os.PathLike[str]],
        url_path: str,
        params: dict[str, Any],
        max_bytes: Optional[int],
    ) -> Download:
        url = self._core.url(url_path, params)
        transfer = FileTransfer(path, url, url_path, params, self.stats, self.max_resumes, max_bytes)
        while not transfer.complete:
            try:
                reply = await self._drive(self._core.exchange(transfer.call()))
            except RangeNotSatisfiable as refused:
                if transfer.range_refused(refused):
                    break
                continue
            response = reply.response
            wait: Optional[float] = None
            try:
                transfer.begin(response)
                async for chunk in response.aiter_raw():
                    if transfer.write(chunk):
                        return transfer.result()
                if not transfer.complete:
                    raise httpx.RemoteProtocolError("the answer ended before the export did")
            except httpx.TransportError as exc:
                wait = transfer.broken(exc)
            finally:
                transfer.end()
                await response.aclose()
            if wait is not None:
                await asyncio.sleep(wait)
        return transfer.result()

    async def _stream_lines(self, transfer: StreamTransfer) -> AsyncIterator[bytes]:
        while True:
            response = (await self._drive(self._core.exchange(transfer.call()))).response
            wait: Optional[float] = None
            try:
                transfer.begin(response)
                async for chunk in response.aiter_raw():
                    for line in transfer.feed(chunk):
                        yield line
                if not transfer.complete and transfer.total is not None:
                    raise httpx.RemoteProtocolError("the answer ended before the export did")
            except httpx.TransportError as exc:
                wait = transfer.broken(exc)
            finally:
                await response.aclose()
            if wait is None:
                for line in transfer.finish():
                    yield line
                return
            await asyncio.sleep(wait)
