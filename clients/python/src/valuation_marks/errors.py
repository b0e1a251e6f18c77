"""Every error this package raises.

The API answers every refusal with an RFC 9457 problem (``application/problem+json``) whose
``code`` is the integration enum; each code has its own exception class here, so callers catch
what they mean (``except NotFound``) instead of comparing strings. Codes this release does not
know yet still raise a subclass chosen by HTTP status (``RateLimited`` for any 429,
``ServerError`` for any 5xx, ``InvalidRequest`` for any 422 ...), or ``ApiError`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from cryptography.exceptions import InvalidSignature as _CryptoInvalidSignature

__all__ = [
    "ApiError",
    "BadCursor",
    "ConnectionFailed",
    "DeadlineExceeded",
    "ExportChanged",
    "ExportCorrupt",
    "InternalError",
    "InvalidApiKey",
    "InvalidCoverage",
    "InvalidParameter",
    "InvalidRequest",
    "InvalidSlug",
    "InvalidSort",
    "LogVerificationError",
    "MarksError",
    "MethodNotAllowed",
    "MissingApiKey",
    "NotFound",
    "RangeNotSatisfiable",
    "RateLimited",
    "ResponseError",
    "ResponseTooLarge",
    "ServerError",
    "SignatureError",
    "TierForbidden",
    "Unauthorized",
    "Unavailable",
    "UnknownSigningKey",
    "error_class",
]


class MarksError(Exception):
    """Base class of every exception raised by ``valuation_marks``."""


class ApiError(MarksError):
    """A problem (RFC 9457) answered by the API.

    Attributes mirror the problem body: ``status``, ``code``, ``detail``, ``request_id``,
    ``title``, ``type`` and ``instance``; ``problem`` holds the whole body (fields added later
    included), ``retry_after`` the ``Retry-After`` header in seconds when one was sent, and
    ``headers`` the response headers (lower-case names).
    """

    #: The problem code this class stands for (``None`` on the family classes).
    default_code: Optional[str] = None

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        request_id: Optional[str] = None,
        title: Optional[str] = None,
        type: Optional[str] = None,
        instance: Optional[str] = None,
        retry_after: Optional[float] = None,
        problem: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(status, code, detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.request_id = request_id
        self.title = title
        self.type = type
        self.instance = instance
        self.retry_after = retry_after
        self.problem: Mapping[str, Any] = dict(problem or {})
        self.headers: Mapping[str, str] = dict(headers or {})

    def __str__(self) -> str:
        text = f"{self.status} {self.code}: {self.detail}"
        if self.retry_after is not None:
            text += f" (retry after {self.retry_after:g}s)"
        if self.request_id:
            text += f" [request {self.request_id}]"
        return text


class Unauthorized(ApiError):
    """401: no key, or a key the API does not accept."""


class MissingApiKey(Unauthorized):
    """401 ``missing_api_key``: the request carried no ``X-API-Key``."""

    default_code = "missing_api_key"


class InvalidApiKey(Unauthorized):
    """401 ``invalid_api_key``: the key is unknown, revoked or not active."""

    default_code = "invalid_api_key"


class TierForbidden(ApiError):
    """403 ``tier_forbidden``: the key's tier does not include this operation, coverage or company."""

    default_code = "tier_forbidden"


class NotFound(ApiError):
    """404 ``not_found``: for example an unknown company slug."""

    default_code = "not_found"


class InvalidRequest(ApiError):
    """422: a parameter the API refused."""


class InvalidCoverage(InvalidRequest):
    """422 ``invalid_coverage``: coverage is not 80 or 95."""

    default_code = "invalid_coverage"


class InvalidSort(InvalidRequest):
    """422 ``invalid_sort``: a sort outside the whitelist."""

    default_code = "invalid_sort"


class BadCursor(InvalidRequest):
    """422 ``bad_cursor``: a pagination cursor this server did not issue (or for other filters)."""

    default_code = "bad_cursor"


class InvalidParameter(InvalidRequest):
    """422 ``invalid_parameter``: unknown, repeated or malformed parameter.

    ``changes(since=...)`` raises it too when ``since`` is older than the change log: re-sync
    from the export then.
    """

    default_code = "invalid_parameter"


class RateLimited(ApiError):
    """429 ``rate_limited``: the key's budget is spent; ``retry_after`` says for how long.

    Raised once the client's retries are used up (``max_retries``), or at once when the wait
    asked for is longer than ``max_retry_wait``.
    """

    default_code = "rate_limited"


class MethodNotAllowed(ApiError):
    """405 ``method_not_allowed``: the API is read-only (GET and HEAD)."""

    default_code = "method_not_allowed"


class RangeNotSatisfiable(ApiError):
    """416 ``range_not_satisfiable``: a byte range past the end of an export."""

    default_code = "range_not_satisfiable"


