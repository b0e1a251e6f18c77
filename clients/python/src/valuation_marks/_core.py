"""What ``Client`` and ``AsyncClient`` share: request building, response parsing, retry decisions.

An API call is a generator (``ClientCore.exchange``) that yields the I/O it needs, ``Send``
(an HTTP request) or ``Sleep`` (a wait before a retry), and is sent back the outcome: the
``httpx.Response``, or the ``httpx.TransportError`` the attempt raised. It returns a ``Reply``
or raises the API's error. The sync client drives it with ``httpx.Client`` and
``time.sleep``, the async client with ``httpx.AsyncClient`` and ``asyncio.sleep``: the only
code the two do not share is that loop.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Generator, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Optional, TypeVar, Union

import httpx

from ._version import __version__
from .errors import ApiError, ConnectionFailed, ResponseError, error_class

__all__ = [
    "DEFAULT_BASE_URL",
    "Call",
    "ClientCore",
    "ClientStats",
    "ETagCache",
    "RateLimit",
    "Reply",
    "ResponseInfo",
    "RetryEvent",
    "RetryPolicy",
    "Send",
    "Sleep",
    "operation",
]

#: Where ``marks serve`` listens by default; set ``MARKS_BASE_URL`` or ``base_url`` otherwise.
DEFAULT_BASE_URL = "http://127.0.0.1:8080"

F = TypeVar("F", bound=Callable[..., Any])


def operation(operation_id: str, **schemas: type) -> Callable[[F], F]:
    """Marks a client method as (one of) the way(s) to call an OpenAPI operation.

    ``schemas`` maps schema names of the OpenAPI document to the models that read them, for
    operations whose JSON is not the response body (the NDJSON lines of the exports). The test
    that keeps the client in step with the served document reads these marks.
    """

    def mark(func: F) -> F:
        func.__marks_operation__ = operation_id  # type: ignore[attr-defined]
        func.__marks_schemas__ = dict(schemas)  # type: ignore[attr-defined]
        return func

    return mark


# --------------------------------------------------------------------------------------------
# Retries


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """When to try again. Only 429 (after ``Retry-After``), 503 and connection errors are retried.

    ``max_retries`` bounds the retries of one request (0: raise at once). A 429 is retried after
    the ``Retry-After`` it carries (never sooner, plus up to 10% jitter), unless that is longer
    than ``max_retry_wait``: then ``RateLimited`` is raised at once, since retrying earlier
    would only be refused again. 503 and connection errors back off exponentially from
    ``backoff`` seconds up to ``max_backoff`` (or wait the ``Retry-After`` of a 503, if longer).
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_wait: float = 60.0

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2.0**attempt)
        return base / 2 + random.uniform(0, base / 2)

    def wait_for_status(self, attempt: int, status: int, retry_after: Optional[float]) -> Optional[float]:
        """Seconds to wait before retrying a response with ``status``, or None: do not retry."""
        if attempt >= self.max_retries:
            return None
        if status == 429:
            if retry_after is None:
                return self._backoff(attempt)
            if retry_after > self.max_retry_wait:
                return None
            return retry_after + random.uniform(0, min(1.0, retry_after / 10))
        if status == 503:
            return max(self._backoff(attempt), retry_after or 0.0)
        return None

    def wait_for_error(self, attempt: int, error: BaseException) -> Optional[float]:
        """Seconds to wait before retrying after a transport error, or None: do not retry."""
        if attempt >= self.max_retries or not is_retryable(error):
            return None
        return self._backoff(attempt)


def is_retryable(error: BaseException) -> bool:
    """Connection errors: refused, reset, broken mid-answer, timed out."""
    return isinstance(error, (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError))


@dataclasses.dataclass(frozen=True)
class RetryEvent:
    """What ``on_retry`` is told before each wait: why, how long, which attempt."""

    url: str
    attempt: int  # 1 for the first retry
    reason: str  # "rate_limited", "unavailable" or "connection"
    wait: float
    status: Optional[int] = None
    retry_after: Optional[float] = None
    error: Optional[BaseException] = None


