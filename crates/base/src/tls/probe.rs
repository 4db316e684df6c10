//! What certificate a PostgreSQL server presents, for the message of a refusal (sqlx checks the
//! certificate itself, and its error names no issuer): one TCP connection, PostgreSQL's
//! `SSLRequest`, then a TLS handshake whose check records the server's certificate and ends the
//! handshake there. Nothing is sent past the handshake; bounded by `limit`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// PostgreSQL's `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

#[derive(Debug, Default)]
struct Recording {
    leaf: Mutex<Option<Vec<u8>>>,
}

impl ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if let Ok(mut slot) = self.leaf.lock() {
            *slot = Some(end_entity.to_vec());
        }
        // Recorded: the handshake goes no further.
        Err(Error::General("certificate recorded".into()))
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        Err(Error::General("not used".into()))
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        Err(Error::General("not used".into()))
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        super::provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The issuer and names of the certificate the PostgreSQL server at `host:port` presents.
pub async fn postgres_certificate(
    host: &str,
    port: u16,
    limit: Duration,
) -> Option<(String, Vec<String>)> {
    let recording = Arc::new(Recording::default());
    let config = rustls::ClientConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(recording.clone())
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned()).ok()?;
    let probe = async {
        let mut sock = tokio::net::TcpStream::connect((host, port)).await.ok()?;
        sock.write_all(&SSL_REQUEST).await.ok()?;
        let mut answer = [0u8; 1];
        sock.read_exact(&mut answer).await.ok()?;
        if answer != *b"S" {
            return None;
        }
        let _ = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, sock)
            .await;
        Some(())
    };
    tokio::time::timeout(limit, probe).await.ok()??;
    let leaf = recording.leaf.lock().ok()?.take()?;
    Some(super::verifier::describe(&CertificateDer::from(leaf)))
}
