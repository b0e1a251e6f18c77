"""The publication log's verifier offline: RFC 6962 proofs, signed checkpoints, a log file.

The proofs are held to the transparency-dev test vectors (tests/data/rfc6962_vectors.json: every
vector of github.com/transparency-dev/merkle's testdata/inclusion and testdata/consistency, with
the verdict of its reference verifier). The checkpoints and the log file are the sample's own
(sample/publication-log.jsonl, signed with the demo key), and changed copies of them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from valuation_marks import (
    Checkpoint,
    LogVerificationError,
    SigningKey,
    UnknownSigningKey,
    jwk_thumbprint,
    read_publication_log,
    verify_log,
)
from valuation_marks.models import from_json
from valuation_marks.transparency import (
    band_95_digest,
    leaf_hash,
    log_keys,
    verify_consistency,
    verify_inclusion,
)

from .conftest import DEMO_KEY_THUMBPRINT
from .signed_notes import DEMO_PEM, SAMPLE, demo_private_key, sign

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "rfc6962_vectors.json").read_text(encoding="utf-8")
)


def b64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def proof_of(vector: dict[str, Any]) -> list[bytes]:
    return [b64(p) for p in vector["proof"] or []]


@pytest.mark.parametrize("case", VECTORS["inclusion"], ids=lambda case: case["path"][18:])
def test_inclusion_vectors(case: dict[str, Any]) -> None:
    v = case["vector"]
    verified = verify_inclusion(v["leafIdx"], v["treeSize"], b64(v["leafHash"]), proof_of(v), b64(v["root"]))
    assert verified is not v["wantErr"], v["desc"]


@pytest.mark.parametrize("case", VECTORS["consistency"], ids=lambda case: case["path"][20:])
def test_consistency_vectors(case: dict[str, Any]) -> None:
    v = case["vector"]
    verified = verify_consistency(v["size1"], v["size2"], proof_of(v), b64(v["root1"]), b64(v["root2"]))
    assert verified is not v["wantErr"], v["desc"]


def test_the_vectors_say_where_they_come_from() -> None:
    assert VECTORS["source"] == "https://github.com/transparency-dev/merkle"
    assert len(VECTORS["commit"]) == 40 and VECTORS["license"] == "Apache-2.0"
    assert "Apache License, Version 2.0" in VECTORS["license_note"]
    for kind in ("inclusion", "consistency"):
        cases = VECTORS[kind]
        assert all(case["path"].startswith(f"testdata/{kind}/") for case in cases)
        verdicts = {case["vector"]["wantErr"] for case in cases}
        assert verdicts == {True, False} and len(cases) >= 90, kind  # both verdicts, every file


def test_the_hashes_are_rfc_6962s() -> None:
    # The empty leaf's hash, as RFC 6962's test data has it.
    assert leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    band = {"lower_usd": 1, "salt": "AAAAAAAAAAAAAAAAAAAAAA", "upper_usd": 3}
    assert band_95_digest(band) == band_95_digest(dict(reversed(band.items())))  # canonical JSON


# ---------------------------------------------------------------------------------------------
# Signed checkpoints

PEM = DEMO_PEM
LOG = SAMPLE / "publication-log.jsonl"


def log_lines() -> list[dict[str, Any]]:
    if not LOG.is_file():
        pytest.skip(f"{LOG} is not there: the dataset carries no publication log")
    return [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]


def notes() -> list[str]:
    return [line["checkpoint"]["note"] for line in log_lines() if "checkpoint" in line]


def demo_jwk() -> dict[str, str]:
    public = demo_private_key().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    x = base64.urlsafe_b64encode(public).rstrip(b"=").decode("ascii")
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": DEMO_KEY_THUMBPRINT}


def test_the_samples_checkpoints_verify_with_every_form_of_the_pinned_key() -> None:
    note = notes()[0]
    checkpoint = Checkpoint.parse(note)
    assert checkpoint.origin == "valuation-marks.example/publications"
    assert (checkpoint.tree_size, checkpoint.dataset_version) == (41, "2026-11-20")
    assert checkpoint.note == note and checkpoint.text + "\n" == note.split("\n\n")[0] + "\n\n"
    jwk = demo_jwk()
    assert jwk_thumbprint(jwk) == DEMO_KEY_THUMBPRINT
    public = demo_private_key().public_key()
    for trusted in (
        PEM,  # the .pem.pub file, as a path
        str(PEM),
        PEM.read_text(encoding="utf-8"),  # its text
        PEM.read_bytes(),
        public,  # a cryptography key
        [public],
        {"keys": [jwk]},  # a JWKS document
        [jwk],
    ):
        assert checkpoint.verify(trusted) == checkpoint
    # A pinned thumbprint, the public key from a key set (the server's, say).
    assert checkpoint.verify(
        DEMO_KEY_THUMBPRINT, keys=[from_json(SigningKey, {**jwk, "alg": "EdDSA", "use": "sig"})]
    )
    assert checkpoint.verify(DEMO_KEY_THUMBPRINT, keys={"keys": [jwk]}, origin=checkpoint.origin)
    for other in notes()[1:]:
        Checkpoint.parse(other).verify(PEM)


def test_a_checkpoint_is_refused_unless_a_pinned_key_signed_it() -> None:
    checkpoint = Checkpoint.parse(notes()[1])
    stranger = Ed25519PrivateKey.generate()
    with pytest.raises(LogVerificationError, match="no signature by a pinned key") as refused:
        checkpoint.verify(stranger.public_key())
    assert refused.value.check == "signature"
    resigned = Checkpoint.parse(sign(checkpoint.text, checkpoint.origin, stranger))
    assert resigned.verify(stranger.public_key())  # its own key says yes ...
    with pytest.raises(LogVerificationError) as refused:
        resigned.verify(PEM)  # ... the pinned one no
    assert refused.value.check == "signature"
    # The text changed under the publisher's signature: another size.
    changed = checkpoint.note.replace("\n126\n", "\n127\n", 1)
    with pytest.raises(LogVerificationError) as refused:
        Checkpoint.parse(changed).verify(PEM)
    assert refused.value.check == "signature"
    # The publisher's key, named otherwise than the origin: not a signature of this log.
    other_name = sign(checkpoint.text, "another.example/log", demo_private_key())
    with pytest.raises(LogVerificationError):
        Checkpoint.parse(other_name).verify(PEM)
    with pytest.raises(LogVerificationError) as refused:
        checkpoint.verify(PEM, origin="another.example/log")
    assert refused.value.check == "origin"


def test_pins_come_from_the_caller() -> None:
    checkpoint = Checkpoint.parse(notes()[0])
    with pytest.raises(UnknownSigningKey, match="no public key for the pinned thumbprints"):
        checkpoint.verify(DEMO_KEY_THUMBPRINT)  # a thumbprint, and no key to go with it
    with pytest.raises(TypeError, match="prove nothing"):  # key models (a server's) are not pins
        log_keys([from_json(SigningKey, {**demo_jwk(), "alg": "EdDSA", "use": "sig"})])  # type: ignore[arg-type]
    assert isinstance(log_keys(PEM)[0], Ed25519PublicKey)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda n: n.replace("\n\n", "\n", 1), "blank line"),
        (lambda n: n.rstrip("\n"), "blank line"),
        (lambda n: n.replace("\n126\n", "\n0126\n", 1), "tree size"),
        (lambda n: n.replace("\n126\n", "\n-1\n", 1), "tree size"),
        (lambda n: n.replace("\n3RVhck", "\n3RVh", 1), "root hash"),
        (lambda n: n.replace("=\ndataset", "\ndataset", 1), "root hash"),
        (lambda n: n.replace("\u2014 ", "-- ", 1), "signature line"),
        (lambda n: n.replace("\n126\n", "\n1\t26\n", 1), "control characters"),
        (lambda n: "\n".join(n.split("\n")[:1]) + "\n\n\u2014 x AAAA\n", "origin, a tree size and a root"),
    ],
)
def test_a_note_that_is_not_a_checkpoint_is_refused(change: Any, words: str) -> None:
    note = notes()[1]
    with pytest.raises(LogVerificationError, match=words) as refused:
        Checkpoint.parse(change(note))
    assert refused.value.check == "format"


# ---------------------------------------------------------------------------------------------
# The whole log, replayed


def as_records(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return json.loads(json.dumps(lines))  # type: ignore[no-any-return]  # a deep copy to change


def test_the_samples_log_replays() -> None:
    lines = log_lines()
    verified = verify_log(lines, PEM)
    assert (verified.entries, verified.tree_size) == (555, 555)
    assert verified.dataset_versions == ("2026-11-20", "2026-11-24", "2026-11-25", "2026-11-28")
    assert verify_log(lines, PEM, kept=notes()[0]).kept == Checkpoint.parse(notes()[0])
    read = read_publication_log(LOG)
    assert read.origin == "valuation-marks.example/publications" and len(read) == 555
    assert [c.tree_size for c in read.checkpoints] == [41, 126, 308, 555]
    assert read.entries[0].band_95.digest == read.entries[0].leaf.band_95_digest
    assert read.verify(str(PEM)).root_hash == Checkpoint.parse(notes()[-1]).root_hash


def first_entry(lines: list[dict[str, Any]], version: str) -> int:
    return next(i for i, line in enumerate(lines) if line.get("leaf", {}).get("dataset_version") == version)


@pytest.mark.parametrize("tamper", ["forged", "removed", "reordered", "band", "foreign", "unsigned", "fork"])
def test_a_tampered_log_is_refused(tamper: str) -> None:
    lines = as_records(log_lines())
    at = first_entry(lines, "2026-11-24") + 3
    kept = None
    expected = "checkpoint"
    if tamper == "forged":
        lines[at]["leaf"]["value_usd"] += 1
    elif tamper == "removed":
        del lines[at]
    elif tamper == "reordered":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif tamper == "band":
        lines[at]["band_95"]["upper_usd"] += 1
        expected = "band_95"
    elif tamper == "foreign":
        stranger = Ed25519PrivateKey.generate()
        for line in lines:
            if "checkpoint" in line:
                checkpoint = Checkpoint.parse(line["checkpoint"]["note"])
                line["checkpoint"]["note"] = sign(checkpoint.text, checkpoint.origin, stranger)
        expected = "signature"
    elif tamper == "unsigned":
        lines.append(lines[at])  # an entry after the last checkpoint, under none
    else:  # a kept checkpoint of another history, signed by the publisher's key
        checkpoint = Checkpoint.parse(notes()[1])
        forked = checkpoint.text.replace(checkpoint.root_hash, base64.b64encode(bytes(32)).decode())
        kept = sign(forked, checkpoint.origin, demo_private_key())
        expected = "consistency"
    with pytest.raises(LogVerificationError) as refused:
        verify_log(lines, PEM, kept=kept)
    assert refused.value.check == expected, refused.value
