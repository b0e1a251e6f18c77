"""The publication log over real HTTP: every company's history verifies, and tampering does not.

The session's server publishes the log the sample carries (three versions), the sample's own
version and its successor's: five checkpoints. Every company's published marks are verified with
the demo public key pinned (sample/demo-signing-key.pem.pub), with a research key and with a pro
key (which also reads the 95% bounds). The checkpoints in sample/publication-log.jsonl play the
ones a user kept: today's log must extend each of them.

Then a man in the middle (``RewritingProxy``, tests/proxy.py) changes the server's answers on
their way: a forged, removed or reordered entry, a checkpoint signed by another key, a changed
proof; and a log built apart from the sample (a fork: the same origin and key, another history)
is served by a second server. ``verify_history`` refuses each, naming the check that failed.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from valuation_marks import (
    AsyncClient,
    Checkpoint,
    Client,
    HistoryVerification,
    InvalidParameter,
    LogVerificationError,
    Published,
    TierForbidden,
    canonical_json,
    read_publication_log,
    verify_history,
)
from valuation_marks.transparency import leaf_hash, root_from_inclusion_proof

from .conftest import DEMO_KEY_THUMBPRINT, REPO_DIR, Server, _run, run_server
from .proxy import RewritingProxy
from .signed_notes import DEMO_PEM, SAMPLE, demo_private_key, sign

PEM = DEMO_PEM
ORIGIN = "valuation-marks.example/publications"


def kept_notes() -> list[str]:
    """The checkpoints of the versions published before the sample's: the ones a user kept."""
    path = SAMPLE / "publication-log.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not there: the dataset carries no publication log")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [line["checkpoint"]["note"] for line in lines if "checkpoint" in line]


def client(server: Server, key: str, base_url: str | None = None) -> Client:
    return Client(api_key=server.keys[key], base_url=base_url or server.base_url, max_retries=0)


# ---------------------------------------------------------------------------------------------
# Every company, every kept checkpoint


@pytest.mark.parametrize("tier", ["research", "pro"])
def test_every_companys_published_history_verifies(server: Server, tier: str) -> None:
    with client(server, tier) as api:
        slugs = [company.slug for company in api.companies(limit=200)]
        assert len(slugs) > 200
        versions: set[str] = set()
        for slug in slugs:
            published = api.published(slug)
            verified = published.verify(PEM)
            assert verified.slug == slug and verified.origin == ORIGIN
            assert verified.entries == len(published) >= 1
            assert verified.dataset_version == server.version == published.versions[-1].dataset_version
            assert published.series[-1].entry.dataset_version == server.version  # marked today
            if tier == "pro":
                assert verified.bands_checked == verified.entries
                assert all(mark.band_95 is not None for mark in published)
            else:
                assert verified.bands_checked == 0 and "band_95" not in published.series[0].raw
                assert all(mark.band_95 is None for mark in published)
            versions.update(verified.dataset_versions)
    assert len(versions) == len(published.versions) == 6  # the sample's four, the sample's, its successor's
    assert server.previous_version in versions


def test_today_extends_every_checkpoint_kept(server: Server) -> None:
    with client(server, "enterprise") as api:
        log = api.export_log()
        published = api.published("stripe")
        sizes = [version.tree_size for version in published.versions]
        assert [c.tree_size for c in log.checkpoints] == sizes
        kept = kept_notes() + [c.note for c in log.checkpoints]  # the sample's three, then all five
        assert kept[:3] == [c.note for c in log.checkpoints[:3]]  # carried as published
        for note in kept:
            checkpoint = Checkpoint.parse(note)
            verified = api.verify_history("stripe", PEM, kept=note)
            assert verified.kept == checkpoint and verified.consistent_from == checkpoint.tree_size
            assert verified.tree_size == sizes[-1]
            if checkpoint.tree_size < sizes[-1]:
                proof = api.log_consistency(checkpoint.tree_size)
                assert proof.from_.root_hash == checkpoint.root_hash
                assert proof.to.tree_size == sizes[-1] and proof.proof
                assert (
                    verify_history(published, PEM, kept=checkpoint, consistency=proof.raw).kept == checkpoint
                )
                assert (
                    published.verify(PEM, kept=note, consistency=proof).consistent_from
                    == checkpoint.tree_size
                )


