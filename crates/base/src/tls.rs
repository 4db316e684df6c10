//! TLS for every connection made or accepted: what a client trusts (the system's store, with
//! `SSL_CERT_FILE` and `SSL_CERT_DIR`, plus a peer's own CA file), its client certificate, the
//! one builder of every HTTPS client ([`https_client`]), a refused certificate told in one line
//! ([`refusal()`]), and the listener's certificate, read again when its files change
//! ([`listen`]).

pub mod listen;
mod pem;
mod probe;
mod refusal;
mod verifier;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

pub use pem::{read_certs, read_key, TlsError};
pub use probe::postgres_certificate;
pub use refusal::{refusal, Refusal};

/// A peer's TLS settings: `{section}.tls_ca_file`, `{section}.tls_cert_file` and
/// `{section}.tls_key_file` (the settings every message names). The default trusts the
/// system's store alone and presents no client certificate.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    /// What the peer is, for messages (`the REST service`).
    pub name: &'static str,
    /// The settings section (`rest`), for messages.
    pub section: &'static str,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl Peer {
    /// `name` with the files of the settings section `section`.
    pub fn new(
        name: &'static str,
        section: &'static str,
        ca_file: Option<&PathBuf>,
        cert_file: Option<&PathBuf>,
        key_file: Option<&PathBuf>,
    ) -> Peer {
        Peer {
            name,
            section,
            ca_file: ca_file.cloned(),
            cert_file: cert_file.cloned(),
            key_file: key_file.cloned(),
        }
    }

    /// `rest.tls_ca_file` and its siblings.
    pub fn setting(&self, which: &str) -> String {
        format!("{}.tls_{which}", self.section)
    }

    /// The one line telling a refused handshake with this peer at `place`.
    pub fn refused(&self, r: &Refusal, place: &str) -> String {
        r.line(self.name, place, self.section)
    }
}

/// The system's trusted CAs, read once per process: the platform's store, or what
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` name (as OpenSSL and curl read them).
pub fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::debug!(error = %e, "a system CA certificate could not be read");
        }
        found.certs
    })
}

/// The crypto provider of every TLS connection here (ring, as async-nats and sqlx use).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration for `peer`: the system's CAs and the peer's CA file trusted, the
/// peer's certificate checked by a verifier that says what it presented when it is refused,
/// and its client certificate presented when the server asks for one.
pub fn client_config(peer: &Peer) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    let (_, ignored) = roots.add_parsable_certificates(system_roots().iter().cloned());
    if ignored > 0 {
        tracing::debug!(ignored, "system CA certificates rustls could not use");
    }
    if let Some(ca) = &peer.ca_file {
        let setting = peer.setting("ca_file");
        for cert in read_certs(ca, &setting)? {
            roots.add(cert).map_err(|e| TlsError::Bad {
                setting: setting.clone(),
                path: ca.display().to_string(),
                why: format!("not a usable CA certificate ({e})"),
            })?;
        }
    }
    let verifier = verifier::Explaining::new(roots).map_err(|why| TlsError::Setup {
        peer: peer.name,
        why,
    })?;
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup {
            peer: peer.name,
            why: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    match (&peer.cert_file, &peer.key_file) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert, &peer.setting("cert_file"))?;
            let key_der = read_key(key, &peer.setting("key_file"))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| TlsError::Bad {
                    setting: peer.setting("key_file"),
                    path: key.display().to_string(),
                    why: format!("does not match {} ({e})", peer.setting("cert_file")),
                })
        }
        _ => Err(TlsError::Half {
            cert: peer.setting("cert_file"),
            key: peer.setting("key_file"),
        }),
    }
}

/// The one builder of every HTTPS client (the REST service and its token endpoint, the object
/// store, the witnesses, a log's tiles read by `mirror` and `--restore-from`): TLS as
/// [`client_config`] makes it. The caller adds its timeouts and redirect policy. (Feature
/// `https-client`: the witness makes no requests and builds without it.)
#[cfg(feature = "https-client")]
pub fn https_client(peer: &Peer) -> Result<reqwest::ClientBuilder, TlsError> {
    let config = client_config(peer)?;
    Ok(reqwest::Client::builder()
        .use_preconfigured_tls(config)
        .user_agent(concat!("event-audit/", env!("CARGO_PKG_VERSION"))))
}

/// Whether `host` is this machine (a loopback address, `localhost`, or a Unix socket's
/// directory): a connection there crosses no network.
pub fn is_local(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.starts_with('/')
        || h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests;
