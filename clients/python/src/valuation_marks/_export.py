"""Exports: byte-range resumption, gzip decoding, NDJSON lines (shared by both clients).

``getExport`` and ``getSeriesExport`` are stored gzip-compressed on the server and sent as they
are stored to clients that accept gzip, with a strong ETag and single byte ranges. A download
that breaks off resumes with ``Range: bytes=<held>-`` and ``If-Range: <etag>``: the server
answers 206 with the rest while the ETag still names the same export, or 200 with a whole new
one. Decoding runs on the stored bytes as they arrive, so a resumed range simply continues the
gzip stream where it stopped.

An export is bounded by the length it declares (``Content-Length``, or the total of
``Content-Range``), not by the client's ``max_response_bytes``: a server that sends more is
cut off with ``ResponseTooLarge``. An export cut to dates is made as it is sent and declares no
length: it is whole when its body ends cleanly, and bounded by ``max_response_bytes``. Decoding
hands out at most 1 MiB at a time, and a line may not grow past ``max_response_bytes``, so a
gzip bomb costs time but never memory. In time, an answer may keep the client waiting for its
bytes (reads only: not the time the caller spends between lines) at most the client's
``deadline`` plus its declared length at ``MIN_EXPORT_RATE``; past that it is
``DeadlineExceeded``, not a break to resume.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Generic, Optional, TypeVar, Union, cast

import httpx

from ._core import CSV_ACCEPT, DEFAULT_MAX_RESPONSE_BYTES, Call, ClientStats, Inflater
from ._deadline import DEADLINE
from .errors import (
    ConnectionFailed,
    DeadlineExceeded,
    ExportChanged,
    ExportCorrupt,
    LogVerificationError,
    RangeNotSatisfiable,
    ResponseError,
    ResponseTooLarge,
)
from .models import (
    ExportCompany,
    ExportHeader,
    ExportSeries,
    LogFileEntry,
    Meta,
    PublicationLog,
    from_json,
    meta_from_headers,
)
from .transparency import Checkpoint

__all__ = [
    "Download",
    "ExportParser",
    "ExportReader",
    "FileTransfer",
    "LogParser",
    "StreamTransfer",
    "read_export",
    "read_export_series",
    "read_publication_log",
]

T = TypeVar("T")

_ACCEPT = "application/x-ndjson, application/problem+json"

#: What ``Accept`` asks for each form of an export (``format=``).
ACCEPT_BY_FORMAT = {"ndjson": _ACCEPT, "csv": CSV_ACCEPT}

#: Bytes per second of waiting below which an export answer runs out of time (see above).
MIN_EXPORT_RATE = 64 * 1024


def parse_content_range(value: Optional[str]) -> tuple[Optional[int], Optional[int], Optional[int]]:
    """``bytes 100-199/1000`` -> (100, 199, 1000); ``bytes */1000`` -> (None, None, 1000)."""
    if not value or not value.startswith("bytes "):
        return (None, None, None)
    span, _, total_text = value[6:].partition("/")
    total = int(total_text) if total_text.isdigit() else None
    if span == "*":
        return (None, None, total)
    first, _, last = span.partition("-")
    try:
        return (int(first), int(last), total)
    except ValueError:
        return (None, None, total)


_BLOCK = 1024 * 1024  # decoded bytes handed out at a time


class _Lines:
    """Splits an export's body (gzip members, or plain text) into lines as bytes arrive.

    A line longer than ``max_line`` bytes raises ``ResponseTooLarge``: nothing grows unbounded.
    """

    def __init__(self, encoding: Optional[str], max_line: int) -> None:
        try:
            self._inflater = Inflater(encoding)
        except ResponseError as exc:
            raise ExportCorrupt(str(exc)) from None
        self.max_line = max_line
        self._pending: list[bytes] = []
        self._pending_size = 0

    def _hold(self, part: bytes) -> None:
        self._pending_size += len(part)
        if self._pending_size > self.max_line:
            raise ResponseTooLarge(f"a line of the export is longer than {self.max_line} bytes")
        self._pending.append(part)

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        try:
            for block in self._inflater.feed(chunk, _BLOCK):
                end = block.find(b"\n")
                if end < 0:
                    self._hold(block)
                    continue
                self._hold(block[:end])
                lines.append(b"".join(self._pending))
                pieces = block[end + 1 :].split(b"\n")
                self._pending, self._pending_size = [], 0
                self._hold(pieces.pop())
                for piece in pieces:
                    if len(piece) > self.max_line:
                        raise ResponseTooLarge(f"a line of the export is longer than {self.max_line} bytes")
                    lines.append(piece)
        except ResponseTooLarge:
            raise
        except ResponseError as exc:
            raise ExportCorrupt(f"the export does not decode: {exc}") from None
        return lines

    def finish(self) -> list[bytes]:
        if self._inflater.member_open:
            raise ExportCorrupt("the export ends inside a gzip member")
        tail = b"".join(self._pending)
        self._pending, self._pending_size = [], 0
        return [tail] if tail.strip() else []


class ExportParser(Generic[T]):
    """NDJSON lines of an export to models: the header line first, then one line per company."""

    def __init__(self, model: type[T], *, raw: bool = False) -> None:
        self.model = model
        self.raw = raw
        self.header: Optional[ExportHeader] = None
        self.count = 0

    def parse(self, line: bytes) -> Optional[T]:
        if not line.strip():
            return None
        try:
            data = json.loads(line)
        except RecursionError:
            raise ExportCorrupt(f"line {self.count + 2} of the export is nested too deeply") from None
        except ValueError as exc:
            raise ExportCorrupt(f"line {self.count + 2} of the export is not JSON") from exc
        if self.header is None:
            self.header = from_json(ExportHeader, data)
            return None
        self.count += 1
        if self.raw:
            return data  # type: ignore[no-any-return]
        return from_json(self.model, data, meta=self.header.meta)

    def finish(self) -> None:
        if self.header is None:
            raise ExportCorrupt("the export is empty: no header line")
        if self.count != self.header.companies:
            raise ExportCorrupt(
                f"the header announces {self.header.companies} companies, the export holds {self.count}"
            )


class LogParser:
    """The lines of the publication log's file (``getLogExport``, NDJSON) into a
    ``PublicationLog``: the header line ``{"origin": .., "format": 1}``, then entry lines
    (``leaf`` and ``band_95``) and a ``checkpoint`` line after each version's entries. Read, not
    verified: ``PublicationLog.verify`` replays it."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def parse(self, line: bytes) -> None:
        if not line.strip():
            return
        number = len(self.lines) + 1
        try:
            data = json.loads(line)
        except RecursionError:
            raise ExportCorrupt(f"line {number} of the log is nested too deeply") from None
        except ValueError as exc:
            raise ExportCorrupt(f"line {number} of the log is not JSON") from exc
        if not isinstance(data, dict):
            raise ExportCorrupt(f"line {number} of the log is not a JSON object")
        self.lines.append(data)

    def finish(self) -> PublicationLog:
        if not self.lines:
            raise ExportCorrupt("the log is empty: no header line")
        header = self.lines[0]
        origin, version = header.get("origin"), header.get("format")
        if not isinstance(origin, str) or not isinstance(version, int):
            raise ExportCorrupt('the log\'s first line is not its header {"origin": .., "format": ..}')
        entries: list[LogFileEntry] = []
        checkpoints: list[Checkpoint] = []
        for number, data in enumerate(self.lines[1:], start=2):
            try:
                if "leaf" in data:
                    entries.append(from_json(LogFileEntry, data))
                elif isinstance(data.get("checkpoint"), dict):
                    checkpoints.append(Checkpoint.parse(data["checkpoint"].get("note")))
                else:
                    raise ExportCorrupt("neither an entry nor a checkpoint")
            except (ResponseError, LogVerificationError, ExportCorrupt) as exc:
                raise ExportCorrupt(f"line {number} of the log: {exc}") from None
        return PublicationLog(origin, version, tuple(entries), tuple(checkpoints), tuple(self.lines))


