"""A small HTTP server on 127.0.0.1:0 that answers badly on purpose, for the SDK's bounds.

Not a mock: the SDK talks to it over real sockets. The first path segment picks the misdeed
(the client's ``base_url`` ends with it, so ``client.usage()`` asks ``/<misdeed>/v1/usage``):

* ``big``: a JSON body that never ends (sent until the client hangs up, at most ``BIG``);
* ``bomb``: a small gzip body that inflates to ``BOMB_SIZE`` bytes;
* ``trickle-head`` / ``trickle-body``: one byte every ``TRICKLE_EVERY`` seconds, of the head
  or of a body that declares 1000 bytes;
* ``redirect``: a 302 whose body is JSON; ``same`` and ``cross``: a 302 to ``/landed`` on this
  server, or on ``other_port`` (another origin); ``landed``: a JSON answer;
* ``retry-after-<value>``: 429 with ``Retry-After: <value>`` twice per path, then ``{}``;
* ``deep`` / ``deep-problem``: JSON nested 100,000 deep, as a 200 or as a 400 problem;
* ``export-bomb``: an export whose gzip declares its length but inflates to a line of zeros;
* ``export-endless``: an export with no declared length, lines sent until the client hangs up;
* ``export-trickle``: an export that declares 200 bytes and sends one every ``TRICKLE_EVERY``.

Every request's path and headers are kept in ``requests``. Each misdeed is bounded in time and
bytes, so a thread never outlives the test by much.
"""

from __future__ import annotations

import contextlib
import gzip
import http.server
import io
import json
import threading
import time
from types import TracebackType
from typing import Optional

BIG = 512 * 1024 * 1024
BOMB_SIZE = 256 * 1024 * 1024
TRICKLE_EVERY = 0.5
TRICKLE_BYTES = 120  # a minute of trickle at most
META = {
    "data_mode": "illustrative",
    "provenance": "backtest",
    "methodology_version": "v0.4.0",
    "dataset_version": "2026-11-24",
    "as_of": "2026-11-24",
    "disclaimer": "a hostile test server",
}


def _bomb(size: int) -> bytes:
    """``size`` zero bytes as gzip (about a thousandth of it)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as archive:
        block = bytes(1024 * 1024)
        for _ in range(size // len(block)):
            archive.write(block)
    return out.getvalue()


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-answer is what these tests are about


class HostileServer:
    def __init__(self, other_port: int = 0) -> None:
        self.other_port = other_port
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._bomb: Optional[bytes] = None
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    owner._handle(self)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, misdeed: str) -> str:
        return f"http://127.0.0.1:{self.port}/{misdeed}"

    def bomb(self) -> bytes:
        with self._lock:
            if self._bomb is None:
                self._bomb = _bomb(BOMB_SIZE)
            return self._bomb

    def _count(self, path: str) -> int:
        with self._lock:
            self._counts[path] = self._counts.get(path, 0) + 1
            return self._counts[path]

    def _handle(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        path = handler.path
        with self._lock:
            self.requests.append((path, {k.lower(): v for k, v in handler.headers.items()}))
        misdeed = path.split("/")[1]
        wfile = handler.wfile

        def answer(status: int, body: bytes, **headers: str) -> None:
            handler.send_response(status)
            handler.send_header("Content-Type", headers.pop("content_type", "application/json"))
            for name, value in headers.items():
                handler.send_header(name.replace("_", "-"), value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            wfile.write(body)

        if misdeed == "big":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
            wfile.write(b'{"filler": "')
            block = b"x" * (1024 * 1024)
            for _ in range(BIG // len(block)):
                wfile.write(block)
        elif misdeed in ("bomb", "export-bomb"):
            answer(200, self.bomb(), Content_Encoding="gzip", ETag='"bomb"', content_type="application/json")
        elif misdeed == "trickle-head":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            for byte in head[:TRICKLE_BYTES]:
                wfile.write(bytes([byte]))
                wfile.flush()
                time.sleep(TRICKLE_EVERY)
            handler.close_connection = True
        elif misdeed == "trickle-body":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "1000")
            handler.end_headers()
            wfile.flush()
            for _ in range(TRICKLE_BYTES):
                wfile.write(b" ")
                wfile.flush()
                time.sleep(TRICKLE_EVERY)
            handler.close_connection = True
        elif misdeed == "export-trickle":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/x-ndjson")
            handler.send_header("Content-Length", "200")
            handler.send_header("ETag", '"trickle"')
            handler.end_headers()
            wfile.flush()
            for _ in range(TRICKLE_BYTES):
                wfile.write(b" ")
                wfile.flush()
                time.sleep(TRICKLE_EVERY)
            handler.close_connection = True
        elif misdeed == "redirect":
            answer(302, b'{"tier": "enterprise"}', Location="/landed/v1/usage")
        elif misdeed == "same":
            answer(302, b"{}", Location="/landed/v1/usage")
        elif misdeed == "cross":
            answer(302, b"{}", Location=f"http://127.0.0.1:{self.other_port}/landed/v1/usage")
        elif misdeed == "landed":
            answer(200, json.dumps({"landed": True}).encode())
        elif misdeed.startswith("retry-after-"):
            if self._count(path) <= 2:
                problem = {"status": 429, "code": "rate_limited", "detail": "slow down"}
                value = misdeed[len("retry-after-") :]
                answer(429, json.dumps(problem).encode(), Retry_After=value)
            else:
                answer(200, b"{}")
        elif misdeed == "deep":
            answer(200, b"[" * 100_000 + b"]" * 100_000)
        elif misdeed == "deep-problem":
            answer(400, b"[" * 100_000 + b"]" * 100_000, content_type="application/problem+json")
        elif misdeed == "export-endless":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/x-ndjson")
            handler.send_header("Connection", "close")
            handler.send_header("ETag", '"endless"')
            handler.end_headers()
            handler.close_connection = True
            header = {"meta": META, "export": "companies", "companies": 10**9}
            wfile.write(json.dumps(header).encode() + b"\n")
            line = json.dumps({"filler": "x" * 1000}).encode() + b"\n"
            for _ in range(BIG // len(line)):
                wfile.write(line)
        else:
            answer(404, b'{"status": 404, "code": "not_found", "detail": "no such misdeed"}')

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()
