"""Verifying the publication log: RFC 6962 Merkle proofs and C2SP signed checkpoints.

Every build of the dataset appends each company's published mark to an append-only log, a
Merkle tree as RFC 6962 (and RFC 9162, section 2.1) defines it, and signs a checkpoint of it:
the log's origin, its size and its root hash, as a C2SP signed note. This module checks what
the API says about that log without trusting the server that says it:

* ``leaf_hash``, ``verify_inclusion`` and ``verify_consistency`` are the RFC 9162 algorithms
  (sections 2.1.3.2 and 2.1.4.2), checked against the transparency-dev test vectors;
* ``Checkpoint.parse`` reads a signed note and ``Checkpoint.verify`` checks its signature with
  keys the caller pinned (``log_keys``: a PEM public key, a JWKS file or document, or RFC 7638
  thumbprints with the public keys from ``keys=``), never with a key the note or the server
  names;
* ``verify_published`` checks a company's published history (``GET
  /v1/companies/{slug}/published``, as decoded JSON) against today's signed checkpoint and,
  given a checkpoint kept from before and the consistency proof from it, that today's log
  extends the one you saw; ``verify_history`` does the same from a ``Client`` and a slug;
* ``verify_log`` replays a whole log file (``GET /v1/export/log``), checkpoint by checkpoint.

Any failure raises ``LogVerificationError``, whose ``check`` names what failed. Hashes and roots
are the raw 32 bytes here; the API sends them in base64 (standard alphabet, with padding). This
module imports nothing of the package but its errors and ``signing``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import inspect
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

from .errors import LogVerificationError, SignatureError, UnknownSigningKey
from .signing import KeysLike, TrustedKeys, TrustedLike, canonical_json, public_key

__all__ = [
    "Checkpoint",
    "HistoryVerification",
    "LogVerification",
    "PinnedLike",
    "band_95_digest",
    "hash_children",
    "key_hash",
    "leaf_hash",
    "log_keys",
    "root_from_inclusion_proof",
    "verify_consistency",
    "verify_history",
    "verify_inclusion",
    "verify_log",
    "verify_published",
]

HASH_SIZE = 32

#: The keys a checkpoint may verify with, as the caller pinned them: an Ed25519 public key
#: (``cryptography``'s), a PEM public key (its text or bytes, or the path of a ``.pem`` file),
#: or what ``TrustedKeys`` takes (a JWKS file or document, RFC 7638 thumbprints), or a list of
#: public keys.
PinnedLike = Union[Ed25519PublicKey, bytes, TrustedLike, TrustedKeys, Sequence[Ed25519PublicKey]]


# ---------------------------------------------------------------------------------------------
# RFC 6962 hashes and the RFC 9162 proofs


def leaf_hash(leaf: bytes) -> bytes:
    """RFC 6962's hash of a leaf: SHA-256(0x00 || leaf)."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def hash_children(left: bytes, right: bytes) -> bytes:
    """RFC 6962's hash of an inner node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes) and len(value) == HASH_SIZE


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root an inclusion proof leads to from the leaf hash ``leaf`` at ``index`` in a tree
    of ``size`` leaves (RFC 9162, section 2.1.3.2, steps 1 to 4); ``ValueError`` when the proof
    cannot be one for that position (an index past the tree, a proof too long or too short, a
    hash that is not 32 bytes)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of {size} leaves")
    if not _is_hash(leaf) or not all(_is_hash(p) for p in proof):
        raise ValueError("every hash of a proof is 32 bytes")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ValueError("the proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            r = hash_children(p, r)
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = hash_children(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ValueError("the proof is shorter than the path to the root")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> bool:
    """True if ``proof`` shows the leaf hash ``leaf`` at ``index`` of the tree of ``size``
    leaves whose root hash is ``root`` (RFC 9162, section 2.1.3.2); False otherwise."""
    try:
        return _is_hash(root) and root_from_inclusion_proof(index, size, leaf, proof) == root
    except ValueError:
        return False


def verify_consistency(
    first_size: int, second_size: int, proof: Sequence[bytes], first_root: bytes, second_root: bytes
) -> bool:
    """True if ``proof`` shows the tree of ``first_size`` leaves (root ``first_root``) to be a
    prefix of the tree of ``second_size`` leaves (root ``second_root``): RFC 9162, section
    2.1.4.2. Equal sizes need an empty proof and equal roots; a proof from the empty tree proves
    nothing and is refused, as is a second tree smaller than the first."""
    if not 0 < first_size <= second_size:
        return False
    if first_size == second_size:
        return not proof and first_root == second_root
    if not proof or not all(_is_hash(p) for p in [*proof, first_root, second_root]):
        return False
    path = list(proof)
    if first_size & (first_size - 1) == 0:  # an exact power of 2: the first root is a node
        path.insert(0, first_root)
    fn, sn = first_size - 1, second_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = hash_children(c, fr), hash_children(c, sr)
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = hash_children(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first_root and sr == second_root


def _root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The RFC 6962 root of a whole tree from its leaf hashes (of none: SHA-256 of nothing)."""
    if not leaf_hashes:
        return hashlib.sha256(b"").digest()
    # Perfect subtrees, left to right, each (size, hash): the compact range of the leaves.
    stack: list[tuple[int, bytes]] = []
    for hashed in leaf_hashes:
        size, node = 1, hashed
        while stack and stack[-1][0] == size:
            left_size, left = stack.pop()
            size, node = left_size + size, hash_children(left, node)
        stack.append((size, node))
    node = stack[-1][1]
    for _, left in reversed(stack[:-1]):
        node = hash_children(left, node)
    return node