class ServerError(ApiError):
    """5xx: the server could not answer."""


class InternalError(ServerError):
    """500 ``internal_error``."""

    default_code = "internal_error"


class Unavailable(ServerError):
    """503 ``unavailable``: no dataset loaded yet, or the server is shedding load."""

    default_code = "unavailable"


class ConnectionFailed(MarksError):
    """The API could not be reached (or the connection broke) and the retries are used up.

    The underlying ``httpx`` exception is ``__cause__``.
    """


class DeadlineExceeded(ConnectionFailed, TimeoutError):
    """A call did not finish within its ``deadline`` (seconds, retries and their waits included).

    The deadline bounds the whole call, however slowly the server sends its answer; the
    per-read ``timeout`` only bounds each wait for the next bytes. Also a ``TimeoutError``.
    """


class ResponseError(MarksError):
    """A response this client cannot read: not JSON, nested too deeply, a redirect it does not
    follow, or missing a field the API promises."""


class ResponseTooLarge(ResponseError):
    """An answer larger than the client takes: more than ``max_response_bytes`` once decoded
    (or as sent), or an export longer than the length it declared."""


class InvalidSlug(MarksError, ValueError):
    """A company slug outside the slug grammar, refused before any request is made.

    A slug is 1 to 64 characters of ``a-z``, ``0-9`` and ``-``, starting with a letter or a
    digit (the builder refuses any other). Also a ``ValueError``.
    """


class ExportChanged(MarksError):
    """A streamed export was replaced by a newer one while it was being resumed.

    Lines of the older export have already been handed out, so the stream cannot silently
    switch; start a new ``export()`` to read the new dataset version.
    """


class ExportCorrupt(MarksError):
    """An export did not decode: bad gzip, a wrong byte range or fewer lines than announced."""


class SignatureError(MarksError, _CryptoInvalidSignature):
    """A signed resolution record does not verify.

    It is also a ``cryptography.exceptions.InvalidSignature``, so code written against the
    bare ``cryptography`` check keeps working.
    """


class UnknownSigningKey(SignatureError):
    """No trusted key has the record's ``key_id`` as its RFC 7638 thumbprint.

    Raised when the record names a key that is not among the keys trusted, and when a key
    published under that ``kid`` is not the key the thumbprint names (a forged key set).
    """


class LogVerificationError(MarksError):
    """The publication log does not verify: what the API says of a company's published marks,
    of a checkpoint or of the whole log is not what the log, signed by a key you pinned, holds.

    ``check`` names what failed: ``"signature"`` (no pinned key signed the checkpoint),
    ``"origin"`` (another log), ``"checkpoint"`` (the answer's size or root is not what its
    checkpoint says; in a log file, entries that do not make the checkpoint after them),
    ``"leaf_hash"`` (an entry does not hash to its leaf hash: it was changed), ``"inclusion"``
    (an entry is not where its proof says in the checkpoint's tree), ``"order"`` (entries out
    of log order), ``"entry"`` (another company's entry, or a date that is not its own),
    ``"versions"`` (the versions listed, or an entry's place among them), ``"completeness"``
    (an entry missing between the company's first and its latest), ``"band_95"`` (a 95% band
    that is not the one its entry commits to), ``"consistency"`` (today's log does not extend
    the checkpoint you kept: a rewritten, cut or forked log) or ``"format"`` (not the form a
    checkpoint, a proof or a log line has). ``slug`` and ``leaf_index`` say where, when the
    failure is one entry's; ``detail`` says what, in words.
    """

    def __init__(
        self, check: str, detail: str, slug: Optional[str] = None, leaf_index: Optional[int] = None
    ) -> None:
        super().__init__(check, detail)
        self.check = check
        self.detail = detail
        self.slug = slug
        self.leaf_index = leaf_index

    def __str__(self) -> str:
        return f"the publication log does not verify ({self.check}): {self.detail}"


_BY_CODE: dict[str, type[ApiError]] = {
    cls.default_code: cls
    for cls in (
        MissingApiKey,
        InvalidApiKey,
        TierForbidden,
        NotFound,
        InvalidCoverage,
        InvalidSort,
        BadCursor,
        InvalidParameter,
        RateLimited,
        MethodNotAllowed,
        RangeNotSatisfiable,
        InternalError,
        Unavailable,
    )
    if cls.default_code is not None
}

_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    404: NotFound,
    405: MethodNotAllowed,
    416: RangeNotSatisfiable,
    422: InvalidRequest,
    429: RateLimited,
}


def error_class(code: Optional[str], status: int) -> type[ApiError]:
    """The exception class for a problem ``code`` (falling back on the HTTP ``status``)."""
    if code is not None and code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ApiError
