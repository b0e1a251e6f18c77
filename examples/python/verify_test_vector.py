#!/usr/bin/env python3
"""Verifies the signature test vector offline, with nothing but `cryptography`.

The vector holds a signed resolution record, the exact canonical bytes its signature covers,
the Ed25519 public key (as a JWK) and the signature. A verifier in any language should
reproduce `canonical_utf8` from `record` and accept the signature; a changed record must fail.

Usage: python verify_test_vector.py test_vector.json
"""
import json
import sys

from cryptography.exceptions import InvalidSignature

from client import canonical_json, verify_record


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