class _Transfer:
    """Resumption bookkeeping common to streamed exports and downloads to a file."""

    def __init__(
        self,
        url_path: str,
        params: dict[str, Any],
        stats: ClientStats,
        max_resumes: int,
        max_line: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: Optional[float] = None,
        accept: str = _ACCEPT,
    ) -> None:
        self.path = url_path
        self.accept = accept
        self.max_line = max_line
        self.deadline = deadline
        self._budget: Optional[float] = None  # seconds the current answer may keep us waiting
        self._waited = 0.0
        self.params = params
        self.stats = stats
        self.max_resumes = max_resumes
        self.etag: Optional[str] = None
        self.encoding: Optional[str] = None
        self.offset = 0  # bytes of the representation held
        self.total: Optional[int] = None
        self.resumed_at: list[int] = []  # offsets at which 206 ranges began
        self._failures = 0
        self._offset_at_failure = -1

    def call(self) -> Call:
        headers = {"Accept-Encoding": "gzip", "Accept": self.accept}
        if self.offset and self.etag:
            headers["Range"] = f"bytes={self.offset}-"
            headers["If-Range"] = self.etag
        return Call(self.path, self.params, headers, stream=True, cache=False)

    @property
    def complete(self) -> bool:
        return self.total is not None and self.offset >= self.total

    def ended(self) -> None:
        """The answer's body ended cleanly (its last chunk, or the end of its HTTP/2 stream; a
        cut one raises in httpx instead). An answer without a declared length (an export cut to
        dates, made as it is sent) is whole where it ends."""
        if self.total is None:
            self.total = self.offset

    def _count(self, chunk: bytes) -> None:
        """Counts received bytes against the declared length (or, without one, ``max_line``)."""
        self.offset += len(chunk)
        bound = self.total if self.total is not None else self.max_line
        if self.offset > bound:
            declared = f"the {self.total} bytes it declared" if self.total is not None else f"{bound} bytes"
            raise ResponseTooLarge(f"the export sent more than {declared}")

    def _start_clock(self) -> None:
        self._waited = 0.0
        if self.deadline is None:
            self._budget = None
            return
        expected = self.total - self.offset if self.total is not None else self.max_line
        self._budget = self.deadline + max(0, expected) / MIN_EXPORT_RATE

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Around each read of the body: the wait counts against the answer's time budget."""
        if self._budget is None:
            yield
            return
        started = time.monotonic()
        token = DEADLINE.set(started + self._budget - self._waited)
        try:
            yield
        finally:
            DEADLINE.reset(token)
            self._waited += time.monotonic() - started

    def _out_of_time(self) -> bool:
        return self._budget is not None and self._waited >= self._budget - 0.05

    def _range(self, response: httpx.Response) -> None:
        """Checks a 206 against what is held."""
        start, _, total = parse_content_range(response.headers.get("Content-Range"))
        etag = response.headers.get("ETag")
        if start != self.offset or total is None or (etag is not None and etag != self.etag):
            got = response.headers.get("Content-Range")
            raise ExportCorrupt(f"asked for bytes {self.offset}- of {self.etag}, got {got} of {etag}")
        self.total = total
        self.resumed_at.append(start)
        self.stats.resumes += 1
        self._start_clock()

    def _whole(self, response: httpx.Response) -> None:
        self.etag = response.headers.get("ETag")
        self.encoding = response.headers.get("Content-Encoding")
        length = response.headers.get("Content-Length")
        self.total = int(length) if length and length.isdigit() else None
        self.offset = 0
        self._start_clock()

    def broken(self, error: BaseException) -> float:
        """Seconds to wait before resuming after a break; raises when resuming is hopeless."""
        if self._out_of_time():
            raise DeadlineExceeded(
                f"the export took longer than its {self._budget:.0f} s to send {self.total} bytes"
            ) from error
        if self.offset > self._offset_at_failure:
            self._failures = 0  # progress since the last break
        self._failures += 1
        self._offset_at_failure = self.offset
        if self._failures > self.max_resumes:
            raise ConnectionFailed(
                f"the export broke off {self._failures} times at byte {self.offset} without progress"
            ) from error
        if not self.etag:
            raise ConnectionFailed("the export broke off and has no ETag to resume against") from error
        base = min(8.0, 0.25 * 2.0 ** (self._failures - 1))
        return base / 2 + random.uniform(0, base / 2)