def test_the_whole_log_replays(server: Server, tmp_path: Path) -> None:
    with client(server, "enterprise") as api:
        log = api.export_log()
        checkpoint = api.log_checkpoint()
        download = api.download_export_log(tmp_path / "log.ndjson.gz")
    verified = log.verify(PEM, kept=kept_notes()[0], origin=ORIGIN)
    assert (
        verified.tree_size == checkpoint.tree_size == len(log) and verified.root_hash == checkpoint.root_hash
    )
    assert verified.dataset_versions[-2:] == (server.previous_version, server.version)
    assert (
        download.complete
        and read_publication_log(download.path).verify(PEM, kept=kept_notes()[0]) == verified
    )


def test_the_checkpoint_and_the_consistency_routes(server: Server) -> None:
    with client(server, "research") as api:
        checkpoint = api.log_checkpoint()
        published = api.published("stripe")
        assert checkpoint.note == published.log.checkpoint and checkpoint == published.log.parse()
        assert checkpoint.verify(PEM) == checkpoint and checkpoint.dataset_version == server.version
        assert (checkpoint.tree_size, checkpoint.root_hash) == (
            published.log.tree_size,
            published.log.root_hash,
        )
        with pytest.raises(InvalidParameter, match="not the size of a published checkpoint"):
            api.log_consistency(5)
        today = api.log_consistency(checkpoint.tree_size)  # today's own size: the empty proof
        assert today.proof == () and today.to.tree_size == checkpoint.tree_size
        with pytest.raises(ValueError, match="from_size"):
            api.log_consistency(0)  # refused before any request
        # A pinned thumbprint: the public key comes from the server's key set, checked against it.
        assert api.verify_history("stripe", DEMO_KEY_THUMBPRINT).checkpoint == checkpoint


def test_the_csv_form_has_the_same_entries(server: Server) -> None:
    with client(server, "pro") as api:
        published = api.published("anthropic")
        rows = list(csv.DictReader(io.StringIO(api.published_csv("anthropic"))))
    assert [row["leaf_hash"] for row in rows] == [mark.leaf_hash for mark in published]
    assert [row["inclusion_proof"].split(" ") for row in rows] == [list(m.inclusion_proof) for m in published]
    assert [int(row["value_usd"]) for row in rows] == [mark.entry.value_usd for mark in published]
    for mark in published:
        assert base64.b64encode(mark.entry.leaf_hash).decode() == mark.leaf_hash
        assert mark.band_95 is not None and mark.band_95.digest == mark.entry.band_95_digest
        assert mark.date == mark.entry.as_of


def test_an_answer_cut_to_dates_verifies(server: Server) -> None:
    with client(server, "research") as api:
        whole = api.published("stripe")
        middle = whole.series[1:-1]
        cut = api.published("stripe", start=middle[0].date, end=middle[-1].date.isoformat())
        before = api.published("stripe", end=middle[0].date)
    assert [m.leaf_index for m in cut] == [m.leaf_index for m in middle] and cut.end is not None
    assert cut.verify(PEM).entries == len(middle)
    assert before.verify(PEM).dataset_versions == tuple(m.entry.dataset_version for m in whole.series[:2])
    with pytest.raises(LogVerificationError) as refused:
        verify_history(before.raw, PEM)  # the JSON alone does not say it was cut: it looks cut short
    assert refused.value.check == "completeness"


def test_the_async_client_verifies_too(server: Server) -> None:
    async def run() -> tuple[HistoryVerification, Published, Checkpoint]:
        async with AsyncClient(api_key=server.keys["pro"], base_url=server.base_url) as api:
            verified = await api.verify_history("openai", PEM, kept=kept_notes()[1])
            return verified, await api.published("openai"), await api.log_checkpoint()

    verified, published, checkpoint = asyncio.run(run())
    assert verified.consistent_from == 126 and verified.checkpoint == checkpoint
    assert verified.entries == len(published) and verified.bands_checked == len(published)
    asynchronous = AsyncClient(base_url=server.base_url)
    with pytest.raises(TypeError, match=r"await client\.verify_history"):
        verify_history(asynchronous, PEM, slug="openai")
    asyncio.run(asynchronous.aclose())


@pytest.mark.parametrize(
    "call",
    [
        lambda api: api.published("stripe"),
        lambda api: api.published_csv("stripe"),
        lambda api: api.log_checkpoint(),
        lambda api: api.log_consistency(41),
        lambda api: api.verify_history("stripe", PEM),
    ],
)
def test_a_free_key_reads_no_log(server: Server, call: Callable[[Client], Any]) -> None:
    with client(server, "free_log") as api, pytest.raises(TierForbidden):
        call(api)


