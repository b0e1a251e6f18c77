//! Checking what was signed: the RFC 7638 thumbprint that names an Ed25519 key, the JWKS the
//! server publishes, the canonical bytes a resolution record's signature covers, and the check
//! itself. The signing half (private keys, `marks keygen`, signing at build time) is the
//! builder's (`marks_builder::render::signing`); the server and every verifier need only this.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("cannot canonicalise the record: {0}")]
    Canonical(String),
}

/// Why a signed record did not verify.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the record is not a JSON object")]
    NotAnObject,
    #[error("the record has no string `signature`")]
    NoSignature,
    #[error("the record has no string `key_id`")]
    NoKeyId,
    #[error("no published key has kid {0}")]
    UnknownKey(String),
    #[error("the signature is not base64url of 64 bytes")]
    MalformedSignature,
    #[error("the signature does not verify")]
    BadSignature,
}

/// Reads a public key (SPKI PEM); a private key file is accepted too and its public half used.
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = crate::file::regular_file::read_to_string(path).map_err(|e| KeyError::File {
        path: path.to_owned(),
        reason: format!("cannot read: {e}"),
    })?;
    VerifyingKey::from_public_key_pem(&text)
        .or_else(|_| SigningKey::from_pkcs8_pem(&text).map(|k| k.verifying_key()))
        .map_err(|e| KeyError::File {
            path: path.to_owned(),
            reason: format!("not an Ed25519 public key in PEM ({e})"),
        })
}

/// RFC 7638 thumbprint of an Ed25519 key: SHA-256 over its canonical JWK members.
pub fn kid(key: &VerifyingKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.as_bytes());
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

pub fn jwk(key: &VerifyingKey) -> Value {
    json!({
        "kty": "OKP",
        "crv": "Ed25519",
        "x": URL_SAFE_NO_PAD.encode(key.as_bytes()),
        "kid": kid(key),
        "alg": "EdDSA",
        "use": "sig",
    })
}

/// The keys of a JWKS body, each named by its RFC 7638 thumbprint as computed here. A member
/// whose `kid` is not its key's thumbprint is dropped, never believed: a record names the key
/// that signed it by thumbprint, so a server cannot pass its own key off under another's id.
/// Members it cannot use are ignored.
pub fn parse_jwks(body: &[u8]) -> Vec<(String, VerifyingKey)> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    value["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| {
            let x = URL_SAFE_NO_PAD.decode(k["x"].as_str()?).ok()?;
            let key = VerifyingKey::from_bytes(&x.try_into().ok()?).ok()?;
            let thumbprint = kid(&key);
            (k["kid"].as_str() == Some(thumbprint.as_str())).then_some((thumbprint, key))
        })
        .collect()
}

/// The canonical bytes a record's signature covers: its JCS form without `signature`.
pub fn signed_bytes(record: &Map<String, Value>) -> Result<Vec<u8>, KeyError> {
    let mut unsigned = record.clone();
    unsigned.remove("signature");
    serde_jcs::to_vec(&unsigned).map_err(|e| KeyError::Canonical(e.to_string()))
}

/// Verifies a signed record body against published keys, choosing the key by `key_id`.
pub fn verify_record(body: &[u8], keys: &[(String, VerifyingKey)]) -> Result<(), VerifyError> {
    let value: Value = serde_json::from_slice(body).map_err(|_| VerifyError::NotAnObject)?;
    let record = value.as_object().ok_or(VerifyError::NotAnObject)?;
    let signature = record
        .get("signature")
        .and_then(Value::as_str)
        .ok_or(VerifyError::NoSignature)?;
    let key_id = record
        .get("key_id")
        .and_then(Value::as_str)
        .ok_or(VerifyError::NoKeyId)?;
    let (_, key) = keys
        .iter()
        .find(|(kid, _)| kid == key_id)
        .ok_or_else(|| VerifyError::UnknownKey(key_id.to_string()))?;
    let signature: [u8; 64] = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or(VerifyError::MalformedSignature)?;
    let message = signed_bytes(record).map_err(|_| VerifyError::NotAnObject)?;
    key.verify_strict(&message, &Signature::from_bytes(&signature))
        .map_err(|_| VerifyError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key published under another key's id is not that key: the JWKS drops it, so a record
    /// naming the id does not verify against it.
    #[test]
    fn a_key_under_another_keys_id_is_dropped() {
        let real = SigningKey::from_bytes(&[1u8; 32]).verifying_key();
        let forger = SigningKey::from_bytes(&[2u8; 32]);
        let mut forged = jwk(&forger.verifying_key());
        forged["kid"] = json!(kid(&real));
        let body = serde_json::to_vec(&json!({ "keys": [forged, jwk(&real)] })).unwrap_or_default();
        let keys = parse_jwks(&body);
        assert_eq!(keys, vec![(kid(&real), real)]);
    }
}
