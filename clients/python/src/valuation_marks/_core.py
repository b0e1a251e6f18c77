"""What ``Client`` and ``AsyncClient`` share: request building, response parsing, retry decisions.

An API call is a generator (``ClientCore.exchange``) that yields the I/O it needs, ``Send``
(an HTTP request) or ``Sleep`` (a wait before a retry), and is sent back the outcome: a
``Received`` (the response, and its body read through a ``BodyReader``), or the
``httpx.TransportError`` the attempt raised. It returns a ``Reply`` or raises the API's error.
The sync client drives it with ``httpx.Client`` and ``time.sleep``, the async client with
``httpx.AsyncClient`` and ``asyncio.sleep``: the only code the two do not share is that loop.

Nothing here trusts the server to be well-behaved: every body is read in chunks and decoded
by the SDK (``Inflater``), counted against ``max_response_bytes`` as sent and as decoded, and
abandoned past the call's ``deadline``; redirects are not answers (and are followed only when
asked, without the API key outside the base URL's origin); a ``Retry-After`` that is not a
number of seconds counts as absent; JSON nested past what Python parses is a
``ResponseError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Generator, Iterator, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Optional, TypeVar, Union

import httpx

from ._version import __version__
from .errors import (
    ApiError,
    ConnectionFailed,
    DeadlineExceeded,
    ResponseError,
    ResponseTooLarge,
    error_class,
)

__all__ = [
    "CSV_ACCEPT",
    "DEFAULT_BASE_URL",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "BodyReader",
    "Call",
    "ClientCore",
    "ClientStats",
    "ETagCache",
    "Inflater",
    "RateLimit",
    "Received",
    "Reply",
    "ResponseInfo",
    "RetryEvent",
    "RetryPolicy",
    "Send",
    "Sleep",
    "decode_csv",
    "decode_json",
    "operation",
    "origin",
]

#: Where ``marks serve`` listens by default; set ``MARKS_BASE_URL`` or ``base_url`` otherwise.
DEFAULT_BASE_URL = "http://127.0.0.1:8080"

#: The largest answer a call takes (bytes, as sent and once decoded): 64 MiB, some 11 times the
#: largest answer of the sample dataset (``/v1/scorecard/targets`` in its full form, 5.8 MiB,
#: growing by about 0.8 KB per scored month-end or target, 0.55 KB in the public form; a daily
#: series is 0.28 MiB). Exports are bounded by the length they declare instead.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024

#: Seconds a call may take in all: connecting, sending, every byte of the answer, retries and
#: their waits. ``timeout`` (default 30) bounds each single wait for bytes within it.
DEFAULT_DEADLINE = 120.0

#: Redirects followed in one call when ``follow_redirects=True``.
DEFAULT_MAX_REDIRECTS = 5

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
    the ``Retry-After`` it carries (never sooner, plus up to 10% jitter; never sooner than the
    backoff either, so a ``Retry-After: 0`` is not a retry at once), unless that is longer than
    ``max_retry_wait``: then ``RateLimited`` is raised at once, since retrying earlier would
    only be refused again. A 429 without a usable ``Retry-After`` (absent, negative, not a
    number) waits the backoff. 503 and connection errors back off exponentially from
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
            return max(self._backoff(attempt), retry_after + random.uniform(0, min(1.0, retry_after / 10)))
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
    text: bool = False  # the body is text (CSV, unless text_type says otherwise), handed back as a str
    text_type: str = "text/csv"  # the media type a text answer must have


@dataclasses.dataclass(frozen=True)
class Send:
    """Send a request. The driver reads the body through ``reader(response)``, except for the
    200 and 206 of a streamed call, which it hands back open."""

    method: str
    url: str
    headers: Mapping[str, str]
    stream: bool
    deadline: Optional[float]  # time.monotonic() by which the call must be done
    max_bytes: int

    def reader(self, response: httpx.Response) -> BodyReader:
        return BodyReader(response.headers.get("Content-Encoding"), self.max_bytes, self.deadline)

    def keep_open(self, response: httpx.Response) -> bool:
        return self.stream and response.status_code in (200, 206)


@dataclasses.dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclasses.dataclass(frozen=True)
class Received:
    """An answer: the response, and its body as decoded (None when handed back open)."""

    response: httpx.Response
    body: Optional[bytes]


Step = Union[Send, Sleep]
Outcome = Union[Received, httpx.TransportError, None]


# --------------------------------------------------------------------------------------------
# Reading bodies: bounded in size and time, decoded by the SDK


class Inflater:
    """Decodes a body as it arrives (``Content-Encoding`` gzip, deflate or none), in blocks.

    ``feed(data, block)`` yields the decoded bytes in pieces of at most ``block`` bytes, so a
    small compressed chunk that inflates to gigabytes (a gzip bomb) is never held whole: the
    caller counts what it is given and stops. Concatenated gzip members are decoded in turn.
    """

    def __init__(self, encoding: Optional[str]) -> None:
        name = (encoding or "identity").strip().lower()
        if name in ("identity", ""):
            self._wbits: Optional[int] = None
        elif name in ("gzip", "x-gzip"):
            self._wbits = 31
        elif name == "deflate":
            self._wbits = 15
        else:
            raise ResponseError(f"the answer is encoded as {encoding!r}, which this client does not decode")
        self._decoder: Any = None if self._wbits is None else zlib.decompressobj(wbits=self._wbits)
        self.member_open = False  # inside a compressed member that has not ended yet

    @property
    def identity(self) -> bool:
        return self._wbits is None

    def feed(self, data: bytes, block: int) -> Iterator[bytes]:
        if self._decoder is None:
            if data:
                yield data
            return
        block = max(1, block)
        wbits = self._wbits or 31
        while data:
            try:
                out = self._decoder.decompress(data, block)
            except zlib.error as exc:
                raise ResponseError(f"the answer does not decode: {exc}") from exc
            data = self._decoder.unconsumed_tail
            if self._decoder.eof:
                data = self._decoder.unused_data + data
                self._decoder = zlib.decompressobj(wbits=wbits)
                self.member_open = False
            else:
                self.member_open = True
            if out:
                yield out


class BodyReader:
    """Collects one answer's body: at most ``max_bytes`` as sent and once decoded, by ``deadline``.

    Raises ``ResponseTooLarge`` as soon as either count passes the bound (nothing more is read)
    and ``DeadlineExceeded`` once the call's deadline has passed.
    """

    def __init__(self, encoding: Optional[str], max_bytes: int, deadline: Optional[float]) -> None:
        self.inflater = Inflater(encoding)
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.received = 0  # bytes as sent
        self.size = 0  # bytes decoded
        self._parts: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise DeadlineExceeded("the answer did not arrive within the call's deadline")
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise ResponseTooLarge(f"the answer is larger than max_response_bytes ({self.max_bytes} bytes)")
        for part in self.inflater.feed(chunk, self.max_bytes - self.size + 1):
            self.size += len(part)
            if self.size > self.max_bytes:
                raise ResponseTooLarge(
                    f"the answer decodes to more than max_response_bytes ({self.max_bytes} bytes)"
                )
            self._parts.append(part)

    def finish(self) -> bytes:
        if self.inflater.member_open:
            raise ResponseError("the answer ends inside a compressed member")
        return b"".join(self._parts)


#: What a call for the CSV form of a route sends: CSV, or the problem+json of a refusal.
CSV_ACCEPT = "text/csv, application/problem+json"


def decode_csv(body: bytes, content_type: Optional[str], what: str, media_type: str = "text/csv") -> str:
    """A CSV answer (or another text answer, of ``media_type``) as text; ``ResponseError`` if
    the server sent something else (a server older than the CSV forms answers JSON whatever
    Accept says) or it is not UTF-8."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media != media_type:
        raise ResponseError(
            f"{what}: asked for {media_type}, the server answered {content_type or 'no type'}"
        )
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResponseError(f"{what}: the {media_type} answer is not UTF-8") from exc


