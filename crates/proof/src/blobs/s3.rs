//! The S3 driver: GET, HEAD, PUT and DELETE of objects under a bucket's prefix, each request
//! signed with SigV4 (`super::sigv4`) and bounded by `object_store.request_timeout`
//! (connecting included), never following a redirect. A create is a PUT with
//! `If-None-Match: *`: a 412 (or a 409 while another write of the key is in flight) is answered
//! by reading what is there, the same bytes being `Same` and other bytes a conflict. A retention lock is S3 Object
//! Lock in compliance mode (`x-amz-object-lock-*`, with the body's SHA-256 checksum S3 asks for).
//! Credentials come from files or the environment and never reach a message: the server's
//! error text is reduced to its `Code` and `Message`, with any credential scrubbed from them.

mod reply;

use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};

use super::sigv4::{self, Signer};
use super::url::{endpoint, host_header, object_url};
use super::{BlobError, Head, Mode, Put, Wrote};
use crate::config::secrets::load_secret;
use crate::config::ObjectStoreSettings;

/// Connecting may take this long at most, within a request's timeout.
const MAX_CONNECT: Duration = Duration::from_secs(10);

/// The environment variables of the credentials (as every AWS client reads them).
pub const ACCESS_KEY_ENV: &str = "AWS_ACCESS_KEY_ID";
pub const SECRET_KEY_ENV: &str = "AWS_SECRET_ACCESS_KEY";
pub const SESSION_TOKEN_ENV: &str = "AWS_SESSION_TOKEN";

/// An access key and its secret (and a session token with temporary credentials).
pub struct Credentials {
    access_key_id: SecretString,
    secret_access_key: SecretString,
    session_token: Option<SecretString>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(***)")
    }
}

impl Credentials {
    /// From `object_store.*_file`, else `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN`. The message of a failure names where, never the value.
    pub fn load(s: &ObjectStoreSettings) -> Result<Credentials, String> {
        let id = load_secret(
            s.access_key_id_file.as_ref(),
            ACCESS_KEY_ENV,
            "S3 access key id",
        );
        let secret = load_secret(
            s.secret_access_key_file.as_ref(),
            SECRET_KEY_ENV,
            "S3 secret access key",
        );
        let token = load_secret(
            s.session_token_file.as_ref(),
            SESSION_TOKEN_ENV,
            "S3 session token",
        );
        let e = |e: crate::config::secrets::SecretError| e.to_string();
        match (id.map_err(e)?, secret.map_err(e)?, token.map_err(e)?) {
            (Some(id), Some(secret), token) => Ok(Credentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: token,
            }),
            _ => Err(format!(
                "no S3 credentials: set {ACCESS_KEY_ENV} and {SECRET_KEY_ENV} (and {SESSION_TOKEN_ENV} for temporary ones), or object_store.access_key_id_file and object_store.secret_access_key_file"
            )),
        }
    }

    /// The credential strings, which no message may hold.
    fn secrets(&self) -> [&str; 3] {
        [
            self.access_key_id.expose_secret(),
            self.secret_access_key.expose_secret(),
            self.session_token
                .as_ref()
                .map_or("", |t| t.expose_secret()),
        ]
    }
}

/// A bucket (and a prefix in it) of an S3-compatible store.
#[derive(Debug)]
pub struct S3Store {
    http: reqwest::Client,
    base: url::Url,
    bucket: String,
    prefix: String,
    path_style: bool,
    region: String,
    creds: Credentials,
    timeout: Duration,
    place: String,
    /// The endpoint's TLS settings, for the message of a refused certificate.
    tls: crate::tls::Peer,
    /// `object_store.conditional_writes = "read-first"`: a create reads the key first and back.
    read_first: bool,
}