# ---------------------------------------------------------------------------------------------
# Pinned keys and signed notes


def _pem_key(pem: bytes, what: str) -> Ed25519PublicKey:
    try:
        key = load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"{what} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureError(f"{what} is a {type(key).__name__}, not an Ed25519 public key")
    return key


def _pem_file(value: object) -> Optional[bytes]:
    """The bytes of a PEM file ``value`` names, if it names one."""
    if not isinstance(value, (str, os.PathLike)):
        return None
    if isinstance(value, str) and ("\n" in value or len(value) > 4096):
        return None
    path = Path(value)
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return data if data.lstrip().startswith(b"-----BEGIN") else None


def log_keys(trusted: PinnedLike, keys: Optional[KeysLike] = None) -> tuple[Ed25519PublicKey, ...]:
    """The public keys a checkpoint may be signed with, from what the caller pinned.

    ``trusted`` is an ``Ed25519PublicKey`` (or a list of them), a PEM public key (text, bytes,
    or the path of its file, e.g. ``demo-signing-key.pem.pub``), or what ``TrustedKeys`` takes:
    a JWKS file or document (its keys are trusted), or RFC 7638 thumbprints, whose public keys
    come from ``keys`` (``client.signing_keys()``): a key there is used only if the thumbprint
    the SDK computes from it is pinned, whatever ``kid`` it claims. ``UnknownSigningKey`` when
    no public key of a pinned thumbprint is at hand.
    """
    if isinstance(trusted, Ed25519PublicKey):
        return (trusted,)
    if (
        isinstance(trusted, (list, tuple))
        and trusted
        and all(isinstance(k, Ed25519PublicKey) for k in trusted)
    ):
        return tuple(trusted)
    if isinstance(trusted, bytes):
        return (_pem_key(trusted, "the pinned key"),)
    if isinstance(trusted, str) and trusted.lstrip().startswith("-----BEGIN"):
        return (_pem_key(trusted.encode("ascii", "replace"), "the pinned key"),)
    pem = _pem_file(trusted)
    if pem is not None:
        return (_pem_key(pem, str(trusted)),)
    pinned = trusted if isinstance(trusted, TrustedKeys) else TrustedKeys(trusted, keys)  # type: ignore[arg-type]
    found = tuple(
        public_key(_member(key, "x"))
        for key in pinned.public_keys()
        if _member(key, "crv") == "Ed25519"  # a pinned X25519 key signs nothing
    )
    if not found:
        raise UnknownSigningKey(
            f"no public key for the pinned thumbprints {sorted(pinned.pinned)} "
            "(pass keys=..., e.g. client.signing_keys(), or a PEM or JWKS of the key)"
        )
    return found