def decode_json(body: bytes, what: str) -> Any:
    """Decoded JSON; ``ResponseError`` if it is not JSON or is nested too deeply to decode."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ResponseError(f"{what}: the JSON is nested too deeply to decode") from None
    except ValueError as exc:
        raise ResponseError(f"{what}: the answer is not JSON") from exc


def origin(url: Union[str, httpx.URL]) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the port made explicit."""
    parsed = httpx.URL(url)
    port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme, 0)
    return (parsed.scheme, parsed.host, port)


@dataclasses.dataclass(frozen=True)
class Reply:
    """A successful answer: decoded JSON (``body``), or the open response of a streamed call."""

    body: Any
    response: httpx.Response
    from_cache: bool = False


_SECONDS = re.compile(r"[0-9]{1,10}(\.[0-9]{1,6})?")


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` in seconds: delta-seconds, or an HTTP date (0 once it has passed).

    Anything else (a negative number, ``nan``, ``soon``) is None, as if there were none.
    """
    if value is None:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    if value[:1].isdigit() or value[:1] in "+-.":
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (moment - datetime.now(timezone.utc)).total_seconds())


def api_error(response: httpx.Response, body: Optional[bytes] = None) -> ApiError:
    """The exception for an error answer: its problem+json, or what can be said without one."""
    status = response.status_code
    problem: dict[str, Any] = {}
    try:
        data = json.loads(response.content if body is None else body)
        if isinstance(data, dict):
            problem = data
    except (ValueError, RecursionError):
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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: Optional[float] = DEFAULT_DEADLINE,
        follow_redirects: bool = False,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ) -> None:
        if max_response_bytes < 1:
            raise ValueError("max_response_bytes must be at least 1")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline must be a positive number of seconds, or None")
        self.api_key = api_key if api_key is not None else os.environ.get("MARKS_API_KEY") or None
        self.base_url = (base_url or os.environ.get("MARKS_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.origin = origin(self.base_url)
        self.retry = retry
        self.cache: Optional[ETagCache] = ETagCache() if cache is True else (cache or None)
        self.on_retry = on_retry
        self.max_response_bytes = max_response_bytes
        self.deadline = deadline
        self.follow_redirects = follow_redirects
        self.max_redirects = max_redirects
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

    def headers_for(self, url: str, extra: Mapping[str, str]) -> dict[str, str]:
        """The request headers for ``url``: credentials only within the base URL's origin."""
        headers = {**self.headers, **extra}
        if origin(url) != self.origin:
            for name in [name for name in headers if name.lower() in _CREDENTIALS]:
                del headers[name]
        return headers

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

    def _redirect(self, method: str, url: str, response: httpx.Response, followed: int) -> str:
        """Where a 3xx points, if this client follows it; raises ``ResponseError`` otherwise."""
        status = response.status_code
        location = response.headers.get("Location")
        if not self.follow_redirects or status not in (301, 302, 303, 307, 308) or not location:
            where = f" to {location}" if location else ""
            raise ResponseError(
                f"{method} {url}: answered {status}{where}, a redirect and not an answer "
                "(the client follows redirects only with follow_redirects=True)"
            )
        if followed >= self.max_redirects:
            raise ResponseError(f"{method} {url}: more than {self.max_redirects} redirects")
        target = httpx.URL(url).join(location)
        if target.scheme not in ("http", "https"):
            raise ResponseError(f"{method} {url}: a redirect to {target}, which is not HTTP")
        return str(target)

    def exchange(self, call: Call) -> Generator[Step, Outcome, Reply]:
        """One call with its retries; see the module docstring for the protocol."""
        url = self.url(call.path, call.params)
        deadline = None if self.deadline is None else time.monotonic() + self.deadline
        cache_key = (self._cache_scope, f"{call.text_type} {url}" if call.text else url)
        use_cache = self.cache is not None and call.cache and call.method == "GET" and not call.stream
        target = url
        attempt = redirects = 0
        while True:
            headers = self.headers_for(target, call.headers)
            cached = self.cache.get(cache_key) if (use_cache and self.cache is not None) else None
            if cached is not None and target == url:
                headers["If-None-Match"] = cached[0]
            self.stats.requests += 1
            outcome = yield Send(call.method, target, headers, call.stream, deadline, self.max_response_bytes)
            if not isinstance(outcome, Received):
                assert outcome is not None
                if deadline is not None and time.monotonic() >= deadline - _DEADLINE_SLACK:
                    raise DeadlineExceeded(
                        f"{call.method} {target}: no answer within the deadline ({self.deadline:g} s)"
                    ) from outcome
                wait = self.retry.wait_for_error(attempt, outcome)
                if wait is None or not _fits(wait, deadline):
                    raise ConnectionFailed(f"{call.method} {target}: {outcome!r}") from outcome
                attempt += 1
                yield self._retrying(RetryEvent(target, attempt, "connection", wait, error=outcome))
                continue
            response, body = outcome.response, outcome.body
            status = response.status_code
            self._observe(response, from_cache=status == 304 and cached is not None)
            if status == 304 and cached is not None:
                self.stats.not_modified += 1
                return Reply(cached[1], response, from_cache=True)
            if 300 <= status < 400 and status != 304:
                target = self._redirect(call.method, target, response, redirects)
                redirects += 1
                continue
            if status >= 400:
                error = api_error(response, body)
                wait = self.retry.wait_for_status(attempt, status, error.retry_after)
                if wait is None or not _fits(wait, deadline):
                    raise error
                attempt += 1
                reason = "rate_limited" if status == 429 else "unavailable"
                yield self._retrying(
                    RetryEvent(target, attempt, reason, wait, status, error.retry_after, error)
                )
                continue
            if call.stream or body is None or status == 304 or call.method == "HEAD":
                return Reply(None, response)
            what = f"{call.method} {target} ({status})"
            if call.text:
                decoded: Any = decode_csv(body, response.headers.get("Content-Type"), what, call.text_type)
            else:
                decoded = decode_json(body, what)
            etag = response.headers.get("ETag")
            if use_cache and etag and self.cache is not None and target == url:
                self.cache.put(cache_key, etag, decoded)
            return Reply(decoded, response)


_CREDENTIALS = {"x-api-key", "authorization", "cookie"}
_DEADLINE_SLACK = 0.05  # a read cut short by the deadline may wake a hair before it


def _fits(wait: float, deadline: Optional[float]) -> bool:
    """True if a wait of ``wait`` seconds ends before ``deadline``."""
    return deadline is None or time.monotonic() + wait < deadline


def next_cursor(body: Mapping[str, Any], previous: Optional[str]) -> Optional[str]:
    """The cursor of the page after ``body``, or None on the last page."""
    page = body.get("page") or {}
    cursor = page.get("next_cursor")
    if not cursor or page.get("has_more") is False:
        return None
    if cursor == previous:
        raise ResponseError("the API sent the same cursor twice")
    return str(cursor)
