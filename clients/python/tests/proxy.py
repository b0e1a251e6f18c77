"""Relays in front of the real server that misbehave on purpose.

Not mocks: every answer comes from the live server. ``CuttingProxy`` is a tiny TCP relay: the
first ``cuts`` connections are closed after ``cut_after`` bytes of the answer (0: before any),
as a lost connection would; the rest are relayed whole. The request heads are kept so tests can
show what the client sent. ``RewritingProxy`` is an HTTP relay that hands each answer's body
to a function of the test's before sending it on: a man in the middle that changes what the
server said.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import socket
import threading
from types import TracebackType
from typing import Callable, Optional


class CuttingProxy:
    def __init__(
        self,
        upstream_port: int,
        *,
        cut_after: int,
        cuts: int = 1,
        on_cut: Optional[Callable[[], None]] = None,
    ) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.cut_after = cut_after
        self.cuts = cuts
        self.on_cut = on_cut  # called before a cut connection is closed
        self.requests: list[bytes] = []  # what each connection sent first (its request head)
        self.connections = 0
        self.cut = 0  # connections cut so far
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def request_headers(self, connection: int) -> dict[str, str]:
        """The request headers the ``connection``-th connection (0-based) opened with."""
        head = self.requests[connection].split(b"\r\n\r\n", 1)[0].decode("latin-1")
        pairs = (line.split(":", 1) for line in head.split("\r\n")[1:] if ":" in line)
        return {name.strip().lower(): value.strip() for name, value in pairs}

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = self.connections
                self.connections += 1
                limit = self.cut_after if self.cut < self.cuts else None
                if limit is not None:
                    self.cut += 1
                self.requests.append(b"")
            threading.Thread(target=self._serve, args=(client, index, limit), daemon=True).start()

    def _serve(self, client: socket.socket, index: int, limit: Optional[int]) -> None:
        try:
            upstream = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        threading.Thread(target=self._requests, args=(client, upstream, index), daemon=True).start()
        sent = 0
        try:
            while limit is None or sent < limit:
                data = upstream.recv(65536)
                if not data:
                    break
                if limit is not None and sent + len(data) >= limit:
                    data = data[: limit - sent]
                client.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            if limit is not None and self.on_cut is not None:
                self.on_cut()
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _requests(self, client: socket.socket, upstream: socket.socket, index: int) -> None:
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                with self._lock:
                    if len(self.requests[index]) < 16384:
                        self.requests[index] += data
                upstream.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def __enter__(self) -> CuttingProxy:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


#: ``rewrite(path, body)``: the body to send instead (``path`` with its query string).
Rewrite = Callable[[str, bytes], bytes]

# Hop-by-hop headers, and those a changed body makes wrong.
_DROPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "etag"}


class RewritingProxy:
    """An HTTP relay to the server on ``upstream_port``: each GET is sent on (its headers as
    they came, but ``Accept-Encoding``: the body is rewritten as text), and the answer's body
    goes through ``rewrite`` (set or changed at any time) before it is sent back, with its
    status and headers (less its ETag and length). ``paths`` keeps what was asked."""

    def __init__(self, upstream_port: int, rewrite: Optional[Rewrite] = None) -> None:
        self.upstream_port = upstream_port
        self.rewrite = rewrite
        self.paths: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner._relay(self)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _relay(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        self.paths.append(handler.path)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("accept-encoding", "host")}
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            upstream.request("GET", handler.path, headers=headers)
            answer = upstream.getresponse()
            body = answer.read()
            rewrite = self.rewrite
            if rewrite is not None and answer.status == 200:
                body = rewrite(handler.path, body)
            handler.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in _DROPPED:
                    handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        finally:
            upstream.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RewritingProxy:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()