def _member(key: Any, name: str) -> Any:
    return key.get(name) if isinstance(key, Mapping) else getattr(key, name, None)


def _raw_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_hash(name: str, key: Ed25519PublicKey) -> bytes:
    """The C2SP signed-note key hash of an Ed25519 key named ``name``: the first four bytes of
    SHA-256(name || "\\n" || 0x01 || public key)."""
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + _raw_key(key)).digest()[:4]


_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")
_SIGNATURE_LINE = re.compile(r"\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})")


def _b64(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise LogVerificationError("format", f"{what} is not a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise LogVerificationError("format", f"{what} is not base64: {text[:24]!r}") from None


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A C2SP ``tlog-checkpoint``: a log's origin, size and root hash, with the signature lines
    of the signed note it came in.

    ``note`` is the whole signed note, as sent (keep it: it is what ``kept=`` takes later);
    ``extensions`` the lines after the root (``dataset_version`` is the value of the
    ``dataset_version`` line, the dataset version the checkpoint ends). ``parse`` reads a note
    without checking its signature; ``verify`` checks it against pinned keys.
    """

    origin: str
    tree_size: int
    root: bytes
    extensions: tuple[str, ...]
    signatures: tuple[tuple[str, bytes], ...]  # (key name, key hash || signature) per line
    note: str

    def __repr__(self) -> str:
        return (
            f"Checkpoint(origin={self.origin!r}, tree_size={self.tree_size}, root_hash={self.root_hash!r}, "
            f"dataset_version={self.dataset_version!r})"
        )

    @property
    def dataset_version(self) -> Optional[str]:
        return next((line[16:] for line in self.extensions if line.startswith("dataset_version ")), None)

    @property
    def root_hash(self) -> str:
        """The root hash in base64, as the API writes it."""
        return base64.b64encode(self.root).decode("ascii")

    @property
    def text(self) -> str:
        """The signed text: the note up to and including the newline before the blank line."""
        return self.note.split("\n\n", 1)[0] + "\n"

    @classmethod
    def parse(cls, note: Union[str, Checkpoint, None]) -> Checkpoint:
        """The checkpoint a signed note states (``LogVerificationError`` with ``check ==
        "format"`` if it is not one); its signature is not checked."""
        if isinstance(note, Checkpoint):
            return note
        if not isinstance(note, str):
            raise LogVerificationError(
                "format", f"a checkpoint is a signed note (text), not {type(note).__name__}"
            )
        text, blank, signed = note.partition("\n\n")
        if not blank or not note.endswith("\n"):
            raise LogVerificationError(
                "format", "not a signed note: text, a blank line, then signature lines"
            )
        if any(ord(c) < 0x20 and c != "\n" for c in note):
            raise LogVerificationError("format", "a signed note has no control characters but newlines")
        lines = text.split("\n")
        if len(lines) < 3:
            raise LogVerificationError("format", "a checkpoint has an origin, a tree size and a root hash")
        origin, size, root = lines[:3]
        if not origin:
            raise LogVerificationError("format", "the checkpoint's origin line is empty")
        if not _SIZE.fullmatch(size) or int(size) >= 2**64:
            raise LogVerificationError("format", f"tree size {size!r} is not a decimal number")
        root_bytes = _b64(root, "the checkpoint's root hash")
        if len(root_bytes) != HASH_SIZE:
            raise LogVerificationError("format", "the checkpoint's root hash is not 32 bytes")
        signatures = []
        for line in signed[:-1].split("\n"):
            found = _SIGNATURE_LINE.fullmatch(line)
            if found is None:
                raise LogVerificationError("format", f"not a signature line: {line[:40]!r}")
            signatures.append((found.group(1), _b64(found.group(2), "a signature")))
        return cls(origin, int(size), root_bytes, tuple(lines[3:]), tuple(signatures), note)

    def verify(
        self, trusted: PinnedLike, *, keys: Optional[KeysLike] = None, origin: Optional[str] = None
    ) -> Checkpoint:
        """Checks that a pinned key signed this checkpoint under its origin (and that the origin
        is ``origin``, when given); returns the checkpoint.

        A signature counts when its line names the key after the checkpoint's origin, its key
        hash is that of a pinned key under that name, and the Ed25519 signature over ``text``
        verifies with it. Raises ``LogVerificationError`` (``check`` ``"origin"`` or
        ``"signature"``) otherwise.
        """
        return _verify_note(self, log_keys(trusted, keys), origin)


def _verify_note(
    checkpoint: Checkpoint, pinned: Sequence[Ed25519PublicKey], origin: Optional[str]
) -> Checkpoint:
    if origin is not None and checkpoint.origin != origin:
        raise LogVerificationError(
            "origin", f"the checkpoint is of the log {checkpoint.origin!r}, not {origin!r}"
        )
    message = checkpoint.text.encode("utf-8")
    for name, signed in checkpoint.signatures:
        if name != checkpoint.origin or len(signed) != 68:
            continue
        for key in pinned:
            if key_hash(name, key) != signed[:4]:
                continue
            try:
                key.verify(signed[4:], message)
            except InvalidSignature:
                continue
            return checkpoint
    raise LogVerificationError(
        "signature",
        f"the checkpoint of {checkpoint.tree_size} entries ({checkpoint.dataset_version}) carries no "
        f"signature by a pinned key under the origin {checkpoint.origin!r}",
    )


def band_95_digest(band: Mapping[str, Any]) -> str:
    """What an entry commits to of its 95% band: base64url (no padding) of SHA-256 over the
    RFC 8785 canonical JSON of ``{"lower_usd": .., "salt": .., "upper_usd": ..}``, as sent."""
    digest = hashlib.sha256(canonical_json(band)).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


# ---------------------------------------------------------------------------------------------
# A company's published history


@dataclasses.dataclass(frozen=True)
class HistoryVerification:
    """What ``verify_history`` checked, all of it against ``checkpoint`` (signed by a pinned key).

    ``entries`` is the number of the company's entries checked (leaf hash, inclusion proof and
    place in the log), ``dataset_versions`` the versions they belong to, ``bands_checked`` how
    many 95% bands were checked against their digests (0 below Pro, which reads none),
    ``published_versions`` how many versions the log lists. ``kept`` is the checkpoint kept
    from before that today's log was shown to extend (None when none was given).
    """

    slug: str
    origin: str
    tree_size: int
    root_hash: str
    dataset_version: Optional[str]
    checkpoint: Checkpoint
    entries: int
    dataset_versions: tuple[str, ...]
    bands_checked: int
    published_versions: int
    kept: Optional[Checkpoint] = None

    @property
    def consistent_from(self) -> Optional[int]:
        """The tree size of the kept checkpoint today's log extends, if one was given."""
        return self.kept.tree_size if self.kept is not None else None


def _body(published: Any) -> Mapping[str, Any]:
    raw = published if isinstance(published, Mapping) else getattr(published, "raw", None)
    if not isinstance(raw, Mapping):
        raise TypeError("published: the answer of client.published(slug), or its decoded JSON")
    return raw


def _field(mapping: Any, name: str, kind: type, where: str) -> Any:
    value = mapping.get(name) if isinstance(mapping, Mapping) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise LogVerificationError("format", f"{where} has no {name} ({kind.__name__})")
    return value


def _versions(body: Mapping[str, Any], checkpoint: Checkpoint) -> list[tuple[str, int]]:
    listed = body.get("versions")
    if not isinstance(listed, list) or not listed:
        raise LogVerificationError("versions", "the answer lists no published version")
    versions: list[tuple[str, int]] = []
    for item in listed:
        version = (
            _field(item, "dataset_version", str, "a version"),
            _field(item, "tree_size", int, "a version"),
        )
        if versions and not (version[0] > versions[-1][0] and version[1] > versions[-1][1]):
            raise LogVerificationError(
                "versions",
                f"the versions are not in publication order: {version} follows {versions[-1]}",
            )
        if version[1] <= 0:
            raise LogVerificationError("versions", f"version {version[0]} has {version[1]} entries")
        versions.append(version)
    last = versions[-1]
    if last[1] != checkpoint.tree_size or last[0] != (checkpoint.dataset_version or last[0]):
        raise LogVerificationError(
            "versions",
            f"the last version listed is {last[0]} with {last[1]} entries; the signed checkpoint says "
            f"{checkpoint.dataset_version} with {checkpoint.tree_size}",
        )
    return versions


def _head(body: Mapping[str, Any], pinned: Sequence[Ed25519PublicKey], origin: Optional[str]) -> Checkpoint:
    log = body.get("log")
    note = _field(log, "checkpoint", str, "the answer's log")
    assert isinstance(log, Mapping)
    checkpoint = _verify_note(Checkpoint.parse(note), pinned, origin)
    if log.get("origin") != checkpoint.origin:
        raise LogVerificationError(
            "origin", f"the answer names the log {log.get('origin')!r}, its checkpoint {checkpoint.origin!r}"
        )
    if log.get("tree_size") != checkpoint.tree_size or log.get("root_hash") != checkpoint.root_hash:
        raise LogVerificationError(
            "checkpoint", "the answer's tree size or root hash is not what its signed checkpoint says"
        )
    return checkpoint


def _consistent(
    kept: Checkpoint,
    today: Checkpoint,
    versions: Optional[Sequence[tuple[str, int]]],
    consistency: Any,
) -> None:
    """Checks that today's log extends the kept checkpoint's (``consistency``: the answer of
    ``/v1/log/consistency?from=<kept size>``, needed unless the sizes are equal)."""
    if kept.origin != today.origin:
        raise LogVerificationError(
            "origin", f"the kept checkpoint is of {kept.origin!r}, today's of {today.origin!r}"
        )
    if kept.tree_size > today.tree_size:
        raise LogVerificationError(
            "consistency",
            f"today's log has {today.tree_size} entries, fewer than the {kept.tree_size} of the checkpoint "
            "you kept: it was cut or forked",
        )
    if versions is not None:
        sizes = dict(versions)
        if kept.dataset_version is not None and sizes.get(kept.dataset_version) != kept.tree_size:
            listed = sizes.get(kept.dataset_version)
            raise LogVerificationError(
                "consistency",
                f"the checkpoint you kept ends {kept.dataset_version} at {kept.tree_size} entries; today's "
                f"log lists {'no such version' if listed is None else f'it at {listed}'}: it forked",
            )
    if kept.tree_size == today.tree_size:
        if kept.root != today.root:
            raise LogVerificationError(
                "consistency", f"today's root of {today.tree_size} entries is not the one you kept: a fork"
            )
        return
    body = _body(consistency) if consistency is not None else None
    if body is None:
        raise LogVerificationError(
            "consistency", f"no consistency proof from {kept.tree_size} entries was given"
        )
    proof = [_b64(p, "a hash of the consistency proof") for p in _field(body, "proof", list, "the proof")]
    to = body.get("to")
    if isinstance(to, Mapping) and to.get("tree_size") != today.tree_size:
        raise LogVerificationError(
            "consistency",
            f"the consistency proof leads to {to.get('tree_size')} entries, the checkpoint has "
            f"{today.tree_size}: the log moved between the two answers (verify again)",
        )
    if not verify_consistency(kept.tree_size, today.tree_size, proof, kept.root, today.root):
        raise LogVerificationError(
            "consistency",
            f"today's log ({today.tree_size} entries) does not extend the checkpoint you kept "
            f"({kept.tree_size} entries, {kept.dataset_version}): a rewritten or forked log",
        )


def verify_published(
    published: Any,
    trusted: PinnedLike,
    *,
    keys: Optional[KeysLike] = None,
    kept: Union[str, Checkpoint, None] = None,
    consistency: Any = None,
    origin: Optional[str] = None,
    cut: bool = False,
) -> HistoryVerification:
    """Checks a company's published history as the API sent it, against pinned keys.

    ``published`` is ``client.published(slug)`` (or its decoded JSON). Checked, in order: the
    answer's checkpoint is signed by a pinned key (``trusted``, ``keys``: see ``log_keys``)
    under its origin (``origin``, when given; else the kept checkpoint's, when given); the
    versions are in publication order and end at that checkpoint; every entry hashes to its leaf
    hash and its inclusion proof leads to the checkpoint's root; the entries are the company's,
    in leaf order, each within the version it names, one per version, with none missing between
    its first and its last (nor after its last, unless ``cut``: the answer was cut to dates);
    every 95% band sent matches the digest its entry commits to. Given ``kept`` (a checkpoint
    you kept from before: its note, or a ``Checkpoint``), that it is signed by a pinned key
    too and that today's log extends it: ``consistency`` is the answer of
    ``client.log_consistency(kept_size)`` (not needed when the sizes are equal).

    Returns a ``HistoryVerification``; raises ``LogVerificationError`` naming the first check
    that failed.
    """
    body = _body(published)
    pinned = log_keys(trusted, keys)
    kept_checkpoint = None
    if kept is not None:
        kept_checkpoint = _verify_note(Checkpoint.parse(kept), pinned, origin)
        origin = kept_checkpoint.origin
    checkpoint = _head(body, pinned, origin)
    versions = _versions(body, checkpoint)
    slug = _field(body, "slug", str, "the answer")
    series = body.get("series")
    if not isinstance(series, list):
        raise LogVerificationError("format", "the answer has no series of entries")
    starts = {version: (versions[i - 1][1] if i else 0, size) for i, (version, size) in enumerate(versions)}
    order = [version for version, _ in versions]
    seen: list[str] = []
    bands = 0
    previous = -1
    for item in series:
        entry = _field(item, "entry", Mapping, "an entry of the series")
        index = _field(item, "leaf_index", int, "an entry of the series")
        version = entry.get("dataset_version")
        where = f"{slug}'s entry of {version} (leaf {index})"
        try:
            hashed = leaf_hash(canonical_json(entry))
        except (TypeError, ValueError, RecursionError) as exc:
            raise LogVerificationError(
                "leaf_hash", f"{where} is not canonical JSON: {exc}", slug, index
            ) from None
        sent = item.get("leaf_hash")
        if sent is not None and _b64(sent, f"the leaf hash of {where}") != hashed:
            raise LogVerificationError(
                "leaf_hash",
                f"{where} does not hash to the leaf hash sent with it: it was changed",
                slug,
                index,
            )
        proof = [
            _b64(p, f"the inclusion proof of {where}") for p in _field(item, "inclusion_proof", list, where)
        ]
        if not verify_inclusion(index, checkpoint.tree_size, hashed, proof, checkpoint.root):
            raise LogVerificationError(
                "inclusion",
                f"{where} is not in the log of the signed checkpoint ({checkpoint.tree_size} entries): "
                "a forged entry, or one moved to another place",
                slug,
                index,
            )
        if index <= previous:
            raise LogVerificationError(
                "order", f"{where} comes after leaf {previous}: the entries are not in log order", slug, index
            )
        previous = index
        if entry.get("slug") != slug:
            raise LogVerificationError("entry", f"{where} is an entry of {entry.get('slug')!r}", slug, index)
        if item.get("date") != entry.get("as_of"):
            raise LogVerificationError(
                "entry",
                f"{where} is dated {item.get('date')}, its entry says {entry.get('as_of')}",
                slug,
                index,
            )
        span = starts.get(version) if isinstance(version, str) else None
        if span is None:
            raise LogVerificationError(
                "versions", f"{where}: {version} is not a published version", slug, index
            )
        if not span[0] <= index < span[1]:
            raise LogVerificationError(
                "versions",
                f"{where} lies outside the leaves {span[0]}..{span[1] - 1} of {version}",
                slug,
                index,
            )
        if seen and seen[-1] == version:
            raise LogVerificationError("completeness", f"{where} is a second entry of {version}", slug, index)
        seen.append(version)
        band = item.get("band_95")
        if band is not None:
            if not isinstance(band, Mapping) or band_95_digest(band) != entry.get("band_95_digest"):
                raise LogVerificationError(
                    "band_95", f"the 95% band of {where} is not the one its entry commits to", slug, index
                )
            bands += 1
    if seen:
        first, last = order.index(seen[0]), order.index(seen[-1])
        expected = order[first : (last if cut else len(order) - 1) + 1]
        missing = [version for version in expected if version not in seen]
        if missing:
            raise LogVerificationError(
                "completeness",
                f"{slug} has entries of {seen[0]} and later, but none of {', '.join(missing)}: an entry "
                "was removed from the answer (a company with a mark is published in every version)",
                slug,
            )
    if kept_checkpoint is not None:
        _consistent(kept_checkpoint, checkpoint, versions, consistency)
    return HistoryVerification(
        slug=slug,
        origin=checkpoint.origin,
        tree_size=checkpoint.tree_size,
        root_hash=checkpoint.root_hash,
        dataset_version=checkpoint.dataset_version,
        checkpoint=checkpoint,
        entries=len(seen),
        dataset_versions=tuple(seen),
        bands_checked=bands,
        published_versions=len(versions),
        kept=kept_checkpoint,
    )


def verify_history(
    source: Any,
    trusted: PinnedLike,
    *,
    slug: Optional[str] = None,
    keys: Optional[KeysLike] = None,
    kept: Union[str, Checkpoint, None] = None,
    consistency: Any = None,
    origin: Optional[str] = None,
) -> HistoryVerification:
    """Checks a company's published history against keys you pinned; see ``verify_published``.

    ``source`` is a ``Client`` (then ``slug`` names the company: its history, and the
    consistency proof from ``kept``, are fetched; thumbprints pinned without ``keys`` take the
    public keys from ``client.signing_keys()``), or ``client.published(slug)`` itself (then
    pass the ``consistency`` proof from ``kept``'s size). With an ``AsyncClient``, call
    ``await client.verify_history(slug, trusted, ...)``.
    """
    if isinstance(source, Mapping) or hasattr(source, "raw"):
        cut = bool(getattr(source, "start", None) or getattr(source, "end", None))
        return verify_published(
            source, trusted, keys=keys, kept=kept, consistency=consistency, origin=origin, cut=cut
        )
    method = getattr(source, "verify_history", None)
    if method is None or slug is None:
        raise TypeError(
            "verify_history(client, trusted, slug=...) or verify_history(client.published(slug), ...)"
        )
    if inspect.iscoroutinefunction(method):
        raise TypeError("with an AsyncClient: await client.verify_history(slug, trusted, ...)")
    result: HistoryVerification = method(slug, trusted, keys=keys, kept=kept, origin=origin)
    return result


# ---------------------------------------------------------------------------------------------
# The whole log


@dataclasses.dataclass(frozen=True)
class LogVerification:
    """What ``verify_log`` checked: every entry of the log file, under ``checkpoints`` (each
    signed by a pinned key and matching the entries before it), every 95% band against its
    digest; ``kept``, when given, is one of its prefixes."""

    origin: str
    tree_size: int
    root_hash: str
    entries: int
    checkpoints: tuple[Checkpoint, ...]
    kept: Optional[Checkpoint] = None

    @property
    def dataset_versions(self) -> tuple[Optional[str], ...]:
        return tuple(checkpoint.dataset_version for checkpoint in self.checkpoints)


def verify_log(
    records: Iterable[Mapping[str, Any]],
    trusted: PinnedLike,
    *,
    keys: Optional[KeysLike] = None,
    kept: Union[str, Checkpoint, None] = None,
    origin: Optional[str] = None,
) -> LogVerification:
    """Replays a whole log file (``GET /v1/export/log``: its decoded lines, header first),
    checking every checkpoint on the way: signed by a pinned key under the log's origin, with
    the size and root of the entries before it, dataset versions in order; every 95% band
    against its entry's digest; no entry after the last checkpoint. Given ``kept``, that its
    tree is a prefix of this one (the same root at its size). ``LogVerificationError`` on the
    first failure, naming the line."""
    pinned = log_keys(trusted, keys)
    hashes: list[bytes] = []
    checkpoints: list[Checkpoint] = []
    log_origin: Optional[str] = None
    prefix_roots: dict[int, bytes] = {}
    kept_checkpoint = Checkpoint.parse(kept) if kept is not None else None
    for number, record in enumerate(records, start=1):
        where = f"line {number} of the log"
        if log_origin is None:
            log_origin = _field(record, "origin", str, where)
            if record.get("format") != 1:
                raise LogVerificationError("format", f"{where}: format {record.get('format')!r} is not 1")
            if origin is not None and log_origin != origin:
                raise LogVerificationError("origin", f"the log is {log_origin!r}, not {origin!r}")
            continue
        if "leaf" in record:
            entry = _field(record, "leaf", Mapping, where)
            band = record.get("band_95")
            if not isinstance(band, Mapping) or band_95_digest(band) != entry.get("band_95_digest"):
                raise LogVerificationError(
                    "band_95", f"{where}: the 95% band is not the one the entry commits to"
                )
            hashes.append(leaf_hash(canonical_json(entry)))
            if kept_checkpoint is not None and len(hashes) == kept_checkpoint.tree_size:
                prefix_roots[len(hashes)] = _root(hashes)
        elif "checkpoint" in record:
            note = _field(record.get("checkpoint"), "note", str, where)
            checkpoint = _verify_note(Checkpoint.parse(note), pinned, log_origin)
            if checkpoint.tree_size != len(hashes) or checkpoint.root != _root(hashes):
                raise LogVerificationError(
                    "checkpoint",
                    f"{where}: the checkpoint of {checkpoint.dataset_version} does not match the "
                    f"{len(hashes)} entries before it: a forged, removed or reordered entry",
                )
            named = record["checkpoint"].get("dataset_version")
            if named is not None and named != checkpoint.dataset_version:
                raise LogVerificationError(
                    "checkpoint", f"{where}: the line names {named}, its note another version"
                )
            if checkpoints and not (checkpoint.dataset_version or "") > (
                checkpoints[-1].dataset_version or ""
            ):
                raise LogVerificationError(
                    "versions",
                    f"{where}: {checkpoint.dataset_version} follows {checkpoints[-1].dataset_version}",
                )
            checkpoints.append(checkpoint)
        else:
            raise LogVerificationError("format", f"{where} is neither an entry nor a checkpoint")
    if log_origin is None:
        raise LogVerificationError("format", "the log is empty: it starts with its origin")
    if not checkpoints or checkpoints[-1].tree_size != len(hashes):
        published = checkpoints[-1].tree_size if checkpoints else 0
        raise LogVerificationError(
            "checkpoint", f"{len(hashes) - published} entries after the last checkpoint, under none"
        )
    last = checkpoints[-1]
    if kept_checkpoint is not None:
        _verify_note(kept_checkpoint, pinned, log_origin)
        if kept_checkpoint.tree_size > last.tree_size or prefix_roots.get(kept_checkpoint.tree_size) != (
            kept_checkpoint.root
        ):
            raise LogVerificationError(
                "consistency",
                f"the log does not extend the checkpoint you kept ({kept_checkpoint.tree_size} entries, "
                f"{kept_checkpoint.dataset_version}): a rewritten or forked log",
            )
    return LogVerification(
        origin=log_origin,
        tree_size=last.tree_size,
        root_hash=last.root_hash,
        entries=len(hashes),
        checkpoints=tuple(checkpoints),
        kept=kept_checkpoint,
    )
