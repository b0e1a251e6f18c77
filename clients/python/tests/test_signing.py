"""Signature verification offline: the published test vector and RFC 8785 canonical JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature

from valuation_marks import (
    Resolution,
    SignatureError,
    SigningKey,
    TrustedKeys,
    UnknownSigningKey,
    canonical_json,
    jwk_thumbprint,
    verify_record,
    verify_record_with_server_keys,
)
from valuation_marks.models import from_json

VECTOR = json.loads((Path(__file__).parent / "data" / "test_vector.json").read_text(encoding="utf-8"))


def test_the_test_vector_canonicalises_and_verifies() -> None:
    record: dict[str, Any] = VECTOR["record"]
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    assert canonical_json(unsigned) == VECTOR["canonical_utf8"].encode("utf-8")
    jwk = VECTOR["jwk"]
    assert jwk_thumbprint(jwk) == jwk["kid"] == record["key_id"]  # RFC 7638, from crv, kty and x
    assert jwk_thumbprint(from_json(SigningKey, jwk)) == jwk["kid"]
    assert verify_record(record, {jwk["kid"]: jwk})  # kid -> JWK, trusted
    assert verify_record(record, {"keys": [jwk]})  # a JWKS document, trusted
    assert verify_record(record, jwk["kid"], keys=[from_json(SigningKey, jwk)])  # a pinned thumbprint
    assert verify_record(record, TrustedKeys([jwk["kid"]], keys={"keys": [jwk]}))
    assert verify_record_with_server_keys(record, [from_json(SigningKey, jwk)])
    resolution = from_json(Resolution, record)
    assert resolution.verify([jwk]) and resolution.record_id == "acme/2025-06-30/v0.2.0"


def test_trusted_keys_from_a_jwks_file(tmp_path: Path) -> None:
    jwks = tmp_path / "signing-keys.json"
    jwks.write_text(json.dumps({"keys": [VECTOR["jwk"]]}), encoding="utf-8")
    assert verify_record(VECTOR["record"], jwks)
    assert verify_record(VECTOR["record"], str(jwks))
    assert from_json(Resolution, VECTOR["record"]).verify(trusted=jwks)
    with pytest.raises(ValueError, match="neither a key thumbprint"):
        verify_record(VECTOR["record"], str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="not a key thumbprint"):
        verify_record(VECTOR["record"], ["short"])
    with pytest.raises(TypeError, match="prove nothing"):  # key models (from a server) are not trust
        verify_record(VECTOR["record"], [from_json(SigningKey, VECTOR["jwk"])])  # type: ignore[list-item]


def test_a_key_published_under_the_trusted_kid_is_not_trusted() -> None:
    """A key set may claim any kid; the thumbprint computed from the key is what counts."""
    other = {**VECTOR["jwk"], "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
    with pytest.raises(UnknownSigningKey, match="forged"):
        verify_record(VECTOR["record"], VECTOR["jwk"]["kid"], keys=[other])
    with pytest.raises(UnknownSigningKey):
        verify_record_with_server_keys(VECTOR["record"], [other])
    with pytest.raises(UnknownSigningKey):
        verify_record(VECTOR["record"], {"keys": [other]})


@pytest.mark.parametrize(
    "change",
    [
        {"value_usd": VECTOR["record"]["value_usd"] + 1},
        {"band_80": {"lower": 1, "upper": 2}},
        {"added_field": "x"},  # fields the signer did not sign are caught too
        {"signature": VECTOR["record"]["signature"][:-2] + "AA"},
    ],
)
def test_a_changed_record_does_not_verify(change: dict[str, Any]) -> None:
    forged = {**VECTOR["record"], **change}
    with pytest.raises(SignatureError) as failed:
        verify_record(forged, [VECTOR["jwk"]])
    assert isinstance(failed.value, InvalidSignature)  # what code written for `cryptography` catches


def test_unknown_and_unusable_keys() -> None:
    with pytest.raises(ValueError, match="no trusted keys"):
        verify_record(VECTOR["record"], [])
    with pytest.raises(UnknownSigningKey):
        verify_record({**VECTOR["record"], "key_id": "someone-else"}, [VECTOR["jwk"]])
    with pytest.raises(SignatureError):
        verify_record(VECTOR["record"], [{**VECTOR["jwk"], "kty": "RSA"}])
    with pytest.raises(SignatureError):  # the kid alone does not make a key
        verify_record(VECTOR["record"], VECTOR["jwk"]["kid"], keys=[{**VECTOR["jwk"], "crv": "X25519"}])
    with pytest.raises(SignatureError):
        verify_record({k: v for k, v in VECTOR["record"].items() if k != "signature"}, [VECTOR["jwk"]])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # RFC 8785 appendix B: numbers as ECMAScript writes them
        (0.0, "0"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740992, "9007199254740992"),
        (9007199254740993, "9007199254740992"),  # beyond 2**53 numbers are doubles
        (295147905179352830000.0, "295147905179352830000"),
        (1e21, "1e+21"),
        (333333333.3333333, "333333333.3333333"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (-1.5, "-1.5"),
        (100, "100"),
        # strings: only what JSON must escape, lower-case \u00XX, no escaping of non-ASCII
        ("\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/", '"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"'),
        ([None, True, False, []], "[null,true,false,[]]"),
        # members sorted by UTF-16 code units (U+1F600 is D83D DE00, before U+FB01)
        (
            {"\ufb01": 1, "\U0001f600": 2, "a": {"b": 1, "B": 2}, "": 0},
            '{"":0,"a":{"B":2,"b":1},"😀":2,"ﬁ":1}',
        ),
    ],
)
def test_canonical_json(value: Any, expected: str) -> None:
    assert canonical_json(value) == expected.encode("utf-8")


def test_canonical_json_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError, match="NaN"):
        canonical_json(float("nan"))
    with pytest.raises(TypeError):
        canonical_json({1: "one"})
    with pytest.raises(TypeError):
        canonical_json({"when": object()})
