//! The object store's settings (`[object_store]`): where an S3-compatible store is reached
//! (endpoint, region, path-style or virtual-hosted addressing), the files holding its
//! credentials (else `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`), and
//! how long one request may take; and their validation. The credentials themselves are never
//! settings: only the files that hold them, so that no value, log line or `Debug` shows them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::options::section;
use super::validate::Check;
use super::{defaults, Dur};

section! {
    /// An S3-compatible store (AWS S3, MinIO, Ceph RGW, ...).
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ObjectStoreSettings in "object_store" {
        /// The store's address (`https://minio.internal:9000`): scheme, host and port; default
        /// AWS's regional endpoint, `https://s3.<region>.amazonaws.com`.
        pub endpoint: Option<String> = None,
        /// The region requests are signed for (`us-east-1` for most stores that are not AWS).
        pub region: String = defaults::OBJECT_STORE_REGION.into(),
        /// Address buckets as `endpoint/bucket/key` (most self-hosted stores) rather than
        /// `bucket.endpoint/key` (AWS's default).
        pub path_style: bool = false,
        /// File holding the access key id (else the environment variable AWS_ACCESS_KEY_ID).
        pub access_key_id_file: Option<PathBuf> = None,
        /// File holding the secret access key (else AWS_SECRET_ACCESS_KEY).
        pub secret_access_key_file: Option<PathBuf> = None,
        /// File holding a session token of temporary credentials (else AWS_SESSION_TOKEN).
        pub session_token_file: Option<PathBuf> = None,
        /// How long one request may take, connecting and the whole body included.
        pub request_timeout: Dur = defaults::OBJECT_STORE_REQUEST_TIMEOUT,
        /// CA certificate (PEM) of the store's endpoint, trusted besides the system's store and
        /// SSL_CERT_FILE.
        pub tls_ca_file: Option<PathBuf> = None,
        /// Client certificate (PEM) for a store that asks for one (with `tls_key_file`).
        pub tls_cert_file: Option<PathBuf> = None,
        /// The client certificate's private key (PEM).
        pub tls_key_file: Option<PathBuf> = None,
        /// `require` (the default): before the first write to a location, a probe object is
        /// created twice and the store must refuse the second create (`If-None-Match: *`); a
        /// store that takes it is refused. `read-first`: such a store is used, every create
        /// reading the key first and reading it back after the put (two writers racing on one
        /// key are then no longer excluded; a WARN at start says so).
        pub conditional_writes: ConditionalWrites = ConditionalWrites::Require,
    }
}

/// What a create relies on (`object_store.conditional_writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConditionalWrites {
    /// The store must refuse a second create of a key (proved by a probe before the first write).
    #[default]
    Require,
    /// A store that ignores `If-None-Match: *` is used: each create reads the key first (absent:
    /// put; the same bytes: done; other bytes: refused) and reads it back after the put.
    ReadFirst,
}

impl ObjectStoreSettings {
    /// An endpoint that is an http(s) URL of a host without credentials, path or query; a
    /// region of AWS's spelling; a timeout between 100 ms and 10 minutes.
    pub(super) fn check(&self, c: &mut Check) {
        if let Some(e) = &self.endpoint {
            if let Some(why) = endpoint_problem(e) {
                c.fail("object_store.endpoint", super::redact_url(e), why);
            } else if !self.path_style && on_ip_address(e) {
                c.fail(
                    "object_store.path_style",
                    "false",
                    format!("must be true for an endpoint on an IP address ({}): a bucket cannot be addressed as `bucket.<IP address>`; set path_style = true in [object_store] (EVENT_AUDIT_OBJECT_STORE_PATH_STYLE=true)", super::redact_url(e)),
                );
            }
        }
        let region_ok = !self.region.is_empty()
            && self.region.len() <= 32
            && self
                .region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !region_ok {
            c.fail(
                "object_store.region",
                &self.region,
                "lowercase letters, digits and `-` (e.g. us-east-1)",
            );
        }
        c.dur(
            "object_store.request_timeout",
            self.request_timeout,
            Dur::millis(100),
            Dur::secs(600),
        );
    }
}

/// Whether the endpoint `e` (a valid one) names its host by an IPv4 or IPv6 address.
fn on_ip_address(e: &str) -> bool {
    url::Url::parse(e).is_ok_and(|u| {
        matches!(
            u.host(),
            Some(url::Host::Ipv4(_)) | Some(url::Host::Ipv6(_))
        )
    })
}

/// Why `e` cannot be an endpoint.
pub fn endpoint_problem(e: &str) -> Option<&'static str> {
    let Ok(u) = url::Url::parse(e) else {
        return Some("an http:// or https:// URL (scheme, host and port)");
    };
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Some("an http:// or https:// URL (scheme, host and port)");
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Some("no credentials in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the object_store.*_file settings");
    }
    if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
        return Some("scheme, host and port only (the bucket and prefix go in s3://bucket/prefix)");
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::config::{Dur, Settings};

    fn refused(f: impl FnOnce(&mut Settings)) -> String {
        let mut s = Settings::default();
        f(&mut s);
        s.validate().expect_err("refused").to_string()
    }

    #[test]
    fn the_section_loads_and_its_values_are_checked() {
        let over: toml::Table = toml::from_str(
            "[object_store]\nendpoint = \"http://127.0.0.1:9000\"\nregion = \"eu-west-1\"\npath_style = true\nsecret_access_key_file = \"/run/secrets/s3\"\nrequest_timeout = \"5s\"\n",
        )
        .expect("toml");
        let s = crate::config::layer::apply(Settings::default(), over).expect("apply");
        assert_eq!(s.validate(), Ok(()));
        assert!(s.object_store.path_style);
        assert_eq!(s.object_store.request_timeout, Dur::secs(5));
        let err = refused(|s| {
            s.object_store.endpoint = Some("https://AKIAX:S3cret-key@s3.example.com".into())
        });
        assert!(
            err.contains("object_store.endpoint") && err.contains("no credentials"),
            "{err}"
        );
        assert!(!err.contains("S3cret-key"), "{err}");
        let err = refused(|s| s.object_store.endpoint = Some("https://h/bucket".into()));
        assert!(err.contains("scheme, host and port only"), "{err}");
        let err = refused(|s| s.object_store.endpoint = Some("http://127.0.0.1:9000".into()));
        assert!(
            err.contains("object_store.path_style") && err.contains("127.0.0.1:9000"),
            "{err}"
        );
        let mut named = Settings::default();
        named.object_store.endpoint = Some("http://minio.internal:9000".into());
        assert_eq!(named.validate(), Ok(()));
        let err = refused(|s| s.object_store.region = "EU West".into());
        assert!(err.contains("object_store.region"), "{err}");
        let over: toml::Table =
            toml::from_str("[object_store]\nconditional_writes = \"read-first\"\n").expect("toml");
        let s = crate::config::layer::apply(Settings::default(), over).expect("apply");
        assert_eq!(
            s.object_store.conditional_writes,
            super::ConditionalWrites::ReadFirst
        );
        let over: toml::Table =
            toml::from_str("[object_store]\nconditional_writes = \"trust\"\n").expect("toml");
        assert!(crate::config::layer::apply(Settings::default(), over).is_err());
        let err = refused(|s| s.object_store.request_timeout = Dur::secs(0));
        assert!(err.contains("object_store.request_timeout"), "{err}");
    }
}
