#!/usr/bin/env python3
"""Verifies the signature test vector offline, with nothing but `cryptography`.

The vector holds a signed resolution record, the exact canonical bytes its signature covers,
the Ed25519 public key (as a JWK) and the signature. A verifier in any language should
reproduce `canonical_utf8` from `record` and accept the signature; a changed record must fail.
The few lines below are that verifier in Python; the SDK (`valuation_marks.verify_record`,
`Resolution.verify`) does the same with RFC 8785 in full.

Usage: python verify_test_vector.py test_vector.json
"""

import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def canonical_json(value):
    """RFC 8785 (JCS) for what resolution records hold: objects, strings and integers.

    For such values JCS is sorted keys, no whitespace and UTF-8; records carry no floats, so
    no number needs ECMAScript formatting.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def verify_record(record, keys_by_kid):
    """Raises InvalidSignature unless the record is signed by the key it names."""
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    jwk = keys_by_kid[record["key_id"]]
    if (jwk["kty"], jwk["crv"]) != ("OKP", "Ed25519"):
        raise InvalidSignature("not an Ed25519 key")
    public_key = Ed25519PublicKey.from_public_bytes(b64url_decode(jwk["x"]))
    public_key.verify(b64url_decode(record["signature"]), canonical_json(unsigned))


def main(path):
    with open(path, encoding="utf-8") as fh:
        vector = json.load(fh)
    record = vector["record"]
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    assert canonical_json(unsigned) == vector["canonical_utf8"].encode("utf-8"), "canonical bytes differ"
    assert record["signature"] == vector["signature"]
    keys = {vector["jwk"]["kid"]: vector["jwk"]}
    verify_record(record, keys)
    try:
        verify_record(dict(record, value_usd=record["value_usd"] + 1), keys)
    except InvalidSignature:
        pass
    else:
        sys.exit("FAILED: a changed record verified")
    print(f"ok: test vector {path} verifies, and a changed record does not")


if __name__ == "__main__":
    main(sys.argv[1])