class StreamTransfer(_Transfer):
    """A streamed export decoded into lines; resumes within the same stream after breaks."""

    def __init__(
        self,
        url_path: str,
        params: dict[str, Any],
        stats: ClientStats,
        max_resumes: int,
        max_line: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: Optional[float] = None,
    ) -> None:
        super().__init__(url_path, params, stats, max_resumes, max_line, deadline)
        self._lines: Optional[_Lines] = None
        self._emitted = False
        self._skip = 0  # bytes of a whole answer already read before a break

    def begin(self, response: httpx.Response) -> None:
        if response.status_code == 206:
            self._range(response)
            return
        if response.status_code != 200:
            raise ExportCorrupt(f"unexpected answer {response.status_code} to an export request")
        held, etag = self.offset, response.headers.get("ETag")
        encoding = response.headers.get("Content-Encoding")
        same = etag is not None and etag == self.etag and encoding == self.encoding
        if held and self._emitted and not same:
            raise ExportChanged(
                f"the export changed while resuming at byte {held} "
                f"({self.etag} -> {etag}); read the new one with a new export()"
            )
        self._whole(response)
        if held and same:
            # The same representation sent whole (a range was not served, as for an export cut
            # to dates): what was read already is skipped, the rest continues the stream.
            self._skip = held
            return
        self._lines = _Lines(self.encoding, self.max_line)

    def feed(self, chunk: bytes) -> list[bytes]:
        assert self._lines is not None
        if self._skip:
            skipped = min(self._skip, len(chunk))
            self._count(chunk[:skipped])
            self._skip -= skipped
            chunk = chunk[skipped:]
        self._count(chunk)
        lines = self._lines.feed(chunk)
        if lines:
            self._emitted = True
        return lines

    def finish(self) -> list[bytes]:
        assert self._lines is not None
        return self._lines.finish()


