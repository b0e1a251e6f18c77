"""Starting `marks serve` for a test or a check, the one way every Python harness does it.

The server is started on 127.0.0.1 port 0 with `--ready-file`; once it listens it writes its
URL there (JSON: url, addr, pid), which is how the harness learns the port without reading logs.
Used by the browser tests (tests/browser/conftest.py) and the SDK's tests
(clients/python/tests/conftest.py); the shell scripts use tests/harness/marks-server.sh, the Rust
tests tests/util/mod.rs (`spawn_binary`), all reading the same file.

    from marks_server import serve
    with serve(binary, "--snapshot", snap, "--keys", keys) as server:
        print(server.url)

`start` and `stop` are the same for a caller that stops servers one by one at times of its own
choosing (tests/live/fleet_check.py, whose replicas are killed and replaced mid-run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Union

PathLike = Union[str, Path]  # noqa: UP007 - the SDK's tests import this on Python 3.9


@dataclasses.dataclass(frozen=True)
class Running:
    """A server that is listening: where, and its process."""

    url: str
    addr: str
    process: subprocess.Popen[bytes]


class NotStarted(RuntimeError):
    """The server exited, or did not listen in time; the message holds what it said."""


@contextlib.contextmanager
def serve(
    binary: PathLike,
    *args: PathLike,
    timeout: float = 60.0,
    stderr: IO[bytes] | None = None,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    cwd: PathLike | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Running]:
    """Runs `BINARY serve --addr 127.0.0.1:0 --ready-file F ARGS...` until the block ends.

    `stderr`: where the server's operational log goes (a file the caller keeps, for example);
    by default a temporary file whose text is in the error if the server does not start.
    `stdout` (the access log, unless it is written to a file or turned off): discarded unless
    given. `env`: the server's environment, by default this process's. The server is sent
    SIGTERM at the end, and killed if it has not stopped 15 s later.
    """
    running = start(binary, *args, timeout=timeout, stderr=stderr, stdout=stdout, cwd=cwd, env=env)
    try:
        yield running
    finally:
        stop(running)


def start(
    binary: PathLike,
    *args: PathLike,
    timeout: float = 60.0,
    stderr: IO[bytes] | None = None,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    cwd: PathLike | None = None,
    env: Mapping[str, str] | None = None,
) -> Running:
    """`serve` for a caller that stops the server itself, at a time of its choosing (with `stop`,
    or by signalling `Running.process`): returns once the server listens."""
    with contextlib.ExitStack() as owned:
        work = owned.enter_context(tempfile.TemporaryDirectory(prefix="marks-serve-"))
        ready = Path(work) / "ready.json"
        # The child writes through its own descriptor: this copy may be closed once it has started.
        log = stderr if stderr is not None else owned.enter_context(open(Path(work) / "serve.err", "w+b"))
        command: Sequence[str] = [
            str(binary), "serve", "--addr", "127.0.0.1:0", "--ready-file", str(ready), *map(str, args),
        ]  # fmt: skip
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=log, cwd=cwd, env=env
        )  # fmt: skip
        try:
            written = _wait_for(ready, process, timeout, log)
        except BaseException:
            stop(Running(url="", addr="", process=process))
            raise
        return Running(url=written["url"], addr=written["addr"], process=process)
    raise AssertionError("unreachable")  # pragma: no cover - the block returns or raises


def stop(running: Running, sig: int = signal.SIGTERM, grace: float = 15.0) -> None:
    """Sends the server `sig` (SIGTERM: it finishes in-flight requests and exits) and waits for
    it; kills it if it has not stopped `grace` seconds later."""
    process = running.process
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_for(ready: Path, process: subprocess.Popen[bytes], timeout: float, log: IO[bytes]) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.exists():
            written: dict[str, str] = json.loads(ready.read_text())
            return written
        if process.poll() is not None:
            raise NotStarted(f"the server exited ({process.returncode}) before listening:\n{_said(log)}")
        time.sleep(0.02)
    raise NotStarted(f"the server did not listen within {timeout:.0f} s:\n{_said(log)}")


def _said(log: IO[bytes]) -> str:
    try:
        log.flush()
        log.seek(0)
        return log.read().decode(errors="replace")[-4000:]
    except (OSError, ValueError):
        return "(its log is elsewhere)"
