//! The server certificate check of every HTTPS client: rustls's own (WebPKI, against the
//! trusted CAs), and when it refuses a certificate, what the certificate holds (its issuer and
//! its names) carried in the error, so that the one line told to the operator can say it.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore};

/// A certificate refused, with what it presented.
#[derive(Debug)]
pub(super) struct Presented {
    pub cause: CertificateError,
    /// The issuer's common name and organisation (`CN=Company CA, O=Company`).
    pub issuer: String,
    /// The DNS names it is for.
    pub names: Vec<String>,
}

impl std::fmt::Display for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {})", self.cause, self.issuer)
    }
}

impl std::error::Error for Presented {}

/// rustls's WebPKI verifier, explaining its refusals.
#[derive(Debug)]
pub(super) struct Explaining {
    inner: Arc<WebPkiServerVerifier>,
}

impl Explaining {
    pub(super) fn new(roots: RootCertStore) -> Result<Explaining, String> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), super::provider())
            .build()
            .map_err(|e| format!("no CA to trust ({e}): set SSL_CERT_FILE or the CA file"))?;
        Ok(Explaining { inner })
    }
}

impl ServerCertVerifier for Explaining {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match e {
                Error::InvalidCertificate(cause) => {
                    let (issuer, names) = describe(end_entity);
                    Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
                        Presented {
                            cause,
                            issuer,
                            names,
                        },
                    ))))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The issuer (its CN and O) and the DNS names of a certificate, as far as they can be read.
pub(super) fn describe(cert: &CertificateDer<'_>) -> (String, Vec<String>) {
    match webpki::EndEntityCert::try_from(cert) {
        Ok(ee) => {
            let names = ee.valid_dns_names().take(16).map(str::to_owned).collect();
            (name_of(ee.issuer()), names)
        }
        Err(_) => ("(unreadable)".into(), Vec::new()),
    }
}

/// `CN=..., O=...` of a DER-encoded X.509 name: each attribute found by its OID (2.5.4.3,
/// 2.5.4.10), its string value read when short and printable.
fn name_of(der: &[u8]) -> String {
    let mut parts = Vec::new();
    for (label, oid) in [("CN", [0x55, 0x04, 0x03]), ("O", [0x55, 0x04, 0x0a])] {
        let pattern = [0x06, 0x03, oid[0], oid[1], oid[2]];
        let Some(at) = der.windows(5).position(|w| w == pattern) else {
            continue;
        };
        let [tag, len, tail @ ..] = &der[at + 5..] else {
            continue;
        };
        let len = usize::from(*len);
        let text_tag = matches!(tag, 0x0c | 0x13 | 0x16 | 0x14);
        if let (true, true, Some(value)) = (text_tag, len < 0x80, tail.get(..len)) {
            let value = String::from_utf8_lossy(value);
            let clean: String = value
                .chars()
                .filter(|c| !c.is_control())
                .take(128)
                .collect();
            parts.push(format!("{label}={clean}"));
        }
    }
    if parts.is_empty() {
        "(no common name)".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_s_common_name_and_organisation_are_read() {
        // SET { SEQ { OID 2.5.4.3, UTF8String "Test CA" } }, SET { SEQ { OID 2.5.4.10, "Co" } }
        let der = [
            0x31, 0x10, 0x30, 0x0e, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x07, b'T', b'e', b's',
            b't', b' ', b'C', b'A', 0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x0a, 0x13,
            0x02, b'C', b'o',
        ];
        assert_eq!(super::name_of(&der), "CN=Test CA, O=Co");
        assert_eq!(super::name_of(&der[..12]), "(no common name)");
        assert_eq!(super::name_of(&[]), "(no common name)");
    }
}