# --------------------------------------------------------------------------------------------
# What the client observes


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """The key's budget as the last answer reported it (``X-RateLimit-*``)."""

    limit: int
    remaining: int
    reset: int  # epoch seconds at which the budget is whole again

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> Optional[RateLimit]:
        try:
            return cls(
                int(headers["X-RateLimit-Limit"]),
                int(headers["X-RateLimit-Remaining"]),
                int(headers.get("X-RateLimit-Reset", "0")),
            )
        except (KeyError, ValueError):
            return None


@dataclasses.dataclass(frozen=True)
class ResponseInfo:
    """The last HTTP answer: status, request id, ETag, budget, whether the cache served it."""

    status: int
    url: str
    request_id: Optional[str]
    etag: Optional[str]
    rate_limit: Optional[RateLimit]
    from_cache: bool


@dataclasses.dataclass
class ClientStats:
    """Counters since the client was made."""

    requests: int = 0  # HTTP requests sent, retries and resumes included
    retries: int = 0  # waits before a retry (429, 503, connection errors)
    not_modified: int = 0  # 304 answers served from the ETag cache
    resumes: int = 0  # export downloads resumed with a byte range


class ETagCache:
    """Bodies by URL and key, revalidated with ``If-None-Match``; least recently used go first.

    A 304 costs one unit of the budget and no body. Thread-safe; share one between clients if
    you like (entries are kept apart by API key).
    """

    def __init__(self, max_entries: int = 512) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Optional[tuple[str, Any]]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: tuple[str, str], etag: str, body: Any) -> None:
        with self._lock:
            self._entries[key] = (etag, body)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


# --------------------------------------------------------------------------------------------
# The protocol between core and drivers


@dataclasses.dataclass(frozen=True)
class Call:
    """One API call, before retries: ``GET path?params`` with extra headers."""

    path: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    method: str = "GET"
    stream: bool = False  # hand back the open response (exports) instead of decoded JSON
    cache: bool = True  # may use the ETag cache (when the client has one)


@dataclasses.dataclass(frozen=True)
class Send:
    method: str
    url: str
    headers: Mapping[str, str]
    stream: bool


@dataclasses.dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Union[Send, Sleep]
Outcome = Union[httpx.Response, httpx.TransportError, None]


