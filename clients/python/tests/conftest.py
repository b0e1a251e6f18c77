"""A live server for the whole test session: the real ``marks`` binary on 127.0.0.1:0.

The binary is ``$MARKS_BIN`` (else ``target/release/marks``, then ``target/debug/marks`` of the
repository), the dataset ``$MARKS_SAMPLE_DIR`` (else ``sample/``, then ``snapshots/sample/``).
Two versions are built, the sample and its successor a day later with one more Stripe event
(built with ``--previous``), so the change log has something to say. Every key a test spends
is issued fresh into a copy of the demo keys file before the server starts.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # clients/python
REPO_DIR = PACKAGE_DIR.parent.parent
sys.path.insert(0, str(REPO_DIR / "tests" / "harness"))
from marks_server import NotStarted, serve  # noqa: E402  (the one way a harness starts the server)

#: The RFC 7638 thumbprint of the sample's demo signing key (sample/demo-signing-key.pem), the
#: kid of its key in /v1/signing-keys: what a user pins, obtained apart from the server.
DEMO_KEY_THUMBPRINT = "8cFQvvPN3YW3NukGbuYF1Nl_KFW3PuXFAmgKKMweRBY"

# name -> (tier, requests per minute or None for the tier's own)
KEYS: dict[str, tuple[str, int | None]] = {
    "enterprise": ("enterprise", 1_000_000),
    "business": ("business", 1_000_000),
    "pro": ("pro", 1_000_000),
    "research": ("research", 1_000_000),
    "free_sync": ("free", None),  # the free tier's own budget: 10 a minute
    "free_async": ("free", None),
    "free_example": ("free", None),
    "free_backtest": ("free", None),
    "free_find": ("free", None),
    "free_indices": ("free", None),
    "slow_sync": ("research", 30),  # one request every 2 s once spent: Retry-After 2
    "slow_async": ("research", 30),
    "cap_sync": ("research", 2),  # a refill every 30 s: spent in two requests
    "cap_async": ("research", 2),
    "etag_sync": ("research", 2),  # a 304's cost shows in X-RateLimit-Remaining
    "etag_async": ("research", 2),
}


@dataclasses.dataclass(frozen=True)
class Server:
    base_url: str
    keys: dict[str, str]
    version: str  # dataset version served
    previous_version: str  # the version before it, in the change log
    marks_bin: Path
    workdir: Path

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])


def _first_existing(candidates: list[Path], what: str, env: str) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    pytest.fail(f"no {what} found (set {env}); tried {tried}", pytrace=False)


def find_binary() -> Path:
    if os.environ.get("MARKS_BIN"):
        return Path(os.environ["MARKS_BIN"])
    return _first_existing(
        [REPO_DIR / "target" / "release" / "marks", REPO_DIR / "target" / "debug" / "marks"],
        "marks binary",
        "MARKS_BIN",
    )


def find_sample() -> Path:
    if os.environ.get("MARKS_SAMPLE_DIR"):
        return Path(os.environ["MARKS_SAMPLE_DIR"])
    return _first_existing(
        [REPO_DIR / "sample", REPO_DIR / "snapshots" / "sample"], "sample dataset", "MARKS_SAMPLE_DIR"
    )


def _run(*args: str | Path) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} failed:\n{done.stderr}", pytrace=False)
    return done.stdout


def _next_version(sample: Path, into: Path) -> tuple[str, str]:
    """Writes the sample's successor (a day later, one more Stripe event) into ``into``."""
    toml = (sample / "dataset.toml").read_text(encoding="utf-8")
    found = re.search(r'^dataset_version = "(\d{4}-\d{2}-\d{2})"', toml, re.M)
    assert found, "dataset.toml has no dataset_version"
    previous = found.group(1)
    following = (datetime.date.fromisoformat(previous) + datetime.timedelta(days=1)).isoformat()
    into.mkdir()
    shutil.copy(sample / "companies.csv", into / "companies.csv")
    toml = re.sub(r'^dataset_version = ".*"', f'dataset_version = "{following}"', toml, flags=re.M)
    toml = re.sub(r'^as_of = ".*"', f'as_of = "{following}"', toml, flags=re.M)
    (into / "dataset.toml").write_text(toml, encoding="utf-8")
    events = (sample / "events.csv").read_text(encoding="utf-8")
    header = next(csv.reader(io.StringIO(events)))
    values = {
        "event_id": "e9001",
        "slug": "stripe",
        "event_type": "tender_offer",
        "occurred_on": following,
        "valuation_usd": "91000000000",
        "source_url": "https://example.com/sdk-tests",
        "note": "a later version for the SDK tests",
    }
    line = io.StringIO()
    csv.writer(line, lineterminator="\n").writerow([values.get(column, "") for column in header])
    (into / "events.csv").write_text(events.rstrip("\n") + "\n" + line.getvalue(), encoding="utf-8")
    return previous, following


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    marks, sample = find_binary(), find_sample()
    work = tmp_path_factory.mktemp("marks")
    signing_key = sample / "demo-signing-key.pem"
    _run(
        marks,
        "build",
        "--source",
        sample,
        "--out",
        work / "previous.snap",
        "--signing-key",
        signing_key,
        "--quiet",
    )
    previous, version = _next_version(sample, work / "next")
    _run(
        marks, "build", "--source", work / "next", "--previous", work / "previous.snap",
        "--out", work / "sample.snap", "--signing-key", signing_key, "--quiet",
    )  # fmt: skip
    keys_file = work / "keys.toml"
    shutil.copy(sample / "demo-keys.toml", keys_file)
    keys = {}
    for name, (tier, rate) in KEYS.items():
        extra = ["--rate-per-min", str(rate)] if rate is not None else []
        keys[name] = _run(
            marks, "keys", "issue", "--keys", keys_file, "--tier", tier, "--tenant", f"sdk-{name}", *extra
        ).strip()
    with run_server(marks, work / "sample.snap", keys_file, work) as base_url:
        yield Server(base_url, keys, version, previous, marks, work)


@contextlib.contextmanager
def run_server(marks: Path, snapshot: Path, keys_file: Path, work: Path) -> Iterator[str]:
    """``marks serve`` on 127.0.0.1:0 for the duration, started by the repository's one Python
    harness (tests/harness/marks_server.py, which waits for the server's ready file); yields
    its base URL."""
    log = work / f"serve-{snapshot.stem}.err"
    with open(log, "w+b") as stderr:
        try:
            with serve(
                marks, "--snapshot", snapshot, "--keys", keys_file, "--no-access-log",
                "--auth-failures-per-min", "1000", stderr=stderr, timeout=30,
            ) as running:  # fmt: skip
                yield running.url
        except NotStarted as error:
            pytest.fail(f"the server did not start: {error}", pytrace=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
