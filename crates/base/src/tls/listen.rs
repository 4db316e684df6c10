//! TLS on a listener (`http.tls_cert_file`, `http.tls_key_file`): the certificate and key read
//! at start (a bad pair stops the start), then read again when either file's modification time
//! changes, looked at no more than once a second, at a handshake; the connections already open
//! keep the certificate they began with, so none is dropped. A pair that cannot be read (a
//! rotation half done) leaves the one in use, with a WARN, until both files read well.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use super::{read_certs, read_key, TlsError};

/// How often the files' modification times are looked at, at most.
const CHECK_EVERY: Duration = Duration::from_secs(1);

const CERT_SETTING: &str = "http.tls_cert_file";
const KEY_SETTING: &str = "http.tls_key_file";

/// The certificate in use, and what it was read from.
#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    stamp: (Option<SystemTime>, Option<SystemTime>),
    checked: Instant,
}

/// A certificate and key pair from files, read again when they change.
#[derive(Debug)]
pub struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<Current>,
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn load(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = read_certs(cert, CERT_SETTING)?;
    let key_der = read_key(key, KEY_SETTING)?;
    let signing = super::provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| TlsError::Bad {
            setting: KEY_SETTING.into(),
            path: key.display().to_string(),
            why: format!("not a usable private key ({e})"),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| TlsError::Bad {
        setting: KEY_SETTING.into(),
        path: key.display().to_string(),
        why: format!("is not the key of {CERT_SETTING} ({e})"),
    })?;
    Ok(Arc::new(certified))
}

impl Reloading {
    pub fn new(cert: &Path, key: &Path) -> Result<Reloading, TlsError> {
        let stamp = (modified(cert), modified(key));
        let loaded = load(cert, key)?;
        Ok(Reloading {
            cert: cert.to_owned(),
            key: key.to_owned(),
            current: Mutex::new(Current {
                key: loaded,
                stamp,
                checked: Instant::now(),
            }),
        })
    }

    /// The pair in use, read again first when a second has passed and a file changed.
    fn key(&self) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock().ok()?;
        if current.checked.elapsed() >= CHECK_EVERY {
            current.checked = Instant::now();
            let stamp = (modified(&self.cert), modified(&self.key));
            if stamp != current.stamp {
                match load(&self.cert, &self.key) {
                    Ok(key) => {
                        current.key = key;
                        current.stamp = stamp;
                        tracing::info!(cert = %self.cert.display(), "the listener's TLS certificate changed on disk: read again, used from the next connection");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the listener's TLS certificate changed on disk but cannot be used; the one read before stays in use");
                    }
                }
            }
        }
        Some(current.key.clone())
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.key()
    }
}

/// The acceptor of a listener with TLS from `cert` and `key` (PEM), HTTP/1.1, no client
/// certificates asked for.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let resolver = Reloading::new(cert, key)?;
    let mut config = rustls::ServerConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup {
            peer: "the listener",
            why: e.to_string(),
        })?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The acceptor `http.tls_cert_file` and `http.tls_key_file` ask for: none without either; both
/// or neither.
pub fn from_settings(
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Option<TlsAcceptor>, TlsError> {
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(c), Some(k)) => acceptor(c, k).map(Some),
        _ => Err(TlsError::Half {
            cert: CERT_SETTING.into(),
            key: KEY_SETTING.into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, name: &str) -> Vec<u8> {
        let pair = rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("pair");
        for (file, text) in [
            ("cert.pem", pair.cert.pem()),
            ("key.pem", pair.signing_key.serialize_pem()),
        ] {
            let tmp = dir.join(format!("{file}.new"));
            std::fs::write(&tmp, text).expect("write");
            std::fs::rename(&tmp, dir.join(file)).expect("rename");
        }
        pair.cert.der().to_vec()
    }

    fn in_use(r: &Reloading) -> Vec<u8> {
        r.key().expect("a key").cert[0].to_vec()
    }

    #[test]
    fn a_pair_replaced_in_place_is_read_again_and_a_broken_one_is_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let first = write_pair(dir.path(), "one.example");
        let r = Reloading::new(&cert, &key).expect("a pair");
        assert_eq!(in_use(&r), first);
        let second = write_pair(dir.path(), "two.example");
        // Within the second: not looked at yet.
        assert_eq!(in_use(&r), first);
        std::thread::sleep(CHECK_EVERY + Duration::from_millis(100));
        assert_eq!(in_use(&r), second);
        // A key that is not the certificate's: the pair in use stays.
        let other = rcgen::KeyPair::generate().expect("key");
        std::fs::write(&key, other.serialize_pem()).expect("write");
        std::thread::sleep(CHECK_EVERY + Duration::from_millis(100));
        assert_eq!(in_use(&r), second);
        assert!(from_settings(Some(&cert), None).is_err(), "half a pair");
        assert!(from_settings(None, None).expect("off").is_none());
    }
}