@dataclasses.dataclass(frozen=True)
class Download:
    """The outcome of ``download_export``: a complete file, or a part to resume later."""

    path: Path  # the file when complete; else the ``.part`` file holding what was fetched
    complete: bool
    size: int  # bytes held
    total: Optional[int]  # bytes of the whole export
    etag: Optional[str]
    encoding: Optional[str]  # "gzip" (the stored bytes), or None (NDJSON text)
    resumed_from: Optional[int]  # the byte this call resumed at, if it resumed
    content_range: Optional[str]  # the Content-Range of the first resumed answer
    format: str = "ndjson"  # "ndjson", or "csv" (download_export(..., format="csv"))
    meta: Optional[Meta] = None  # a CSV export's meta, from its X-* headers (NDJSON: its first line)


class FileTransfer(_Transfer):
    """An export stored as it is served into ``dest`` (via ``dest.part``), resumable across runs.

    ``dest.part.json`` remembers the ETag and URL of the part, so the next call (in this process
    or a later one) resumes with ``Range``/``If-Range``; a changed export starts afresh.
    """

    def __init__(
        self,
        dest: Union[str, os.PathLike[str]],
        url: str,
        url_path: str,
        params: dict[str, Any],
        stats: ClientStats,
        max_resumes: int,
        max_bytes: Optional[int],
        max_line: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: Optional[float] = None,
        format: str = "ndjson",
    ) -> None:
        super().__init__(url_path, params, stats, max_resumes, max_line, deadline, ACCEPT_BY_FORMAT[format])
        self.format = format
        self.meta: Optional[Meta] = None
        self.dest = Path(dest)
        self.part = self.dest.with_name(self.dest.name + ".part")
        self.state = self.dest.with_name(self.dest.name + ".part.json")
        self.url = url
        self.max_bytes = max_bytes
        self.resumed_from: Optional[int] = None
        self.content_range: Optional[str] = None
        self._file: Optional[IO[bytes]] = None
        try:
            state = json.loads(self.state.read_text(encoding="utf-8"))
            same = state.get("url") == url and state.get("format", "ndjson") == format
            if same and self.part.exists():
                self.etag = state.get("etag")
                self.encoding = state.get("encoding")
                self.total = state.get("total")
                self.offset = self.part.stat().st_size
                self.meta = from_json(Meta, state["meta"]) if state.get("meta") else None
        except (OSError, ValueError, AttributeError):
            pass

    def begin(self, response: httpx.Response) -> None:
        if response.status_code == 206:
            self._range(response)
            if self.resumed_from is None:
                self.resumed_from = self.offset
                self.content_range = response.headers.get("Content-Range")
            self._file = open(self.part, "ab")  # noqa: SIM115 - closed in end()
            return
        if response.status_code != 200:
            raise ExportCorrupt(f"unexpected answer {response.status_code} to an export request")
        self._whole(response)
        self.meta = meta_from_headers(response.headers)
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.part, "wb")  # noqa: SIM115 - closed in end()
        state = {
            "url": self.url,
            "format": self.format,
            "etag": self.etag,
            "encoding": self.encoding,
            "total": self.total,
            "meta": self.meta.to_dict() if self.meta is not None else None,
        }
        self.state.write_text(json.dumps(state), encoding="utf-8")

    def range_refused(self, error: RangeNotSatisfiable) -> bool:
        """After a 416: True if the part already holds the whole export; else starts afresh."""
        _, _, total = parse_content_range(error.headers.get("content-range"))
        if total is not None and total == self.offset:
            self.total = total
            return True
        self.offset = 0
        self.etag = None
        self.part.unlink(missing_ok=True)
        return False

    def write(self, chunk: bytes) -> bool:
        """Stores a chunk; True once ``max_bytes`` are held (stop here, resume later)."""
        assert self._file is not None
        if self.max_bytes is not None and self.offset + len(chunk) >= self.max_bytes:
            chunk = chunk[: max(0, self.max_bytes - self.offset)]
            self._count(chunk)
            self._file.write(chunk)
            return True
        self._count(chunk)
        self._file.write(chunk)
        return False

    def end(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def result(self) -> Download:
        self.end()
        if self.complete:
            os.replace(self.part, self.dest)
            self.state.unlink(missing_ok=True)
        return Download(
            path=self.dest if self.complete else self.part,
            complete=self.complete,
            size=self.offset,
            total=self.total,
            etag=self.etag,
            encoding=self.encoding,
            resumed_from=self.resumed_from,
            content_range=self.content_range,
            format=self.format,
            meta=self.meta,
        )


class ExportReader(Generic[T]):
    """The lines of an export file written by ``download_export`` (gzip or plain NDJSON).

    Iterate for the company (or series) lines; ``header`` and ``meta`` are read on opening.
    """

    def __init__(self, path: Union[str, os.PathLike[str]], model: type[T]) -> None:
        self.path = Path(path)
        self._parser: ExportParser[T] = ExportParser(model)
        with self._open() as lines:
            self._parser.parse(next(lines, b""))
        if self._parser.header is None:
            raise ExportCorrupt(f"{self.path} is empty")
        self.header: ExportHeader = self._parser.header

    @property
    def meta(self) -> Meta:
        return self.header.meta

    def _open(self) -> IO[bytes]:
        with open(self.path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
        return cast(IO[bytes], gzip.open(self.path, "rb") if gzipped else open(self.path, "rb"))

    def __iter__(self) -> Iterator[T]:
        parser: ExportParser[T] = ExportParser(self._parser.model)
        with self._open() as lines:
            for line in lines:
                item = parser.parse(line)
                if item is not None:
                    yield item
        parser.finish()


def read_export(path: Union[str, os.PathLike[str]]) -> ExportReader[ExportCompany]:
    """Reads a companies export file (``download_export``) line by line."""
    return ExportReader(path, ExportCompany)


def read_export_series(path: Union[str, os.PathLike[str]]) -> ExportReader[ExportSeries]:
    """Reads a series export file (``download_export_series``) line by line."""
    return ExportReader(path, ExportSeries)


def read_publication_log(path: Union[str, os.PathLike[str]]) -> PublicationLog:
    """Reads a log file (``download_export_log``, gzip or plain NDJSON, or a publisher's
    ``publication-log.jsonl``) into a ``PublicationLog``; ``.verify(trusted)`` replays it."""
    parser = LogParser()
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    opened = gzip.open(path, "rb") if gzipped else open(path, "rb")  # noqa: SIM115 - closed below
    with cast(IO[bytes], opened) as lines:
        for line in lines:
            parser.parse(line)
    return parser.finish()
