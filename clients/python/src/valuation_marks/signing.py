"""Verifying signed resolution records offline, against keys the caller trusts.

A resolution record is signed with Ed25519 over the RFC 8785 (JCS) canonical JSON of the
record without its ``signature`` member; the signature and the public key (``x`` of the JWK)
are base64url without padding, and the record's ``key_id`` is the RFC 7638 thumbprint of the
public key (the ``kid`` the key has in ``GET /v1/signing-keys``; retired keys stay listed there,
so older records still verify).

Who signed is only proven by a key that did not come with the record: a server can publish
any key under any ``kid`` and sign what it likes with it. So verification takes the keys the
caller trusts (``TrustedKeys``: a JWKS file or document, or the thumbprints of trusted keys),
and always checks that ``key_id`` is the thumbprint that this module computes from the
verifying key's ``crv``, ``kty`` and ``x`` (never the ``kid`` a key set claims).
``verify_record_with_server_keys`` verifies against whatever keys were fetched, which proves
the record was not changed after signing (integrity), not who signed it (origin).

``canonical_json`` implements RFC 8785 for every JSON value (numbers formatted as ECMAScript
does, object members sorted by UTF-16 code units), not only for what today's records hold.
This module imports nothing of the package but its errors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional, Protocol, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .errors import SignatureError, UnknownSigningKey

__all__ = [
    "JwkLike",
    "KeysLike",
    "TrustedKeys",
    "TrustedLike",
    "b64url_decode",
    "canonical_json",
    "jwk_thumbprint",
    "load_jwks",
    "public_key",
    "verify_record",
    "verify_record_with_server_keys",
]


class JwkLike(Protocol):
    """A public key with the JWK members a thumbprint covers (``SigningKey`` is one)."""

    @property
    def kty(self) -> str: ...

    @property
    def crv(self) -> str: ...

    @property
    def x(self) -> str: ...


Jwk = Union[Mapping[str, Any], JwkLike]

#: Where public keys may come from: a JWKS document (``{"keys": [...]}``), a mapping of kid to
#: JWK, or an iterable of JWKs or ``SigningKey`` (``client.signing_keys()`` is one).
KeysLike = Union[Mapping[str, Any], Iterable[Jwk]]

#: The keys the caller trusts: a path to a JWKS file, a JWKS document (or a list of JWKs), or
#: one or more RFC 7638 thumbprints (43 characters of base64url).
TrustedLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Iterable[Union[str, Mapping[str, Any]]]]

_THUMBPRINT = re.compile(r"[A-Za-z0-9_-]{43}")
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


def _jwk_members(key: Any) -> Optional[tuple[str, str, str]]:
    """(kty, crv, x) of a JWK mapping or a key model; None if it is neither."""
    if isinstance(key, Mapping):
        kty, crv, x = key.get("kty"), key.get("crv"), key.get("x")
    else:
        kty, crv, x = (getattr(key, name, None) for name in ("kty", "crv", "x"))
    if isinstance(kty, str) and isinstance(crv, str) and isinstance(x, str):
        return (kty, crv, x)
    return None


def jwk_thumbprint(key: Jwk) -> str:
    """The RFC 7638 thumbprint (SHA-256, base64url without padding) of an OKP public key.

    Computed from ``crv``, ``kty`` and ``x`` alone; a ``kid`` the key carries plays no part.
    """
    members = _jwk_members(key)
    if members is None:
        raise SignatureError("not a public key: a JWK needs kty, crv and x")
    kty, crv, x = members
    if kty != "OKP":
        raise SignatureError(f"a {kty} key is not an Ed25519 (OKP) key")
    digest = hashlib.sha256(canonical_json({"crv": crv, "kty": kty, "x": x})).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _candidates(keys: Any) -> list[Any]:
    if isinstance(keys, Mapping):
        listed = keys.get("keys")
        if isinstance(listed, list):  # a JWKS document
            return list(listed)
        return list(keys.values())  # kid -> JWK
    if isinstance(keys, (str, bytes)):
        raise TypeError("keys: a JWKS document, a mapping of kid to JWK, or an iterable of keys")
    return list(keys)


def load_jwks(path: Union[str, os.PathLike[str]]) -> dict[str, Any]:
    """A JWKS document (``{"keys": [...]}``) read from a file, e.g. a copy of /v1/signing-keys."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} is not a JWKS document (JSON): {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError(f'{path} is not a JWKS document: it has no "keys" list')
    return document


