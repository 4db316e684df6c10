//! PEM files of certificates and keys, read with a bound (a regular file of at most 1 MiB), and
//! what goes wrong with them, naming the setting and the file.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest PEM file read (a CA bundle of a few hundred certificates fits).
pub(super) const MAX_PEM_FILE: u64 = 1 << 20;

/// Why TLS could not be set up. Never holds a key's bytes.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {setting} {path}: {source}")]
    Read {
        setting: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{setting} {path}: {why}")]
    Bad {
        setting: String,
        path: String,
        why: String,
    },
    #[error("a client certificate needs both {cert} and {key}: set the other one too")]
    Half { cert: String, key: String },
    #[error("TLS for {peer}: {why}")]
    Setup { peer: &'static str, why: String },
}

fn read(path: &Path, setting: &str) -> Result<String, TlsError> {
    crate::files::read_small(path, MAX_PEM_FILE).map_err(|source| TlsError::Read {
        setting: setting.to_owned(),
        path: path.display().to_string(),
        source,
    })
}

/// Every certificate of a PEM file (at least one).
pub fn read_certs(path: &Path, setting: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = read(path, setting)?;
    let bad = |why: String| TlsError::Bad {
        setting: setting.to_owned(),
        path: path.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not PEM certificates ({e})")))?;
    if certs.is_empty() {
        return Err(bad("holds no PEM certificate (BEGIN CERTIFICATE)".into()));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(path: &Path, setting: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = read(path, setting)?;
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|_| TlsError::Bad {
        setting: setting.to_owned(),
        path: path.display().to_string(),
        why: "holds no PEM private key (PKCS#8, PKCS#1 or SEC1)".into(),
    })
}
