"""The overall deadline of a call, enforced on every network read, write and connect.

httpx bounds each wait for bytes (``timeout``) but not a whole answer: a server that sends one
byte every few seconds never trips a read timeout and holds a call for ever. A call therefore
sets a deadline (``DEADLINE``, a context variable: per thread for ``Client``, per task for
``AsyncClient``) and the client's connection pool reaches the network through the streams
below, which shorten every read, write and connect to what is left of it and fail with a
timeout once nothing is left. Outside a call (no deadline set) they change nothing.

The wrappers are installed into the pools of an ``httpx.Client`` / ``httpx.AsyncClient``
(``install``). That reaches into httpx's transport (``_pool``, ``_network_backend``); when a
transport is not httpx's own (a custom transport), nothing is installed and the deadline is
checked between chunks of the answer only. This module imports nothing of the package.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any, Optional

import httpcore

__all__ = ["DEADLINE", "install", "time_left"]

#: The monotonic time by which the current call must be done, or None (no deadline).
DEADLINE: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar(
    "valuation_marks_deadline", default=None
)


def time_left(timeout: Optional[float]) -> Optional[float]:
    """``timeout`` shortened to the current deadline; raises ``httpcore.TimeoutException`` past it."""
    deadline = DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return self._inner.read(max_bytes, time_left(timeout))

    def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        self._inner.write(buffer, time_left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: Optional[str] = None, timeout: Optional[float] = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, time_left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: Optional[float] = None,
        local_address: Optional[str] = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, time_left(timeout), local_address, socket_options)
        return _Stream(stream)

    def connect_unix_socket(
        self, path: str, timeout: Optional[float] = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, time_left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return await self._inner.read(max_bytes, time_left(timeout))

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        await self._inner.write(buffer, time_left(timeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: Optional[str] = None, timeout: Optional[float] = None
    ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname, time_left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: Optional[float] = None,
        local_address: Optional[str] = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, time_left(timeout), local_address, socket_options)
        return _AsyncStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: Optional[float] = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._inner.connect_unix_socket(path, time_left(timeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _wrap_pool(transport: Any) -> bool:
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None or isinstance(backend, (_Backend, _AsyncBackend)):
        return backend is not None
    if isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = _AsyncBackend(backend)  # type: ignore[union-attr]
    elif isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    else:
        return False
    return True


def install(http: Any) -> bool:
    """Routes the pools of an httpx client through the deadline streams; True if all were reached."""
    transports = [getattr(http, "_transport", None), *getattr(http, "_mounts", {}).values()]
    reached = [_wrap_pool(transport) for transport in transports if transport is not None]
    return bool(reached) and all(reached)
