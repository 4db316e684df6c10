//! A TLS handshake refused, found in any error chain (a rustls error, maybe inside an I/O
//! error) and told in words: why (untrusted, expired, for other names, a client certificate
//! asked for, not TLS at all), what the certificate held, and the setting to change. Such a
//! refusal is never retried: it does not go away by itself.

use std::error::Error;

use rustls::{AlertDescription, CertificateError};

use super::verifier::Presented;

/// What to try, by the kind of refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// No trusted CA signed it.
    Ca,
    /// It is not for the name connected to.
    Name,
    /// Expired, or not yet valid.
    Time,
    /// The server refused us (a client certificate asked for or refused).
    ClientCert,
    /// The peer does not speak TLS there.
    NotTls,
    Other,
}

/// A refused handshake: the reason in words and what to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub hint: Hint,
}

impl Refusal {
    /// The one line for `peer` (`the REST service`) at `place` (`host:port`), naming the
    /// settings of `section` (`rest`).
    pub fn line(&self, peer: &str, place: &str, section: &str) -> String {
        format!(
            "TLS refused with {peer} at {place}: {}",
            self.words(section)
        )
    }

    /// The same refusal, with what the certificate held as another look found it (PostgreSQL's,
    /// which sqlx checks without saying).
    pub fn presenting(mut self, issuer: &str, names: &[String]) -> Refusal {
        let names = if names.is_empty() {
            "no DNS name".to_owned()
        } else {
            names.join(", ")
        };
        self.reason.push_str(&format!(
            " (it presents one for {names}, issued by {issuer})"
        ));
        self
    }

    /// `TLS refused: ` and the reason and what to try, for a message that names the peer.
    pub fn short(&self, section: &str) -> String {
        format!("TLS refused: {}", self.words(section))
    }

    fn words(&self, section: &str) -> String {
        let advice = match self.hint {
            Hint::Ca => format!("if that CA is your own, set {section}.tls_ca_file to its PEM file (or add it to SSL_CERT_FILE); if not, this is not the server meant (a man in the middle?)"),
            Hint::Name => "connect by a name the certificate holds, or have it reissued for this one".to_owned(),
            Hint::Time => "have the server's certificate renewed (or check this machine's clock)".to_owned(),
            Hint::ClientCert => format!("if it requires a client certificate, set {section}.tls_cert_file and {section}.tls_key_file to one its CA signed"),
            Hint::NotTls => "check the scheme and the port: the server does not speak TLS there".to_owned(),
            Hint::Other => "check the server's certificate".to_owned(),
        };
        format!("{}; {advice}", self.reason)
    }
}

/// The TLS refusal somewhere in `e`'s chain, if there is one.
pub fn refusal(e: &(dyn Error + 'static)) -> Option<Refusal> {
    find(e).map(classify)
}

fn find<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current: Option<&'a (dyn Error + 'static)> = Some(e);
    let mut depth = 0;
    while let (Some(err), true) = (current, depth < 16) {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        // An I/O error's `source` skips the error it wraps: look inside it.
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            let inner: &(dyn Error + 'static) = inner;
            if let Some(r) = find(inner) {
                return Some(r);
            }
        }
        current = err.source();
        depth += 1;
    }
    None
}

fn classify(e: &rustls::Error) -> Refusal {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            match other.0.downcast_ref::<Presented>() {
                Some(p) => certificate(&p.cause, Some(p)),
                None => certificate(&CertificateError::Other(other.clone()), None),
            }
        }
        rustls::Error::InvalidCertificate(c) => certificate(c, None),
        rustls::Error::AlertReceived(alert) => Refusal {
            reason: format!("the server ended the handshake ({})", alert_words(*alert)),
            hint: Hint::ClientCert,
        },
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => Refusal {
            reason: format!("the answer is not TLS ({e})"),
            hint: Hint::NotTls,
        },
        other => Refusal {
            reason: other.to_string(),
            hint: Hint::Other,
        },
    }
}

fn alert_words(alert: AlertDescription) -> String {
    match alert {
        AlertDescription::CertificateRequired => "it requires a client certificate".into(),
        AlertDescription::BadCertificate | AlertDescription::UnknownCA => {
            "it refused our client certificate".into()
        }
        other => format!("{other:?}"),
    }
}

/// `presented`: what the certificate held, when the verifier could say.
fn certificate(c: &CertificateError, presented: Option<&Presented>) -> Refusal {
    let issuer = presented.map_or_else(String::new, |p| format!(", issued by {}", p.issuer));
    let names = |list: &[String]| {
        if list.is_empty() {
            "no DNS name".to_owned()
        } else {
            list.join(", ")
        }
    };
    let held = presented.map_or_else(String::new, |p| format!(" for {}", names(&p.names)));
    let (reason, hint) = match c {
        CertificateError::UnknownIssuer => (
            format!("its certificate{held} is signed by a CA this client does not trust{issuer}"),
            Hint::Ca,
        ),
        // A CA of a trusted CA's name, but another key: a look-alike.
        CertificateError::BadSignature => (
            format!("its certificate{held} is signed by a CA this client does not trust (named as a trusted one, with another key){issuer}"),
            Hint::Ca,
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            (format!("its certificate{held} has expired{issuer}"), Hint::Time)
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            format!("its certificate{held} is not valid yet{issuer}"),
            Hint::Time,
        ),
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => {
            // rustls shows each name as its Rust value (`DnsName("db.example")`).
            let shown: Vec<String> = presented
                .iter()
                .map(|n| {
                    n.strip_prefix("DnsName(\"")
                        .and_then(|x| x.strip_suffix("\")"))
                        .unwrap_or(n)
                        .to_owned()
                })
                .collect();
            (
                format!(
                    "its certificate is for {}, not {}{issuer}",
                    names(&shown),
                    expected.to_str()
                ),
                Hint::Name,
            )
        }
        CertificateError::NotValidForName => (
            format!("its certificate{held} is not for the name connected to{issuer}"),
            Hint::Name,
        ),
        other => (format!("its certificate{held} was refused: {other}{issuer}"), Hint::Other),
    };
    Refusal { reason, hint }
}
