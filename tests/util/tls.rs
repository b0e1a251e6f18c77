//! A certificate and key made for a test, for servers over TLS.

use super::*;

/// A self-signed certificate for `localhost` in files a server can be given, and a client
/// that trusts it.
pub struct TestTls {
    _dir: tempfile::TempDir,
    pub cert: PathBuf,
    pub key: PathBuf,
    roots: rustls::RootCertStore,
}

impl TestTls {
    pub fn new() -> TestTls {
        let dir = tempfile::tempdir().expect("temp dir");
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, certified.cert.pem()).expect("write certificate");
        std::fs::write(&key, certified.key_pair.serialize_pem()).expect("write key");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certified.cert.der().clone()).expect("trust the certificate");
        TestTls {
            _dir: dir,
            cert,
            key,
            roots,
        }
    }

    /// The server's settings serve TLS with this certificate.
    pub fn serve(&self, settings: &mut Settings) {
        settings.listen.tls_cert = Some(self.cert.clone());
        settings.listen.tls_key = Some(self.key.clone());
    }

    /// A TLS connection to `addr` offering `alpn` (such as `h2`).
    pub async fn connect(&self, addr: SocketAddr, alpn: &[u8]) -> tokio_rustls::client::TlsStream<TcpStream> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(self.roots.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("server name");
        let tls = connector.connect(name, tcp).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
        tls
    }
}
