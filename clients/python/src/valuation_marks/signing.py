"""Verifying signed resolution records offline.

A resolution record is signed with Ed25519 over the RFC 8785 (JCS) canonical JSON of the
record without its ``signature`` member; the signature and the public key (``x`` of the JWK)
are base64url without padding, and the record's ``key_id`` is the ``kid`` of the key in
``GET /v1/signing-keys`` (retired keys stay listed there, so older records still verify).

``canonical_json`` implements RFC 8785 for every JSON value (numbers formatted as ECMAScript
does, object members sorted by UTF-16 code units), not only for what today's records hold.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Optional, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .errors import SignatureError, UnknownSigningKey

if TYPE_CHECKING:
    from .models import SigningKey, SigningKeys

__all__ = ["KeysLike", "b64url_decode", "canonical_json", "public_key", "verify_record"]

#: What ``verify`` accepts as keys: the result of ``Client.signing_keys()``, a JWKS document
#: (``{"keys": [...]}``), a mapping of kid to JWK, or an iterable of JWKs / ``SigningKey``.
KeysLike = Union["SigningKeys", Mapping[str, Any], Iterable[Union["SigningKey", Mapping[str, Any]]]]

_SAFE_INTEGER = 2**53


def b64url_decode(text: str) -> bytes:
    """Decodes base64url with or without padding; raises ``SignatureError`` on bad input."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"not base64url: {text[:20]!r}") from exc


def _number(value: float) -> str:
    """A number as ECMAScript's Number.prototype.toString writes it (RFC 8785, 3.2.2.3)."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError("RFC 8785 has no representation for NaN or Infinity")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + _number(-value)
    # repr() gives the shortest digits that round-trip, as ECMAScript requires.
    _, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = k + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    e = n - 1
    return f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(value) if -_SAFE_INTEGER <= value <= _SAFE_INTEGER else _number(float(value)))
    elif isinstance(value, float):
        out.append(_number(value))
    elif isinstance(value, Mapping):
        out.append("{")
        for i, key in enumerate(sorted(value, key=lambda k: str(k).encode("utf-16-be"))):
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, not {type(key).__name__}")
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value."""
    out: list[str] = []
    _write(value, out)
    return "".join(out).encode("utf-8")


def _jwk_fields(key: Any) -> Optional[tuple[str, str, str, str]]:
    """(kid, kty, crv, x) of a JWK mapping or ``SigningKey``; None if it is neither."""
    if isinstance(key, Mapping):
        try:
            return (str(key["kid"]), str(key["kty"]), str(key["crv"]), str(key["x"]))
        except KeyError:
            return None
    kid, kty, crv, x = (getattr(key, name, None) for name in ("kid", "kty", "crv", "x"))
    if isinstance(kid, str) and isinstance(kty, str) and isinstance(crv, str) and isinstance(x, str):
        return (kid, kty, crv, x)
    return None


def _find_key(keys: KeysLike, kid: str) -> tuple[str, str, str, str]:
    candidates: Iterable[Any]
    if isinstance(keys, Mapping):
        if isinstance(keys.get("keys"), list):  # a JWKS document
            candidates = keys["keys"]
        else:  # kid -> JWK
            candidates = [keys[kid]] if kid in keys else []
    else:
        candidates = keys
    for candidate in candidates:
        fields = _jwk_fields(candidate)
        if fields is not None and fields[0] == kid:
            return fields
    raise UnknownSigningKey(f"no signing key with kid {kid!r} among the keys given")


def public_key(x: str) -> Ed25519PublicKey:
    """The Ed25519 public key of a JWK's ``x`` member."""
    raw = b64url_decode(x)
    if len(raw) != 32:
        raise SignatureError("an Ed25519 public key is 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


def verify_record(record: Mapping[str, Any], keys: KeysLike) -> bool:
    """Checks a signed record (as the API sent it) against signing keys.

    Returns True; raises ``UnknownSigningKey`` when ``key_id`` is not among ``keys`` and
    ``SignatureError`` when the signature does not cover exactly this record.
    """
    signature, key_id = record.get("signature"), record.get("key_id")
    if not isinstance(signature, str) or not isinstance(key_id, str):
        raise SignatureError("the record carries no signature and key_id")
    _, kty, crv, x = _find_key(keys, key_id)
    if (kty, crv) != ("OKP", "Ed25519"):
        raise SignatureError(f"key {key_id} is {kty}/{crv}, not an Ed25519 key")
    payload = canonical_json({k: v for k, v in record.items() if k != "signature"})
    try:
        public_key(x).verify(b64url_decode(signature), payload)
    except InvalidSignature:
        name = record.get("record_id", record.get("slug", "the record"))
        raise SignatureError(f"the signature of {name} does not verify with key {key_id}") from None
    return True
