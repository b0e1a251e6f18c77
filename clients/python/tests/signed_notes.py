"""Signing C2SP notes for the tests: with the demo key (a checkpoint the publisher could sign)
or with any other Ed25519 key (one it did not)."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from valuation_marks.transparency import key_hash, log_keys

from .conftest import find_sample

SAMPLE = find_sample()
#: The demo public key, as a user pins it: the PEM file published beside the sample.
DEMO_PEM = SAMPLE / "demo-signing-key.pem.pub"


def demo_private_key() -> Ed25519PrivateKey:
    """The demo signing key. The file is PKCS#8 v2 (the public key after the private one), which
    ``cryptography`` does not read: its 32-byte seed follows the OCTET STRING header 04 20."""
    pem = (SAMPLE / "demo-signing-key.pem").read_text(encoding="utf-8")
    der = base64.b64decode("".join(line for line in pem.splitlines() if "-----" not in line))
    start = der.index(b"\x04\x22\x04\x20") + 4
    key = Ed25519PrivateKey.from_private_bytes(der[start : start + 32])
    assert key.public_key() == log_keys(DEMO_PEM)[0], "the seed read is not the demo key's"
    return key


def sign(text: str, name: str, key: Ed25519PrivateKey) -> str:
    """``text`` as a C2SP signed note with one signature line, by ``key`` named ``name``."""
    signed = key_hash(name, key.public_key()) + key.sign(text.encode("utf-8"))
    return f"{text}\n\u2014 {name} {base64.b64encode(signed).decode('ascii')}\n"
