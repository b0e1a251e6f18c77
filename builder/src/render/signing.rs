//! Ed25519 keys and the signed resolution record.
//!
//! Records are signed at build time, offline: the server only ever sees public keys. A record
//! is signed over its RFC 8785 (JCS) canonical JSON without the `signature` member; the
//! signature is base64url without padding. Public keys are published as a JWKS whose `kid` is
//! the RFC 7638 thumbprint, so stock libraries in any language can verify a record.
//!
//! Key files are PKCS#8 PEM (private, mode 0600) and SPKI PEM (public), the formats OpenSSL
//! and every Ed25519 library read.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{json, Map, Value};

pub use marks_format::rules::signatures::{
    jwk, kid, parse_jwks, read_verifying_key, signed_bytes, verify_record, KeyError, VerifyError,
};

pub fn generate_key() -> SigningKey {
    SigningKey::generate(&mut rand::rngs::OsRng)
}

/// Writes a new private key (PKCS#8 PEM, mode 0600) and its public key beside it (`.pub`).
/// Refuses to overwrite an existing key: losing a signing key breaks every old record.
pub fn write_new_key(path: &Path, key: &SigningKey) -> Result<PathBuf, KeyError> {
    let fail = |path: &Path, reason: String| KeyError::File {
        path: path.to_owned(),
        reason,
    };
    let private = key
        .to_pkcs8_pem(Default::default())
        .map_err(|e| fail(path, format!("cannot encode the key: {e}")))?;
    let public = key
        .verifying_key()
        .to_public_key_pem(Default::default())
        .map_err(|e| fail(path, format!("cannot encode the public key: {e}")))?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty() && !dir.exists()) {
        // A directory made for private keys is readable by its owner only.
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .map_err(|e| fail(dir, format!("cannot create the directory: {e}")))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| fail(path, format!("cannot create: {e}")))?;
    file.write_all(private.as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(|e| fail(path, format!("cannot write: {e}")))?;
    let public_path = public_key_path(path);
    std::fs::write(&public_path, public.as_bytes()).map_err(|e| fail(&public_path, format!("cannot write: {e}")))?;
    Ok(public_path)
}

/// Where `keygen` puts the public half of a key.
pub fn public_key_path(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

pub fn read_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let text = marks_format::file::regular_file::read_to_string(path).map_err(|e| KeyError::File {
        path: path.to_owned(),
        reason: format!("cannot read: {e}"),
    })?;
    SigningKey::from_pkcs8_pem(&text).map_err(|e| KeyError::File {
        path: path.to_owned(),
        reason: format!("not an Ed25519 private key in PKCS#8 PEM ({e})"),
    })
}

/// The JWKS body; the current key first, then earlier ones, each once.
pub fn jwks_body(keys: &[VerifyingKey]) -> Vec<u8> {
    let mut seen: Vec<VerifyingKey> = Vec::new();
    for key in keys {
        if !seen.contains(key) {
            seen.push(*key);
        }
    }
    let keys: Vec<Value> = seen.iter().map(jwk).collect();
    serde_json::to_vec(&json!({ "keys": keys })).unwrap_or_default()
}

/// Signs a record and returns the response body: the canonical JSON of the record with its
/// `signature` member added.
pub fn sign_record(mut record: Map<String, Value>, key: &SigningKey) -> Result<Vec<u8>, KeyError> {
    let signature = key.sign(&signed_bytes(&record)?);
    record.insert(
        "signature".into(),
        Value::String(URL_SAFE_NO_PAD.encode(signature.to_bytes())),
    );
    serde_jcs::to_vec(&record).map_err(|e| KeyError::Canonical(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kid_is_the_rfc_7638_thumbprint() {
        // RFC 8037 appendix A.3: the thumbprint of its example Ed25519 public key.
        let x = URL_SAFE_NO_PAD
            .decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
            .expect("valid base64url");
        let key = VerifyingKey::from_bytes(&x.try_into().expect("32 bytes")).expect("valid key");
        assert_eq!(kid(&key), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn signed_record_verifies_and_a_changed_byte_does_not() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let keys = vec![(kid(&key.verifying_key()), key.verifying_key())];
        let mut record = Map::new();
        record.insert("slug".into(), json!("acme"));
        record.insert("value_usd".into(), json!(19_000_000_000u64));
        record.insert("key_id".into(), json!(kid(&key.verifying_key())));
        let body = sign_record(record, &key).expect("signable");
        assert_eq!(verify_record(&body, &keys), Ok(()));
        let tampered = String::from_utf8(body)
            .expect("utf-8")
            .replace("19000000000", "19000000001");
        assert_eq!(
            verify_record(tampered.as_bytes(), &keys),
            Err(VerifyError::BadSignature)
        );
    }
}
