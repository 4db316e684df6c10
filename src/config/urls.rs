//! The database and NATS URLs: whether one is usable, and the redaction every message, log
//! line and report uses (credentials and query strings never shown).

/// Why a PostgreSQL URL is unusable, if it is.
pub(crate) fn database_url_problem(url: &str) -> Option<&'static str> {
    let Ok(u) = url::Url::parse(url) else {
        return Some("not a URL (expected postgres://USER@HOST:PORT/DATABASE)");
    };
    if !matches!(u.scheme(), "postgres" | "postgresql") {
        return Some("the scheme must be postgres:// or postgresql://");
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Some("the URL names no host (expected postgres://USER@HOST:PORT/DATABASE)");
    }
    if u.path().trim_start_matches('/').is_empty() {
        return Some("the URL names no database (expected postgres://USER@HOST:PORT/DATABASE)");
    }
    None
}

/// Why a NATS URL (or comma-separated list) is unusable, if it is.
pub(crate) fn nats_url_problem(url: &str) -> Option<&'static str> {
    for part in url.split(',') {
        let part = part.trim();
        let with_scheme = if part.contains("://") {
            part.to_owned()
        } else {
            format!("nats://{part}")
        };
        let Ok(u) = url::Url::parse(&with_scheme) else {
            return Some("not a NATS URL (expected nats://HOST:PORT)");
        };
        if !matches!(u.scheme(), "nats" | "tls" | "ws" | "wss") {
            return Some("the scheme must be nats://, tls://, ws:// or wss://");
        }
        if u.host_str().is_none_or(str::is_empty) {
            return Some("the URL names no host");
        }
    }
    None
}

/// A database URL without its password and query string (`?password=` is valid for libpq).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            if u.query().is_some() {
                u.set_query(Some("..."));
            }
            u.to_string()
        }
        Err(_) => "<unparsable URL>".into(),
    }
}

/// A NATS URL (or comma-separated list) with any credentials replaced.
pub fn redact_nats_url(url: &str) -> String {
    url.split(',')
        .map(|part| {
            let part = part.trim();
            let with_scheme = if part.contains("://") {
                part.to_owned()
            } else {
                format!("nats://{part}")
            };
            match url::Url::parse(&with_scheme) {
                Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
                    let _ = u.set_username("***");
                    let _ = u.set_password(None);
                    u.to_string()
                }
                Ok(u) => u.to_string(),
                Err(_) => "<unparsable NATS URL>".to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_survive_redaction() {
        let r = redact_nats_url("nats://user:secret@h1:4222, nats://h2:4222");
        assert!(!r.contains("secret") && !r.contains("user"), "{r}");
        assert!(r.contains("h2"), "{r}");
        let d = redact_url("postgres://u:pw@h/db?password=hunter2");
        assert!(!d.contains("pw") && !d.contains("hunter2"), "{d}");
    }
}
