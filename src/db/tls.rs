//! TLS and the password of the connection to PostgreSQL: libpq's `sslmode` (the setting, else
//! the URL's), the CA, client certificate and key (the settings, else the URL's `sslrootcert`,
//! `sslcert`, `sslkey`), each read and checked at start so that a bad file is named before any
//! connection; `require` with a CA verifies the chain, as libpq's does (verify-ca); the
//! password from a file; and whether a session is encrypted.

use std::path::PathBuf;

use secrecy::ExposeSecret;
use sqlx::postgres::{PgConnectOptions, PgSslMode};

use super::DbError;
use crate::config::DatabaseSettings;
use crate::tls::{read_certs, read_key, TlsError};

/// What the URL's query asks for TLS (sqlx reads the same names).
#[derive(Default)]
struct FromUrl {
    mode: Option<String>,
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

fn from_url(url: &str) -> FromUrl {
    let mut found = FromUrl::default();
    let Ok(u) = url::Url::parse(url) else {
        return found;
    };
    for (k, v) in u.query_pairs() {
        let v = v.into_owned();
        match k.as_ref() {
            "sslmode" | "ssl-mode" => found.mode = Some(v),
            "sslrootcert" | "ssl-root-cert" | "ssl-ca" => found.ca = Some(v.into()),
            "sslcert" | "ssl-cert" => found.cert = Some(v.into()),
            "sslkey" | "ssl-key" => found.key = Some(v.into()),
            _ => {}
        }
    }
    found
}

fn mode_of(s: &str) -> Option<PgSslMode> {
    Some(match s {
        "disable" => PgSslMode::Disable,
        "allow" => PgSslMode::Allow,
        "prefer" => PgSslMode::Prefer,
        "require" => PgSslMode::Require,
        "verify-ca" => PgSslMode::VerifyCa,
        "verify-full" => PgSslMode::VerifyFull,
        _ => return None,
    })
}

/// `opts` (parsed from `s.url`) with the TLS and password settings of `s` applied.
pub(super) fn apply(
    mut opts: PgConnectOptions,
    s: &DatabaseSettings,
) -> Result<PgConnectOptions, DbError> {
    let url = from_url(&s.url);
    let pick = |setting: &Option<PathBuf>, in_url: Option<PathBuf>, name: &'static str, param| {
        match setting {
            Some(p) => Some((p.clone(), name.to_owned())),
            None => in_url.map(|p| (p, format!("{param} in database.url"))),
        }
    };
    let ca = pick(
        &s.tls_ca_file,
        url.ca,
        "database.tls_ca_file",
        "sslrootcert",
    );
    let cert = pick(
        &s.tls_cert_file,
        url.cert,
        "database.tls_cert_file",
        "sslcert",
    );
    let key = pick(&s.tls_key_file, url.key, "database.tls_key_file", "sslkey");
    let tls = |e: TlsError| DbError::Tls(e);
    if let Some((path, setting)) = &ca {
        read_certs(path, setting).map_err(tls)?;
        opts = opts.ssl_root_cert(path);
    }
    match (&cert, &key) {
        (Some((c, cs)), Some((k, ks))) => {
            read_certs(c, cs).map_err(tls)?;
            read_key(k, ks).map_err(tls)?;
            opts = opts.ssl_client_cert(c).ssl_client_key(k);
        }
        (None, None) => {}
        _ => {
            return Err(tls(TlsError::Half {
                cert: "database.tls_cert_file".into(),
                key: "database.tls_key_file".into(),
            }))
        }
    }
    let named = s.tls_mode.clone().or(url.mode);
    if let Some(m) = &named {
        let mode = mode_of(m).ok_or_else(|| DbError::Url {
            url: crate::config::redact_url(&s.url),
            reason: format!(
                "sslmode `{m}`: one of disable, prefer, require, verify-ca, verify-full"
            ),
        })?;
        opts = opts.ssl_mode(mode);
    }
    // libpq: `require` with a root certificate verifies the chain, as `verify-ca`.
    let root_from_env = std::env::var_os("PGSSLROOTCERT").is_some();
    if matches!(opts.get_ssl_mode(), PgSslMode::Require) && (ca.is_some() || root_from_env) {
        opts = opts.ssl_mode(PgSslMode::VerifyCa);
    }
    if let Some(file) = &s.password_file {
        let pw = crate::config::secrets::load_secret(Some(file), "", "database password")
            .map_err(|e| DbError::Password(e.to_string()))?;
        if let Some(pw) = pw {
            opts = opts.password(pw.expose_secret());
        }
    }
    Ok(opts)
}

