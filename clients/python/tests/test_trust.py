"""A forged record does not verify: trust comes from pinned keys, not from the server.

``FakeSigner`` is a small HTTP server on 127.0.0.1:0 that impersonates the real one: it
publishes the real key id (the demo key's thumbprint) with a key of its own, and serves the
real Stripe record with ``value_usd`` 1, signed by that key under the real ``key_id``. Before
the trust rules, ``record.verify(client.signing_keys())`` accepted it.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from valuation_marks import (
    AsyncClient,
    Client,
    SignatureError,
    UnknownSigningKey,
    canonical_json,
    jwk_thumbprint,
    verify_record,
)

from .conftest import DEMO_KEY_THUMBPRINT, REPO_DIR, Server


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class FakeSigner:
    """Serves ``/v1/signing-keys`` and ``/v1/companies/stripe/resolution`` of its own making."""

    def __init__(self, genuine: dict[str, Any], *, kid: Optional[str]) -> None:
        key = Ed25519PrivateKey.generate()
        x = b64url(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        own_thumbprint = jwk_thumbprint({"kty": "OKP", "crv": "Ed25519", "x": x})
        self.kid = kid or own_thumbprint  # the real key id, or honestly its own
        self.jwks = {
            "keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid, "alg": "EdDSA", "use": "sig"}]
        }
        record = {k: v for k, v in genuine.items() if k != "signature"}
        record.update(value_usd=1, key_id=self.kid)
        record["signature"] = b64url(key.sign(canonical_json(record)))
        self.record = record
        routes = {"/v1/signing-keys": self.jwks, "/v1/companies/stripe/resolution": record}

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps(routes.get(self.path, {"status": 404, "code": "not_found"})).encode()
                self.send_response(200 if self.path in routes else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def genuine(server: Server) -> dict[str, Any]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        return dict(client.resolution("stripe").raw)


@pytest.fixture
def impostor(genuine: dict[str, Any]) -> Iterator[FakeSigner]:
    fake = FakeSigner(genuine, kid=DEMO_KEY_THUMBPRINT)
    yield fake
    fake.close()


@pytest.fixture
def real_jwks(server: Server, tmp_path: Path) -> Path:
    """The real server's JWKS, saved to a file: keys obtained once and kept."""
    path = tmp_path / "signing-keys.json"
    with Client(base_url=server.base_url) as client:
        path.write_text(json.dumps(client.signing_keys().raw), encoding="utf-8")
    return path


def test_the_demo_thumbprint_is_the_sample_keys(server: Server) -> None:
    with Client(base_url=server.base_url) as client:
        (key,) = client.signing_keys()
    assert jwk_thumbprint(key) == key.kid == DEMO_KEY_THUMBPRINT
    public = (REPO_DIR / "sample" / "demo-signing-key.pem.pub").read_text(encoding="utf-8")
    der = base64.b64decode("".join(line for line in public.splitlines() if "-----" not in line))
    assert b64url(der[-32:]) == key.x  # the raw key closes the SubjectPublicKeyInfo


def test_a_real_record_verifies_against_the_pin_and_the_file(server: Server, real_jwks: Path) -> None:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        record = client.resolution("stripe")
        keys = client.signing_keys()
    assert record.verify(DEMO_KEY_THUMBPRINT, keys=keys)
    assert record.verify([DEMO_KEY_THUMBPRINT, "A" * 43], keys=keys.raw)  # one of several pins
    assert record.verify(trusted=real_jwks)
    assert record.verify(trusted=str(real_jwks))
    assert record.verify(trusted=json.loads(real_jwks.read_text(encoding="utf-8")))
    assert record.verify_with_server_keys(keys)


def test_a_forged_record_does_not_verify(impostor: FakeSigner, real_jwks: Path) -> None:
    with Client(base_url=impostor.base_url, api_key="vmk_any") as client:
        forged = client.resolution("stripe")
        published = client.signing_keys()
    assert forged.value_usd == 1 and forged.key_id == DEMO_KEY_THUMBPRINT
    assert DEMO_KEY_THUMBPRINT in published  # the real key id, with another key behind it
    with pytest.raises(UnknownSigningKey, match="forged key set"):
        forged.verify(DEMO_KEY_THUMBPRINT, keys=published)
    with pytest.raises(SignatureError, match="does not verify"):  # the real key: not its signature
        forged.verify(trusted=real_jwks)
    with pytest.raises(SignatureError, match="does not verify"):
        forged.verify(trusted=real_jwks, keys=published)  # extra keys add no trust
    with pytest.raises(UnknownSigningKey):  # key_id is not the thumbprint of the key published
        forged.verify_with_server_keys(published)
    with pytest.raises(TypeError, match="prove nothing"):
        forged.verify(published)  # type: ignore[arg-type]
    with pytest.raises(SignatureError):
        verify_record(forged.raw, DEMO_KEY_THUMBPRINT, keys=impostor.jwks)


def test_an_honest_impostor_passes_integrity_and_fails_origin(genuine: dict[str, Any]) -> None:
    """A server that signs with its own key under its own thumbprint: intact, but not ours."""
    fake = FakeSigner(genuine, kid=None)
    try:
        with Client(base_url=fake.base_url, api_key="vmk_any") as client:
            record, published = client.resolution("stripe"), client.signing_keys()
    finally:
        fake.close()
    assert record.verify_with_server_keys(published)  # integrity: yes
    with pytest.raises(UnknownSigningKey, match="not the thumbprint of a trusted key"):
        record.verify(DEMO_KEY_THUMBPRINT, keys=published)  # origin: no


@pytest.mark.anyio
async def test_a_forged_record_does_not_verify_async(impostor: FakeSigner, real_jwks: Path) -> None:
    async with AsyncClient(base_url=impostor.base_url, api_key="vmk_any") as client:
        forged = await client.resolution("stripe")
        published = await client.signing_keys()
    with pytest.raises(UnknownSigningKey):
        forged.verify(DEMO_KEY_THUMBPRINT, keys=published)
    with pytest.raises(SignatureError):
        forged.verify(trusted=real_jwks)
