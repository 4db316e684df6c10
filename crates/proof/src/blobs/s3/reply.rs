//! What an S3 answer means: a body read no further than its bound, an object's stored
//! headers, and a refusal turned into one [`BlobError`] line: the server's `Code` and
//! `Message` (read from at most 64 KiB of its XML, reduced to one short line, any credential
//! scrubbed), a 403 named as refused credentials, a timeout as a timeout.

use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Utc};

use super::S3Store;
use crate::blobs::{BlobError, Head};

/// The most of an error body read.
const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The longest server message quoted.
const MAX_MESSAGE: usize = 300;

/// The body of `resp`, refused past `max` bytes (by its `Content-Length`, and by what arrives,
/// whatever the header said).
pub(super) async fn read_bounded(
    s: &S3Store,
    op: &'static str,
    key: &str,
    mut resp: reqwest::Response,
    max: u64,
) -> Result<Bytes, BlobError> {
    let too_large = || BlobError::TooLarge {
        place: s.place.clone(),
        key: key.to_owned(),
        max,
    };
    if resp.content_length().is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| s.transport(op, key, &e))? {
        if (buf.len() + chunk.len()) as u64 > max {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// The object's length, `Cache-Control` and retention date, from its headers.
pub(super) fn head_of(h: &reqwest::header::HeaderMap) -> Head {
    let text = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Head {
        len: text("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        cache_control: text("cache-control"),
        lock_until: text("x-amz-object-lock-retain-until-date")
            .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
            .map(|d| d.with_timezone(&Utc)),
    }
}

/// The `Code` and `Message` of an S3 error body (empty when there is none), scrubbed.
pub(super) async fn error_of(s: &S3Store, resp: reqwest::Response) -> (String, String) {
    let body = read_bounded(s, "read the error of", "", resp, MAX_ERROR_BODY)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let code: String = tag(&text, "Code")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(64)
        .collect();
    let mut message: String = tag(&text, "Message")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for secret in s.creds.secrets().into_iter().filter(|x| !x.is_empty()) {
        message = message.replace(secret, "***");
    }
    let message = message.chars().take(MAX_MESSAGE).collect();
    (code, message)
}

/// The text of the first `<name>…</name>` in `xml`.
fn tag<'a>(xml: &'a str, name: &str) -> &'a str {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    xml.find(&open)
        .map(|i| &xml[i + open.len()..])
        .and_then(|rest| rest.find(&close).map(|j| &rest[..j]))
        .unwrap_or("")
}

impl S3Store {
    /// A 404: no such key is `None`, anything else (no such bucket) an error.
    pub(super) async fn absent<T>(
        &self,
        op: &'static str,
        key: &str,
        resp: reqwest::Response,
    ) -> Result<Option<T>, BlobError> {
        let (code, message) = error_of(self, resp).await;
        match code.as_str() {
            "" | "NoSuchKey" => Ok(None),
            _ => Err(self.http_error(op, key, 404, code, message)),
        }
    }

    /// Any other answer than the ones the operation expects. `locking`: the put asked for a
    /// retention lock, so a 400 `InvalidRequest` or a 501 means the bucket cannot hold one.
    pub(super) async fn refused(
        &self,
        op: &'static str,
        key: &str,
        resp: reqwest::Response,
        locking: bool,
    ) -> BlobError {
        let status = resp.status().as_u16();
        let redirect = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(|l| {
                crate::config::redact_url(l)
                    .chars()
                    .take(200)
                    .collect::<String>()
            });
        let (code, message) = error_of(self, resp).await;
        match (status, code.as_str()) {
            (403, _) | (400, "AuthorizationHeaderMalformed") | (400, "InvalidToken") => {
                self.denied(op, key, if code.is_empty() { format!("HTTP {status}") } else { code })
            }
            (400, "InvalidRequest") | (501, _) if locking => BlobError::Unsupported {
                place: self.place.clone(),
                what: "a retention lock (S3 Object Lock)",
                why: if message.is_empty() { code } else { message },
            },
            (300..=399, _) => self.http_error(
                op,
                key,
                status,
                code,
                format!(
                    "a redirect (to {}), not followed: check object_store.endpoint, object_store.region and object_store.path_style. {message}",
                    redirect.as_deref().unwrap_or("no location")
                ),
            ),
            _ => self.http_error(op, key, status, code, message),
        }
    }

    pub(super) fn denied(&self, op: &'static str, key: &str, code: String) -> BlobError {
        BlobError::Denied {
            place: self.place.clone(),
            op,
            key: key.to_owned(),
            code,
        }
    }

    pub(super) fn http_error(
        &self,
        op: &'static str,
        key: &str,
        status: u16,
        code: String,
        message: String,
    ) -> BlobError {
        BlobError::Http {
            place: self.place.clone(),
            op,
            key: key.to_owned(),
            status,
            code,
            message,
        }
    }

    pub(super) fn unreachable(&self, op: &'static str, key: &str, why: String) -> BlobError {
        BlobError::Unreachable {
            place: self.place.clone(),
            op,
            key: key.to_owned(),
            why,
        }
    }

    /// A request that got no answer: timed out, or the store not reached.
    pub(super) fn transport(&self, op: &'static str, key: &str, e: &reqwest::Error) -> BlobError {
        if e.is_timeout() {
            return BlobError::Timeout {
                place: self.place.clone(),
                op,
                key: key.to_owned(),
                after: self.timeout,
            };
        }
        if let Some(r) = crate::tls::refusal(e) {
            return BlobError::Tls {
                line: self.tls.refused(&r, &self.place),
            };
        }
        let mut why = String::new();
        let mut cause: Option<&dyn std::error::Error> = Some(e);
        while let Some(c) = cause {
            let text = c.to_string();
            if !why.contains(&text) {
                if !why.is_empty() {
                    why.push_str(": ");
                }
                why.push_str(&text);
            }
            cause = c.source();
        }
        let why = crate::config::urls::hide_credentials(&why);
        self.unreachable(op, key, why)
    }
}