def _is_thumbprint(value: str) -> bool:
    return _THUMBPRINT.fullmatch(value) is not None


class TrustedKeys:
    """The public keys a record may verify with, by RFC 7638 thumbprint.

    ``trusted`` is what the caller trusts, obtained apart from the server being checked:

    * a path to a JWKS file (``str`` or ``os.PathLike``), or a JWKS document (a dict with
      ``keys``, a mapping of kid to JWK, or a list of JWKs): those keys are trusted;
    * one thumbprint (a ``str`` of 43 base64url characters) or several (an iterable of
      them): only keys with those thumbprints are trusted. The public keys themselves may then
      come from ``keys`` (for instance ``client.signing_keys()``); a key there whose computed
      thumbprint is not pinned is ignored, whatever ``kid`` it claims.

    Key models fetched from a server (``SigningKeys``, ``SigningKey``) are refused as
    ``trusted``: pass them as ``keys``, with pinned thumbprints.
    """

    def __init__(self, trusted: TrustedLike, keys: Optional[KeysLike] = None) -> None:
        pinned: set[str] = set()
        available: list[Any] = []
        if isinstance(trusted, TrustedKeys):
            pinned, available = set(trusted.pinned), list(trusted._keys.values())
        elif isinstance(trusted, os.PathLike) or (isinstance(trusted, str) and not _is_thumbprint(trusted)):
            if isinstance(trusted, str) and not Path(trusted).is_file():
                raise ValueError(
                    f"trusted={trusted!r} is neither a key thumbprint (43 characters of base64url) "
                    "nor a JWKS file"
                )
            available = _candidates(load_jwks(trusted))
            pinned = {jwk_thumbprint(key) for key in available}
        elif isinstance(trusted, str):
            pinned = {trusted}
        elif isinstance(trusted, Mapping):
            available = _candidates(trusted)
            pinned = {jwk_thumbprint(key) for key in available}
        elif isinstance(trusted, Iterable):
            for item in trusted:
                if isinstance(item, str):
                    if not _is_thumbprint(item):
                        raise ValueError(f"{item!r} is not a key thumbprint (43 characters of base64url)")
                    pinned.add(item)
                elif isinstance(item, Mapping):
                    available.append(item)
                    pinned.add(jwk_thumbprint(item))
                else:
                    raise TypeError(_REFUSED.format(what=type(item).__name__))
        else:
            raise TypeError(_REFUSED.format(what=type(trusted).__name__))
        if not pinned:
            raise ValueError("no trusted keys: give a JWKS file or document, or key thumbprints")
        if keys is not None:
            available.extend(_candidates(keys))
        self.pinned: frozenset[str] = frozenset(pinned)
        self._keys: dict[str, Any] = {}
        self._claimed: dict[str, str] = {}  # kid -> the thumbprint of a key claiming it, if different
        for key in available:
            members = _jwk_members(key)
            if members is None or members[0] != "OKP":
                continue
            thumbprint = jwk_thumbprint(key)
            kid = key.get("kid") if isinstance(key, Mapping) else getattr(key, "kid", None)
            if isinstance(kid, str) and kid != thumbprint:
                self._claimed[kid] = thumbprint
            if thumbprint in self.pinned:
                self._keys.setdefault(thumbprint, key)

    @classmethod
    def from_server_keys(cls, keys: KeysLike) -> TrustedKeys:
        """Every key of ``keys`` (as fetched from a server) trusted: integrity, not origin."""
        found: list[Mapping[str, Any]] = []
        for key in _candidates(keys):
            members = _jwk_members(key)
            if members is not None and members[0] == "OKP":
                kid = key.get("kid") if isinstance(key, Mapping) else getattr(key, "kid", None)
                found.append({"kty": members[0], "crv": members[1], "x": members[2], "kid": kid})
        if not found:
            raise UnknownSigningKey("the server published no Ed25519 key")
        return cls(found)

    def __contains__(self, thumbprint: object) -> bool:
        return thumbprint in self.pinned

    def __repr__(self) -> str:
        return f"TrustedKeys({sorted(self.pinned)!r}, with public keys for {sorted(self._keys)!r})"

    def public_keys(self) -> list[Jwk]:
        """The trusted keys whose public key is at hand (one per pinned thumbprint at most)."""
        return list(self._keys.values())

    def key_for(self, key_id: str) -> Jwk:
        """The trusted key whose thumbprint is ``key_id``; ``UnknownSigningKey`` if there is none."""
        key = self._keys.get(key_id)
        if key is not None:
            return key  # type: ignore[no-any-return]
        if key_id not in self.pinned:
            raise UnknownSigningKey(f"the record's key_id {key_id!r} is not the thumbprint of a trusted key")
        if key_id in self._claimed:
            raise UnknownSigningKey(
                f"a key published as kid {key_id!r} has the thumbprint {self._claimed[key_id]!r}: "
                "it is not the trusted key (a forged key set)"
            )
        raise UnknownSigningKey(
            f"no public key with the trusted thumbprint {key_id!r} among the keys given "
            "(pass keys=..., e.g. client.signing_keys())"
        )


