"""A live server for the whole test session: the real ``marks`` binary on 127.0.0.1:0.

The binary is ``$MARKS_BIN`` (else ``target/release/marks``, then ``target/debug/marks`` of the
repository), the dataset ``$MARKS_SAMPLE_DIR`` (else ``sample/``, then ``snapshots/sample/``).
Two versions are built, the sample and its successor a day later (built with ``--previous``),
so the change log has something to say: the successor appends two records to the append-only
history, a Stripe tender offer on its as-of day and a retraction that withdraws the latest
observation of value of a private company (``retraction_target``). Tests read the source data
of the served version from ``Server.events_csv`` (``served_events``, ``effective_view``). Every
key a test spends is issued fresh into a copy of the demo keys file before the server starts.
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
    "free_log": ("free", None),
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
    events_csv: Path  # the served version's source events (the sample's and the two appended)

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


#: Observations of value, which a mark may start from (DESIGN section 3).
ANCHOR_TYPES = ("primary_round", "down_round", "tender_offer", "secondary_sale", "acquisition", "fund_mark")
#: Records that end the private period, by the outcome kind they make.
OUTCOME_KINDS = {
    "ipo": "listed",
    "direct_listing": "listed",
    "spac_listing": "listed",
    "acquisition_closed": "sold",
    "bankruptcy": "bankrupt",
    "wind_down": "wound_down",
}


def served_events(path: Path) -> list[dict[str, str]]:
    """Every record of an events.csv, in file order."""
    with open(path, encoding="utf-8", newline="") as events:
        return list(csv.DictReader(events))


def effective_view(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """Each company's effective view, in date order (file order within a day): every record
    that no later record corrects (``supersedes``) or withdraws (a ``retraction``), retractions
    left out."""
    named = {row["supersedes"] for row in rows if row["supersedes"]}
    by_slug: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        if row["event_id"] not in named and row["event_type"] != "retraction":
            by_slug.setdefault(row["slug"], []).append(row)
    for events in by_slug.values():
        events.sort(key=lambda row: row["occurred_on"])  # stable: file order within a day
    return by_slug


def retraction_target(rows: list[dict[str, str]]) -> dict[str, str]:
    """The record the successor withdraws: the latest observation of value of the first company
    (by slug) that is private, has no sale in its history and has three observations of value
    or more, so that its mark still starts from one after the retraction."""
    for slug, events in sorted(effective_view(rows).items()):
        types = {row["event_type"] for row in events}
        anchors = [
            row for row in events if row["event_type"] in ANCHOR_TYPES and int(row["valuation_usd"]) > 0
        ]
        sold = types & {*OUTCOME_KINDS, "acquisition", "acquisition_terminated"}
        if slug != "stripe" and not sold and len(anchors) >= 3:
            return anchors[-1]
    raise AssertionError("the sample has no company whose observation of value can be withdrawn")


def _next_version(sample: Path, into: Path) -> tuple[str, str]:
    """Writes the sample's successor (a day later, a Stripe tender offer and a retraction) into
    ``into``, with every other file of the sample's dataset."""
    toml = (sample / "dataset.toml").read_text(encoding="utf-8")
    found = re.search(r'^dataset_version = "(\d{4}-\d{2}-\d{2})"', toml, re.M)
    assert found, "dataset.toml has no dataset_version"
    previous = found.group(1)
    following = (datetime.date.fromisoformat(previous) + datetime.timedelta(days=1)).isoformat()
    # Every file of the dataset: the publication log it carries and the key that signed it with
    # the rest (the build checks the log agrees with the previous snapshot's).
    shutil.copytree(sample, into, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    toml = re.sub(r'^dataset_version = ".*"', f'dataset_version = "{following}"', toml, flags=re.M)
    toml = re.sub(r'^as_of = ".*"', f'as_of = "{following}"', toml, flags=re.M)
    (into / "dataset.toml").write_text(toml, encoding="utf-8")
    events = (sample / "events.csv").read_text(encoding="utf-8")
    header = next(csv.reader(io.StringIO(events)))
    withdrawn = retraction_target(served_events(sample / "events.csv"))
    appended = [
        {
            "event_id": "e9001",
            "slug": "stripe",
            "event_type": "tender_offer",
            "occurred_on": following,
            "valuation_usd": "91000000000",
            "source_url": "https://example.com/sdk-tests",
            "note": "a later version for the SDK tests",
        },
        {
            "event_id": "e9002",
            "slug": withdrawn["slug"],
            "event_type": "retraction",
            "occurred_on": following,
            "valuation_usd": "0",
            "note": f"{withdrawn['event_id']} withdrawn for the SDK tests",
            "supersedes": withdrawn["event_id"],
        },
    ]
    lines = io.StringIO()
    writer = csv.writer(lines, lineterminator="\n")
    for values in appended:
        writer.writerow([values.get(column, "") for column in header])
    (into / "events.csv").write_text(events.rstrip("\n") + "\n" + lines.getvalue(), encoding="utf-8")
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
        yield Server(base_url, keys, version, previous, marks, work, work / "next" / "events.csv")


@contextlib.contextmanager
def run_server(marks: Path, snapshot: Path, keys_file: Path, work: Path, *extra: str) -> Iterator[str]:
    """``marks serve`` on 127.0.0.1:0 for the duration, started by the repository's one Python
    harness (tests/harness/marks_server.py, which waits for the server's ready file), with
    ``extra`` arguments; yields its base URL."""
    log = work / f"serve-{snapshot.stem}.err"
    with open(log, "w+b") as stderr:
        try:
            with serve(
                marks, "--snapshot", snapshot, "--keys", keys_file, "--no-access-log",
                "--auth-failures-per-min", "1000", *extra, stderr=stderr, timeout=30,
            ) as running:  # fmt: skip
                yield running.url
        except NotStarted as error:
            pytest.fail(f"the server did not start: {error}", pytrace=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