@dataclasses.dataclass(frozen=True)
class Reply:
    """A successful answer: decoded JSON (``body``), or the open response of a streamed call."""

    body: Any
    response: httpx.Response
    from_cache: bool = False


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` in seconds: delta-seconds, or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (moment - datetime.now(timezone.utc)).total_seconds())


def api_error(response: httpx.Response) -> ApiError:
    """The exception for an error answer: its problem+json, or what can be said without one."""
    status = response.status_code
    problem: dict[str, Any] = {}
    try:
        data = json.loads(response.content)
        if isinstance(data, dict):
            problem = data
    except ValueError:
        pass
    code = problem.get("code") if isinstance(problem.get("code"), str) else None
    detail = problem.get("detail") or response.reason_phrase or f"HTTP {status}"
    return error_class(code, status)(
        status,
        code or f"http_{status}",
        str(detail),
        request_id=problem.get("request_id") or response.headers.get("X-Request-ID"),
        title=problem.get("title"),
        type=problem.get("type"),
        instance=problem.get("instance"),
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        problem=problem,
        headers={name.lower(): value for name, value in response.headers.items()},
    )


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


class ClientCore:
    """Configuration and state of a client, and the exchange of one call."""

    def __init__(
        self,
        *,
        api_key: Optional[str],
        base_url: Optional[str],
        retry: RetryPolicy,
        cache: Union[ETagCache, bool, None],
        on_retry: Optional[Callable[[RetryEvent], None]],
        headers: Optional[Mapping[str, str]],
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("MARKS_API_KEY") or None
        self.base_url = (base_url or os.environ.get("MARKS_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.retry = retry
        self.cache: Optional[ETagCache] = ETagCache() if cache is True else (cache or None)
        self.on_retry = on_retry
        self.stats = ClientStats()
        self.rate_limit: Optional[RateLimit] = None
        self.last_response: Optional[ResponseInfo] = None
        self.headers = {
            "User-Agent": f"valuation-marks-python/{__version__} httpx/{httpx.__version__}",
            "Accept": "application/json, application/problem+json",
            "Accept-Encoding": "gzip",
            **(headers or {}),
        }
        if self.api_key:
            self.headers["X-API-Key"] = self.api_key
        key_hash = hashlib.sha256((self.api_key or "").encode()).hexdigest()[:16]
        self._cache_scope = key_hash

    def url(self, path: str, params: Mapping[str, Any]) -> str:
        clean = {name: _param(value) for name, value in params.items() if value is not None}
        return str(httpx.URL(self.base_url + path, params=clean or None))

    def _observe(self, response: httpx.Response, *, from_cache: bool) -> None:
        limit = RateLimit.from_headers(response.headers)
        if limit is not None:
            self.rate_limit = limit
        self.last_response = ResponseInfo(
            status=response.status_code,
            url=str(response.request.url),
            request_id=response.headers.get("X-Request-ID"),
            etag=response.headers.get("ETag"),
            rate_limit=limit,
            from_cache=from_cache,
        )

    def _retrying(self, event: RetryEvent) -> Sleep:
        self.stats.retries += 1
        if self.on_retry is not None:
            self.on_retry(event)
        return Sleep(event.wait)

    def exchange(self, call: Call) -> Generator[Step, Outcome, Reply]:
        """One call with its retries; see the module docstring for the protocol."""
        url = self.url(call.path, call.params)
        cache_key = (self._cache_scope, url)
        use_cache = self.cache is not None and call.cache and call.method == "GET" and not call.stream
        attempt = 0
        while True:
            headers = {**self.headers, **call.headers}
            cached = self.cache.get(cache_key) if (use_cache and self.cache is not None) else None
            if cached is not None:
                headers["If-None-Match"] = cached[0]
            self.stats.requests += 1
            outcome = yield Send(call.method, url, headers, call.stream)
            if not isinstance(outcome, httpx.Response):
                assert outcome is not None
                wait = self.retry.wait_for_error(attempt, outcome)
                if wait is None:
                    raise ConnectionFailed(f"{call.method} {url}: {outcome!r}") from outcome
                attempt += 1
                yield self._retrying(RetryEvent(url, attempt, "connection", wait, error=outcome))
                continue
            response = outcome
            status = response.status_code
            self._observe(response, from_cache=status == 304 and cached is not None)
            if status == 304 and cached is not None:
                self.stats.not_modified += 1
                return Reply(cached[1], response, from_cache=True)
            if status >= 400:
                error = api_error(response)
                wait = self.retry.wait_for_status(attempt, status, error.retry_after)
                if wait is None:
                    raise error
                attempt += 1
                reason = "rate_limited" if status == 429 else "unavailable"
                yield self._retrying(RetryEvent(url, attempt, reason, wait, status, error.retry_after, error))
                continue
            if call.stream or status == 304 or call.method == "HEAD":
                return Reply(None, response)
            try:
                body = json.loads(response.content)
            except ValueError as exc:
                raise ResponseError(f"{call.method} {url}: the answer is not JSON ({status})") from exc
            etag = response.headers.get("ETag")
            if use_cache and etag and self.cache is not None:
                self.cache.put(cache_key, etag, body)
            return Reply(body, response)


def next_cursor(body: Mapping[str, Any], previous: Optional[str]) -> Optional[str]:
    """The cursor of the page after ``body``, or None on the last page."""
    page = body.get("page") or {}
    cursor = page.get("next_cursor")
    if not cursor or page.get("has_more") is False:
        return None
    if cursor == previous:
        raise ResponseError("the API sent the same cursor twice")
    return str(cursor)