_REFUSED = (
    "trusted keys are a JWKS file or document, or key thumbprints; got {what}. Keys fetched from "
    "the server being checked prove nothing about who signed: pass them as keys= beside pinned "
    "thumbprints, or call verify_with_server_keys(...) for an integrity check only"
)


def public_key(x: str) -> Ed25519PublicKey:
    """The Ed25519 public key of a JWK's ``x`` member."""
    raw = b64url_decode(x)
    if len(raw) != 32:
        raise SignatureError("an Ed25519 public key is 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


def _verify(record: Mapping[str, Any], trusted: TrustedKeys) -> bool:
    signature, key_id = record.get("signature"), record.get("key_id")
    if not isinstance(signature, str) or not isinstance(key_id, str):
        raise SignatureError("the record carries no signature and key_id")
    key = trusted.key_for(key_id)
    kty, crv, x = _jwk_members(key) or ("", "", "")
    if (kty, crv) != ("OKP", "Ed25519"):
        raise SignatureError(f"key {key_id} is {kty}/{crv}, not an Ed25519 key")
    if jwk_thumbprint(key) != key_id:  # key_for chose it by thumbprint; checked again, as the rule
        raise UnknownSigningKey(f"the record's key_id {key_id!r} is not the thumbprint of its key")
    try:
        payload = canonical_json({k: v for k, v in record.items() if k != "signature"})
    except RecursionError:
        raise SignatureError("the record is nested too deeply to canonicalise") from None
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"the record is not canonical JSON: {exc}") from exc
    try:
        public_key(x).verify(b64url_decode(signature), payload)
    except InvalidSignature:
        name = record.get("record_id", record.get("slug", "the record"))
        raise SignatureError(f"the signature of {name} does not verify with key {key_id}") from None
    return True


def verify_record(
    record: Mapping[str, Any], trusted: Union[TrustedLike, TrustedKeys], *, keys: Optional[KeysLike] = None
) -> bool:
    """Checks a signed record (as the API sent it) against keys the caller trusts.

    ``trusted`` and ``keys`` are as ``TrustedKeys`` takes them. Returns True; raises
    ``UnknownSigningKey`` when ``key_id`` is not the RFC 7638 thumbprint of a trusted key
    (whatever ``kid`` a published key claims) and ``SignatureError`` when the signature does
    not cover exactly this record.
    """
    return _verify(record, trusted if isinstance(trusted, TrustedKeys) else TrustedKeys(trusted, keys))


def verify_record_with_server_keys(record: Mapping[str, Any], keys: KeysLike) -> bool:
    """Checks a record against the keys a server published, trusting all of them.

    This proves integrity, not origin: the record was not changed since it was signed by one
    of those keys, and its ``key_id`` is that key's thumbprint. A server that publishes its own
    key can sign anything this accepts; to know *who* signed, use ``verify_record`` with keys
    (or thumbprints) obtained apart from that server.
    """
    return _verify(record, TrustedKeys.from_server_keys(keys))
