//! How the daemon authenticates to NATS: exactly one way (user and password, token, NKey seed,
//! `.creds` file), each from a file or the environment, or from a URL's user info, which is
//! taken out of the URL (async-nats would ignore it and log it); TLS with a CA file and client
//! certificates.

use secrecy::ExposeSecret;

use super::BusError;
use crate::config::secrets::{self, NATS_PASSWORD_ENV, NATS_TOKEN_ENV};
use crate::config::NatsSettings;

/// Credentials found in a NATS URL's user info.
enum UrlAuth {
    UserPassword(String, String),
    Token(String),
}

/// `%XX` sequences decoded (user info of a URL).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The URL list without user info, and the credentials it held (async-nats ignores them and
/// would log them).
fn split_credentials(urls: &str) -> (String, Option<UrlAuth>) {
    let mut auth = None;
    let parts: Vec<String> = urls
        .split(',')
        .map(|part| {
            let part = part.trim();
            if !part.contains('@') {
                return part.to_owned();
            }
            let with_scheme = if part.contains("://") {
                part.to_owned()
            } else {
                format!("nats://{part}")
            };
            let Ok(mut u) = url::Url::parse(&with_scheme) else {
                return part.to_owned();
            };
            let user = percent_decode(u.username());
            let found = match u.password() {
                Some(p) => Some(UrlAuth::UserPassword(user, percent_decode(p))),
                None if !user.is_empty() => Some(UrlAuth::Token(user)),
                None => None,
            };
            if auth.is_none() {
                auth = found;
            }
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        })
        .collect();
    (parts.join(","), auth)
}

/// The connect options for `s`: exactly one way of authenticating (or none), TLS as asked.
pub(super) async fn connect_options(
    s: &NatsSettings,
) -> Result<(String, async_nats::ConnectOptions), BusError> {
    let (url, from_url) = split_credentials(&s.url);
    // The first connection is routine (DEBUG); a reconnection follows a WARN, so it is INFO.
    let was_connected = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut o = async_nats::ConnectOptions::new()
        .name("event-audit")
        .connection_timeout(s.connect_timeout.get())
        .event_callback(move |event| {
            let again = matches!(event, async_nats::Event::Connected)
                && was_connected.swap(true, std::sync::atomic::Ordering::Relaxed);
            async move {
                match event {
                    async_nats::Event::Connected if again => tracing::info!("NATS reconnected"),
                    async_nats::Event::Connected => tracing::debug!("NATS connected"),
                    async_nats::Event::Disconnected => {
                        tracing::warn!("NATS disconnected; reconnecting")
                    }
                    // A clean close (the command is done, or the daemon stops): nothing to act on.
                    async_nats::Event::Closed => tracing::debug!("NATS connection closed"),
                    other => tracing::warn!(event = %other, "NATS connection event"),
                }
            }
        });
    let mut ways = Vec::new();
    match from_url {
        Some(UrlAuth::UserPassword(user, pass)) => {
            ways.push("a user and password in the URL");
            o = o.user_and_password(user, pass);
        }
        Some(UrlAuth::Token(token)) => {
            ways.push("a token in the URL");
            o = o.token(token);
        }
        None => {}
    }
    if let Some(user) = &s.user {
        let pass =
            secrets::load_secret(s.password_file.as_ref(), NATS_PASSWORD_ENV, "NATS password")?
                .ok_or_else(|| {
                    BusError::Credentials(format!(
                        "user `{user}` has no password: set NATS_PASSWORD or --nats-password-file"
                    ))
                })?;
        ways.push("nats.user");
        o = o.user_and_password(user.clone(), pass.expose_secret().to_owned());
    }
    if let Some(token) = secrets::load_secret(s.token_file.as_ref(), NATS_TOKEN_ENV, "NATS token")?
    {
        ways.push("a token (nats.token_file or NATS_TOKEN)");
        o = o.token(token.expose_secret().to_owned());
    }
    if let Some(path) = &s.nkey_file {
        let seed = secrets::load_secret(Some(path), "", "NATS NKey seed")?
            .ok_or_else(|| BusError::Credentials("the NKey seed file is empty".into()))?;
        ways.push("nats.nkey_file");
        o = o.nkey(seed.expose_secret().to_owned());
    }
    if let Some(path) = &s.creds_file {
        ways.push("nats.creds_file");
        o = o.credentials_file(path).await.map_err(|e| {
            BusError::Credentials(format!("reading the .creds file {}: {e}", path.display()))
        })?;
    }
    if ways.len() > 1 {
        return Err(BusError::Credentials(format!(
            "give one way of authenticating, not {}",
            ways.join(" and ")
        )));
    }
    if let Some(ca) = &s.tls_ca_file {
        o = o.require_tls(true).add_root_certificates(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&s.tls_cert_file, &s.tls_key_file) {
        o = o
            .require_tls(true)
            .add_client_certificate(cert.clone(), key.clone());
    }
    Ok((url, o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url() {
        let (url, auth) = split_credentials("nats://us%40er:p%3Ass@h1:4222, nats://h2:4222");
        assert_eq!(url, "nats://h1:4222,nats://h2:4222");
        match auth {
            Some(UrlAuth::UserPassword(u, p)) => {
                assert_eq!((u.as_str(), p.as_str()), ("us@er", "p:ss"))
            }
            _ => panic!("user and password expected"),
        }
        let (url, auth) = split_credentials("tls://s3cr3t@h:4222");
        assert_eq!(url, "tls://h:4222");
        assert!(matches!(auth, Some(UrlAuth::Token(t)) if t == "s3cr3t"));
        let (url, auth) = split_credentials("127.0.0.1:4222");
        assert_eq!(url, "127.0.0.1:4222");
        assert!(auth.is_none());
    }
}
