//! TLS for the server: the certificate chain and key read as regular files (never waiting on
//! a FIFO or a device) and made into an acceptor offering HTTP/2 by ALPN when asked to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use marks_format::file::regular_file;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why the TLS files cannot be served with.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: cannot read")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a PEM certificate chain")]
    Certificates {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path}: not a PEM private key")]
    PrivateKey {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("the certificate chain and the private key do not make a TLS configuration")]
    Config(#[source] rustls::Error),
}

/// The server's TLS: the acceptor every connection's handshake goes through.
#[derive(Clone)]
pub struct ServerTls(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls(..)")
    }
}

/// The acceptor for the certificate chain at `cert` and the key at `key`.
pub fn acceptor(cert: &Path, key: &Path, http2: bool) -> Result<ServerTls, TlsError> {
    let read = |path: &Path| {
        regular_file::read(path).map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Certificates {
            path: cert.to_owned(),
            source,
        })?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| TlsError::PrivateKey {
        path: key.to_owned(),
        source,
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(TlsError::Config)?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(ServerTls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
}