/// One request: what, where, and what it carries.
struct Call<'a> {
    op: &'static str,
    method: Method,
    /// The key under the prefix; `None` for the bucket itself.
    key: Option<&'a str>,
    query: &'a [(&'a str, &'a str)],
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl S3Store {
    pub fn new(
        bucket: &str,
        prefix: &str,
        s: &ObjectStoreSettings,
        creds: Credentials,
    ) -> Result<S3Store, BlobError> {
        let place = format!("s3://{bucket}/{prefix}");
        let setup = |why: String| BlobError::Setup {
            place: place.clone(),
            why,
        };
        let base = endpoint(s.endpoint.as_deref(), &s.region).map_err(setup)?;
        let timeout = s.request_timeout.get();
        let tls = crate::tls::Peer::new(
            "the object store",
            "object_store",
            s.tls_ca_file.as_ref(),
            s.tls_cert_file.as_ref(),
            s.tls_key_file.as_ref(),
        );
        let http = crate::tls::https_client(&tls)
            .map_err(|e| setup(e.to_string()))?
            .timeout(timeout)
            .connect_timeout(timeout.min(MAX_CONNECT))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| setup(format!("the HTTP client: {e}")))?;
        Ok(S3Store {
            place: format!("{place} at {}", crate::config::redact_url(base.as_str())),
            http,
            base,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            path_style: s.path_style,
            region: s.region.clone(),
            creds,
            timeout,
            tls,
            read_first: false,
        })
    }

    /// The same, each create read first and read back (`object_store.conditional_writes =
    /// "read-first"`), for a store that ignores `If-None-Match: *`.
    pub fn reading_first(self, on: bool) -> S3Store {
        S3Store {
            read_first: on,
            ..self
        }
    }

    pub fn reads_first(&self) -> bool {
        self.read_first
    }

    pub fn place(&self) -> &str {
        &self.place
    }

    pub async fn get(&self, key: &str, max: u64) -> Result<Option<Bytes>, BlobError> {
        let resp = self.send(Call::new("get", Method::GET, Some(key))).await?;
        match resp.status().as_u16() {
            200 => reply::read_bounded(self, "get", key, resp, max)
                .await
                .map(Some),
            404 => self.absent("get", key, resp).await,
            _ => Err(self.refused("get", key, resp, false).await),
        }
    }

    pub async fn head(&self, key: &str) -> Result<Option<Head>, BlobError> {
        let resp = self
            .send(Call::new("head", Method::HEAD, Some(key)))
            .await?;
        match resp.status().as_u16() {
            200 => Ok(Some(reply::head_of(resp.headers()))),
            404 => Ok(None),
            _ => Err(self.refused("head", key, resp, false).await),
        }
    }

    pub async fn put(&self, key: &str, bytes: Bytes, how: &Put<'_>) -> Result<Wrote, BlobError> {
        if self.read_first && how.mode == Mode::Create {
            return self.put_read_first(key, bytes, how).await;
        }
        self.put_conditional(key, bytes, how).await
    }

    /// A create on a store that may ignore `If-None-Match: *`: the key read first (the same
    /// bytes: done; other bytes: a conflict), then put (with the condition still, for a store
    /// that keeps it), then read back: other bytes there then are a conflict too (another writer
    /// raced this one; which bytes stay is the store's last put).
    async fn put_read_first(
        &self,
        key: &str,
        bytes: Bytes,
        how: &Put<'_>,
    ) -> Result<Wrote, BlobError> {
        let conflict = || BlobError::Conflict {
            place: self.place.clone(),
            key: key.to_owned(),
        };
        match self.get(key, bytes.len() as u64).await {
            Ok(Some(old)) if old == bytes => return Ok(Wrote::Same),
            Ok(Some(_)) | Err(BlobError::TooLarge { .. }) => return Err(conflict()),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
        let wrote = self.put_conditional(key, bytes.clone(), how).await?;
        match self.get(key, bytes.len() as u64).await {
            Ok(Some(back)) if back == bytes => Ok(wrote),
            Ok(Some(_)) | Err(BlobError::TooLarge { .. }) => Err(conflict()),
            Ok(None) => Err(self.http_error(
                "put",
                key,
                200,
                "NotThereAfterPut".into(),
                "the store answered the put but the read back found nothing: try again".into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// One PUT as `how` says: a create with `If-None-Match: *`, answered by comparing what is
    /// there when the store refuses it.
    pub async fn put_conditional(
        &self,
        key: &str,
        bytes: Bytes,
        how: &Put<'_>,
    ) -> Result<Wrote, BlobError> {
        let mut call = Call::new("put", Method::PUT, Some(key));
        let kind = how.content_type.unwrap_or("application/octet-stream");
        call.headers.push(("content-type".into(), kind.into()));
        if let Some(cc) = how.cache_control {
            call.headers.push(("cache-control".into(), cc.into()));
        }
        if how.mode == Mode::Create {
            call.headers.push(("if-none-match".into(), "*".into()));
        }
        if let Some(until) = how.lock_until {
            use base64::Engine;
            use sha2::Digest;
            let sum =
                base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&bytes));
            call.headers.extend([
                ("x-amz-object-lock-mode".into(), "COMPLIANCE".into()),
                (
                    "x-amz-object-lock-retain-until-date".into(),
                    until.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
                ),
                ("x-amz-sdk-checksum-algorithm".into(), "SHA256".into()),
                ("x-amz-checksum-sha256".into(), sum),
            ]);
        }
        call.body = bytes.clone();
        let resp = self.send(call).await?;
        let status = resp.status().as_u16();
        match status {
            200 | 201 | 204 if how.lock_until.is_some() => self.check_locked(key).await,
            200 | 201 | 204 => Ok(Wrote::New),
            412 | 409 if how.mode == Mode::Create => {
                let code = reply::error_of(self, resp).await.0;
                if status == 409 && code != "ConditionalRequestConflict" {
                    return Err(self.http_error("put", key, status, code, String::new()));
                }
                self.compare(key, &bytes, status).await
            }
            _ => Err(self
                .refused("put", key, resp, how.lock_until.is_some())
                .await),
        }
    }

    /// After a locked put: a store that ignores Object Lock takes the object without its
    /// retention date (s3s-fs does), which must not pass for a lock.
    async fn check_locked(&self, key: &str) -> Result<Wrote, BlobError> {
        match self.head(key).await? {
            Some(h) if h.lock_until.is_some() => Ok(Wrote::New),
            _ => Err(BlobError::Unsupported {
                place: self.place.clone(),
                what: "a retention lock (S3 Object Lock)",
                why: "the store took the object but keeps no retention date for it: it ignores Object Lock, and the object is stored unlocked".into(),
            }),
        }
    }

    /// After a refused create: what is there is the same bytes, or a conflict; nothing there
    /// yet (the other write still in flight) is an error to try again.
    async fn compare(&self, key: &str, bytes: &[u8], status: u16) -> Result<Wrote, BlobError> {
        match self.get(key, bytes.len() as u64).await {
            Ok(Some(old)) if old == bytes => Ok(Wrote::Same),
            Ok(None) => Err(self.http_error(
                "put",
                key,
                status,
                "PreconditionFailed".into(),
                "another write of the key is in flight and nothing is there yet: try the put again"
                    .into(),
            )),
            Ok(Some(_)) | Err(BlobError::TooLarge { .. }) => Err(BlobError::Conflict {
                place: self.place.clone(),
                key: key.to_owned(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Deletes the current version (by its id in a bucket that keeps versions, so that a
    /// locked version is refused rather than hidden behind a delete marker).
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let resp = self
            .send(Call::new("delete", Method::HEAD, Some(key)))
            .await?;
        let version = match resp.status().as_u16() {
            200 => resp
                .headers()
                .get("x-amz-version-id")
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty() && *v != "null")
                .map(str::to_owned),
            404 => return Ok(()),
            _ => return Err(self.refused("delete", key, resp, false).await),
        };
        let query = version.as_deref().map(|v| [("versionId", v)]);
        let mut call = Call::new("delete", Method::DELETE, Some(key));
        call.query = query.as_ref().map_or(&[], |q| q.as_slice());
        let resp = self.send(call).await?;
        match resp.status().as_u16() {
            200 | 204 | 404 => Ok(()),
            403 if version.is_some() => {
                let (code, _) = reply::error_of(self, resp).await;
                if code == "AccessDenied" {
                    Err(BlobError::Locked {
                        place: self.place.clone(),
                        key: key.to_owned(),
                    })
                } else {
                    Err(self.denied("delete", key, code))
                }
            }
            _ => Err(self.refused("delete", key, resp, false).await),
        }
    }

    /// Creates the bucket (with Object Lock, which turns versioning on, when `lock`): for tests
    /// and first set-ups. Already owning it is no error.
    pub async fn create_bucket(&self, lock: bool) -> Result<(), BlobError> {
        let mut call = Call::new("create bucket", Method::PUT, None);
        if lock {
            call.headers
                .push(("x-amz-bucket-object-lock-enabled".into(), "true".into()));
        }
        if self.region != "us-east-1" {
            call.body = Bytes::from(format!(
                "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
                self.region
            ));
        }
        let resp = self.send(call).await?;
        if resp.status().is_success() {
            return Ok(());
        }
        let status = resp.status().as_u16();
        let (code, message) = reply::error_of(self, resp).await;
        match code.as_str() {
            "BucketAlreadyOwnedByYou" => Ok(()),
            _ => Err(self.http_error("create bucket", "", status, code, message)),
        }
    }

    /// Deletes the (empty) bucket: for tests.
    pub async fn delete_bucket(&self) -> Result<(), BlobError> {
        let resp = self
            .send(Call::new("delete bucket", Method::DELETE, None))
            .await?;
        match resp.status().as_u16() {
            200 | 204 | 404 => Ok(()),
            _ => Err(self.refused("delete bucket", "", resp, false).await),
        }
    }

    /// Signs and sends one request; a timeout or an unreachable store named as such.
    async fn send(&self, call: Call<'_>) -> Result<reqwest::Response, BlobError> {
        let key = call.key.unwrap_or("");
        let path = match call.key {
            Some(k) => format!("/{}", sigv4::encode_path(&format!("{}{k}", self.prefix))),
            None => String::new(),
        };
        let mut u = object_url(&self.base, &self.bucket, &path, self.path_style)
            .map_err(|why| self.unreachable(call.op, key, why))?;
        let query: Vec<String> = call
            .query
            .iter()
            .map(|(k, v)| format!("{}={}", sigv4::encode(k, true), sigv4::encode(v, true)))
            .collect();
        u.set_query((!query.is_empty()).then(|| query.join("&")).as_deref());
        let payload = sigv4::sha256_hex(&call.body);
        let amz_date = Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
        let mut headers = call.headers;
        headers.extend([
            ("host".to_owned(), host_header(&u)),
            ("x-amz-date".to_owned(), amz_date.clone()),
            ("x-amz-content-sha256".to_owned(), payload.clone()),
        ]);
        if let Some(t) = &self.creds.session_token {
            headers.push(("x-amz-security-token".into(), t.expose_secret().to_owned()));
        }
        let auth = sigv4::authorization(
            &Signer {
                access_key_id: self.creds.access_key_id.expose_secret(),
                secret_access_key: self.creds.secret_access_key.expose_secret(),
                region: &self.region,
                amz_date: &amz_date,
            },
            &sigv4::Request {
                method: call.method.as_str(),
                path: u.path(),
                query: call.query,
                headers: &headers,
                payload_sha256: &payload,
            },
        );
        let mut req = self.http.request(call.method, u.clone());
        for (k, v) in headers.iter().filter(|(k, _)| k != "host") {
            req = req.header(k.as_str(), v.as_str());
        }
        req.header("authorization", auth)
            .body(call.body)
            .send()
            .await
            .map_err(|e| self.transport(call.op, key, &e))
    }
}

impl<'a> Call<'a> {
    fn new(op: &'static str, method: Method, key: Option<&'a str>) -> Call<'a> {
        Call {
            op,
            method,
            key,
            query: &[],
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }
}