def test_the_log_export_is_for_enterprise(server: Server) -> None:
    with client(server, "business") as api, pytest.raises(TierForbidden):
        api.export_log()


# ---------------------------------------------------------------------------------------------
# A man in the middle


@pytest.fixture(scope="module")
def proxy(server: Server) -> Iterator[RewritingProxy]:
    with RewritingProxy(server.port) as relay:
        yield relay


@pytest.fixture
def relay(proxy: RewritingProxy) -> Iterator[RewritingProxy]:
    proxy.rewrite = None
    yield proxy
    proxy.rewrite = None


def on_published(change: Callable[[dict[str, Any]], None]) -> Callable[[str, bytes], bytes]:
    """A rewrite of ``/published`` answers: ``change`` edits the decoded body in place."""

    def rewrite(path: str, body: bytes) -> bytes:
        if "/published" not in path:
            return body
        data = json.loads(body)
        change(data)
        return json.dumps(data).encode()

    return rewrite


def refused(
    server: Server, relay: RewritingProxy, *, tier: str = "research", **options: Any
) -> LogVerificationError:
    """What ``verify_history`` raises through the relay (for Stripe, the demo key pinned)."""
    with client(server, tier, relay.base_url) as api, pytest.raises(LogVerificationError) as raised:
        api.verify_history("stripe", PEM, **options)
    return raised.value


def test_the_relay_changes_nothing_unless_told(server: Server, relay: RewritingProxy) -> None:
    with client(server, "pro", relay.base_url) as api:
        assert api.verify_history("stripe", PEM, kept=kept_notes()[0]).consistent_from == 41
    assert any("/v1/log/consistency?from=41" in path for path in relay.paths)


def test_a_forged_entry_is_refused(server: Server, relay: RewritingProxy) -> None:
    def forge(data: dict[str, Any]) -> None:
        data["series"][1]["entry"]["value_usd"] *= 2

    relay.rewrite = on_published(forge)
    error = refused(server, relay)
    assert error.check == "leaf_hash" and error.slug == "stripe" and "changed" in str(error)

    def forge_and_rehash(data: dict[str, Any]) -> None:
        forge(data)
        entry = data["series"][1]["entry"]
        data["series"][1]["leaf_hash"] = base64.b64encode(leaf_hash(canonical_json(entry))).decode()

    relay.rewrite = on_published(forge_and_rehash)
    error = refused(server, relay)
    with client(server, "research") as api:
        assert error.check == "inclusion" and error.leaf_index == api.published("stripe").series[1].leaf_index


def test_a_removed_entry_is_refused(server: Server, relay: RewritingProxy) -> None:
    relay.rewrite = on_published(lambda data: data["series"].pop(2))
    error = refused(server, relay)
    assert error.check == "completeness" and "removed" in error.detail
    relay.rewrite = on_published(lambda data: data["series"].pop())  # today's entry
    assert refused(server, relay).check == "completeness"


def test_reordered_entries_are_refused(server: Server, relay: RewritingProxy) -> None:
    def swap(data: dict[str, Any]) -> None:
        series = data["series"]
        series[1], series[2] = series[2], series[1]

    relay.rewrite = on_published(swap)
    assert refused(server, relay).check == "order"


def test_a_changed_band_is_refused(server: Server, relay: RewritingProxy) -> None:
    def widen(data: dict[str, Any]) -> None:
        data["series"][0]["band_95"]["upper_usd"] += 1

    relay.rewrite = on_published(widen)
    assert refused(server, relay, tier="pro").check == "band_95"


