//! Signed report links: the browser's way into the protected reports. A browser cannot send a
//! bearer header, so the CLI prints short-lived links (`event-audit reconcile link`, and after
//! each run when `http.public_url` is set) whose query ends in `expires=<unix time>&sig=<hex>`,
//! the HMAC-SHA256 of `GET <path>?<query before sig>` keyed by the report token. A valid link
//! opens its page and sets a session cookie (`HttpOnly; SameSite=Strict; Path=/`) that expires
//! with the link, so the page's own links (timelines, changes, history) open too. Links and
//! cookies are checked in constant time and live at most a day.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

use crate::row::hex;

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "event_audit_session";

/// No link or session is valid further ahead than this.
pub(crate) const MAX_TTL: Duration = Duration::days(1);

fn mac(token: &SecretString, purpose: &str, message: &str) -> Hmac<Sha256> {
    // HMAC accepts keys of any length: `new_from_slice` cannot fail.
    let mut m = Hmac::<Sha256>::new_from_slice(token.expose_secret().as_bytes())
        .unwrap_or_else(|_| unreachable!());
    m.update(purpose.as_bytes());
    m.update(b"\n");
    m.update(message.as_bytes());
    m
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `path_and_query` (e.g. `/reports/reconciliation?run=7&format=html`) signed until
/// `expires`.
pub(crate) fn sign(token: &SecretString, path_and_query: &str, expires: DateTime<Utc>) -> String {
    let sep = if path_and_query.contains('?') {
        '&'
    } else {
        '?'
    };
    let unsigned = format!("{path_and_query}{sep}expires={}", expires.timestamp());
    let sig = hex(&mac(token, "GET", &unsigned).finalize().into_bytes());
    format!("{unsigned}&sig={sig}")
}

/// A full link: `base` (the daemon's public URL) and the signed path, valid for `ttl`.
pub(crate) fn link(
    base: &str,
    token: &SecretString,
    path_and_query: &str,
    ttl: Duration,
    now: DateTime<Utc>,
) -> String {
    let expires = now + ttl.min(MAX_TTL);
    format!(
        "{}{}",
        base.trim_end_matches('/'),
        sign(token, path_and_query, expires)
    )
}

/// When a signed request to `path` with raw `query` expires, if its signature holds and it
/// has not expired.
pub(crate) fn verify_link(
    token: &SecretString,
    path: &str,
    query: &str,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let (unsigned, sig) = query.rsplit_once("&sig=")?;
    let expires: i64 = unsigned
        .split('&')
        .filter_map(|kv| kv.strip_prefix("expires="))
        .next_back()?
        .parse()
        .ok()?;
    let expires = DateTime::from_timestamp(expires, 0)?;
    if expires <= now || expires > now + MAX_TTL {
        return None;
    }
    let given = unhex(sig)?;
    mac(token, "GET", &format!("{path}?{unsigned}"))
        .verify_slice(&given)
        .ok()?;
    Some(expires)
}

/// The `Set-Cookie` value of a session that ends at `expires`.
pub(crate) fn session_cookie(
    token: &SecretString,
    expires: DateTime<Utc>,
    now: DateTime<Utc>,
) -> String {
    let at = expires.timestamp();
    let sig = hex(&mac(token, "session", &at.to_string())
        .finalize()
        .into_bytes());
    format!(
        "{SESSION_COOKIE}={at}.{sig}; Max-Age={}; Path=/; HttpOnly; SameSite=Strict",
        (expires - now).num_seconds().max(0)
    )
}

/// Whether a `Cookie` header holds a valid, unexpired session.
pub(crate) fn session_ok(token: &SecretString, cookie_header: &str, now: DateTime<Utc>) -> bool {
    cookie_header
        .split(';')
        .filter_map(|c| c.trim().strip_prefix(SESSION_COOKIE)?.strip_prefix('='))
        .any(|value| {
            let Some((at, sig)) = value.split_once('.') else {
                return false;
            };
            let (Ok(secs), Some(given)) = (at.parse::<i64>(), unhex(sig)) else {
                return false;
            };
            let Some(expires) = DateTime::from_timestamp(secs, 0) else {
                return false;
            };
            expires > now
                && expires <= now + MAX_TTL
                && mac(token, "session", at).verify_slice(&given).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    #[test]
    fn a_signed_link_opens_only_its_page_until_it_expires() {
        let t = SecretString::from("report-token");
        let url = link(
            "http://h:1/",
            &t,
            "/reports/reconciliation?run=7&format=html",
            Duration::minutes(15),
            now(),
        );
        let (path, query) = url
            .strip_prefix("http://h:1")
            .and_then(|u| u.split_once('?'))
            .expect("a path and a query");
        assert_eq!(path, "/reports/reconciliation");
        let expires = verify_link(&t, path, query, now()).expect("valid");
        assert_eq!(expires, now() + Duration::minutes(15));
        assert!(verify_link(&t, path, query, now() + Duration::minutes(16)).is_none());
        assert!(verify_link(&t, "/reports/reconciliation/runs", query, now()).is_none());
        let other = query.replace("run=7", "run=8");
        assert!(verify_link(&t, path, &other, now()).is_none());
        let wrong = SecretString::from("other-token");
        assert!(verify_link(&wrong, path, query, now()).is_none());
        assert!(verify_link(&t, path, "run=7&format=html", now()).is_none());
    }

    #[test]
    fn sessions_expire_and_cannot_be_forged() {
        let t = SecretString::from("report-token");
        let set = session_cookie(&t, now() + Duration::minutes(10), now());
        assert!(
            set.contains("HttpOnly")
                && set.contains("SameSite=Strict")
                && set.contains("Max-Age=600")
        );
        let cookie = set.split(';').next().expect("name=value");
        assert!(session_ok(&t, &format!("a=b; {cookie}"), now()));
        assert!(!session_ok(&t, cookie, now() + Duration::minutes(11)));
        let forged = format!(
            "{SESSION_COOKIE}={}.00",
            (now() + Duration::minutes(10)).timestamp()
        );
        assert!(!session_ok(&t, &forged, now()));
        assert!(!session_ok(&SecretString::from("x"), cookie, now()));
    }
}