/// Whether `opts` may talk to the server in clear: TLS off, or only preferred (a server that
/// offers none is used without).
pub(super) fn may_be_plain(opts: &PgConnectOptions) -> bool {
    matches!(
        opts.get_ssl_mode(),
        PgSslMode::Disable | PgSslMode::Allow | PgSslMode::Prefer
    )
}

/// Whether the host of `opts` is this machine (loopback or a Unix socket).
pub(super) fn is_local(opts: &PgConnectOptions) -> bool {
    opts.get_socket().is_some() || crate::tls::is_local(opts.get_host())
}

/// A refused TLS handshake told with what the server's certificate holds (sqlx's own check
/// names no issuer): looked at once more, within the connect timeout.
pub(super) async fn explained<T>(
    r: Result<T, DbError>,
    s: &DatabaseSettings,
) -> Result<T, DbError> {
    let e = match r {
        Err(DbError::Sql {
            action,
            place,
            cause,
        }) => match super::error::refused(&cause) {
            Some(refusal) => (action, place, refusal),
            None => {
                return Err(DbError::Sql {
                    action,
                    place,
                    cause,
                })
            }
        },
        other => return other,
    };
    let (action, place, mut refusal) = e;
    if let Ok(opts) = super::options(s) {
        let (host, port) = (opts.get_host().to_owned(), opts.get_port());
        if let Some((issuer, names)) =
            crate::tls::postgres_certificate(&host, port, s.connect_timeout.get()).await
        {
            refusal = refusal.presenting(&issuer, &names);
        }
    }
    Err(DbError::TlsRefused {
        action,
        place: place.unwrap_or_default(),
        line: refusal.short("database"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> DatabaseSettings {
        DatabaseSettings {
            url: url.into(),
            ..DatabaseSettings::default()
        }
    }

    #[test]
    fn the_mode_comes_from_the_setting_else_the_url() {
        let s = settings("postgres://u@db.internal/a?sslmode=verify-full");
        let o = apply(s.url.parse().expect("url"), &s).expect("apply");
        assert!(matches!(o.get_ssl_mode(), PgSslMode::VerifyFull));
        let mut s = settings("postgres://u@db.internal/a?sslmode=require");
        s.tls_mode = Some("disable".into());
        let o = apply(s.url.parse().expect("url"), &s).expect("apply");
        assert!(matches!(o.get_ssl_mode(), PgSslMode::Disable));
        assert!(may_be_plain(&o) && !is_local(&o));
    }

    #[test]
    fn a_missing_ca_file_is_named_by_its_setting() {
        let mut s = settings("postgres://u@127.0.0.1/a");
        s.tls_ca_file = Some("/nonexistent/ca.pem".into());
        let e = apply(s.url.parse().expect("url"), &s).expect_err("no file");
        assert!(e.to_string().contains("database.tls_ca_file"), "{e}");
        let s = settings("postgres://u@127.0.0.1/a?sslrootcert=/nonexistent/ca.pem");
        let e = apply(s.url.parse().expect("url"), &s).expect_err("no file");
        assert!(e.to_string().contains("sslrootcert in database.url"), "{e}");
        let mut s = settings("postgres://u@127.0.0.1/a");
        s.tls_cert_file = Some("/x".into());
        let e = apply(s.url.parse().expect("url"), &s).expect_err("half");
        assert!(e.to_string().contains("database.tls_key_file"), "{e}");
    }
}