def test_a_checkpoint_signed_by_another_key_is_refused(server: Server, relay: RewritingProxy) -> None:
    stranger = Ed25519PrivateKey.generate()

    def resign(data: dict[str, Any]) -> None:
        checkpoint = Checkpoint.parse(data["log"]["checkpoint"])
        data["log"]["checkpoint"] = sign(checkpoint.text, checkpoint.origin, stranger)

    relay.rewrite = on_published(resign)
    assert refused(server, relay).check == "signature"

    def rewrite_history(data: dict[str, Any]) -> None:
        """A history of one forged entry, its tree re-rooted and signed by the stranger."""
        mark = data["series"][-1]
        mark["entry"]["value_usd"] += 1_000_000
        hashed = leaf_hash(canonical_json(mark["entry"]))
        mark["leaf_hash"] = base64.b64encode(hashed).decode()
        size = data["log"]["tree_size"]
        proof = [base64.b64decode(p) for p in mark["inclusion_proof"]]
        root = base64.b64encode(root_from_inclusion_proof(mark["leaf_index"], size, hashed, proof)).decode()
        version = data["versions"][-1]["dataset_version"]
        text = f"{ORIGIN}\n{size}\n{root}\ndataset_version {version}\n"
        data["log"].update(checkpoint=sign(text, ORIGIN, stranger), root_hash=root)
        data["series"] = [mark]

    relay.rewrite = on_published(rewrite_history)
    with client(server, "research", relay.base_url) as api:
        forged = api.published("stripe", start=server.version)
    assert forged.verify(stranger.public_key()).entries == 1  # consistent in itself ...
    with pytest.raises(LogVerificationError) as error:
        forged.verify(PEM)  # ... but not signed by the key pinned
    assert error.value.check == "signature"


def test_a_head_that_is_not_its_checkpoint_is_refused(server: Server, relay: RewritingProxy) -> None:
    relay.rewrite = on_published(lambda data: data["log"].update(tree_size=data["log"]["tree_size"] - 1))
    assert refused(server, relay).check == "checkpoint"
    relay.rewrite = on_published(lambda data: data["versions"].pop(1))
    assert refused(server, relay).check == "versions"


def test_a_kept_checkpoint_of_another_history_is_refused(server: Server) -> None:
    """The publisher's key signs a checkpoint of 126 entries with another root: the signature
    holds, and the consistency proof from 126 entries shows today's log is not its extension."""
    checkpoint = Checkpoint.parse(kept_notes()[1])
    other_root = base64.b64encode(bytes(range(32))).decode()
    kept = sign(
        checkpoint.text.replace(checkpoint.root_hash, other_root), checkpoint.origin, demo_private_key()
    )
    assert Checkpoint.parse(kept).verify(PEM).tree_size == 126
    with client(server, "research") as api, pytest.raises(LogVerificationError) as error:
        api.verify_history("stripe", PEM, kept=kept)
    assert error.value.check == "consistency" and "does not extend" in error.value.detail


def test_a_changed_consistency_proof_is_refused(server: Server, relay: RewritingProxy) -> None:
    def flip(path: str, body: bytes) -> bytes:
        if "/log/consistency" not in path:
            return body
        data = json.loads(body)
        data["proof"][0] = base64.b64encode(bytes(32)).decode()
        return json.dumps(data).encode()

    relay.rewrite = flip
    error = refused(server, relay, kept=kept_notes()[0])
    assert error.check == "consistency"


@pytest.fixture(scope="module")
def fork(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A log built apart from the sample's (sample v3, no log carried): the same origin and key,
    another history. Served by a second server; yields its base URL and its checkpoint."""
    work = tmp_path_factory.mktemp("fork")
    _run(
        server.marks_bin, "build", "--source", REPO_DIR / "builder" / "tests" / "golden" / "sample-v3",
        "--out", work / "fork.snap", "--signing-key", SAMPLE / "demo-signing-key.pem", "--quiet",
        "--log-out", work / "fork.jsonl",
    )  # fmt: skip
    log = read_publication_log(work / "fork.jsonl")
    with run_server(server.marks_bin, work / "fork.snap", server.workdir / "keys.toml", work) as base_url:
        yield base_url, log.checkpoints[-1].note


def test_a_fork_is_refused_from_a_kept_checkpoint(server: Server, fork: tuple[str, str]) -> None:
    base_url, forked = fork
    with client(server, "research", base_url) as api:
        alone = api.verify_history("stripe", PEM)  # a log signed by the pinned key, consistent in itself
        assert alone.origin == ORIGIN and alone.tree_size == Checkpoint.parse(forked).tree_size
        for kept in kept_notes():  # what the sample's readers kept is not in its past
            with pytest.raises(LogVerificationError) as error:
                api.verify_history("stripe", PEM, kept=kept)
            assert error.value.check == "consistency", error.value
    with client(server, "research") as api, pytest.raises(LogVerificationError) as error:
        api.verify_history("stripe", PEM, kept=forked)  # and the sample's log is not the fork's future
    assert error.value.check == "consistency" and "forked" in error.value.detail
