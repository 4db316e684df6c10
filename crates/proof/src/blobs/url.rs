//! Where a store is: a directory path, or `s3://bucket/prefix` (the bucket named as S3 allows,
//! the prefix a relative path ending at a `/`); and the S3 endpoint a bucket is reached at
//! (`object_store.endpoint`, else AWS's regional one), path-style or virtual-hosted.

use std::fmt;
use std::path::PathBuf;

/// A store's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Dir(PathBuf),
    S3 {
        bucket: String,
        /// Empty, or a relative path ending with `/`.
        prefix: String,
    },
}

impl Location {
    /// `s3://bucket[/prefix]`, or a directory path; any other `scheme://` is refused.
    pub fn parse(s: &str) -> Result<Location, String> {
        let Some((scheme, rest)) = s.split_once("://") else {
            if s.is_empty() {
                return Err("an empty location: give a directory or s3://bucket/prefix".into());
            }
            return Ok(Location::Dir(PathBuf::from(s)));
        };
        if scheme != "s3" {
            return Err(format!(
                "`{scheme}://` is not a store this reads: give a directory or s3://bucket/prefix"
            ));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.contains('@') || bucket.contains(':') {
            return Err("credentials or a port in an s3:// location: credentials come from the environment or a file, the endpoint from object_store.endpoint".into());
        }
        if let Some(why) = bucket_problem(bucket) {
            return Err(format!("the bucket `{bucket}`: {why}"));
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.contains("//")
            || prefix.starts_with('/')
            || prefix.split('/').any(|p| p == "." || p == "..")
            || prefix
                .chars()
                .any(|c| c.is_control() || c == '?' || c == '#')
        {
            return Err(format!(
                "the prefix `{prefix}`: plain segments between single slashes, no `.`, `..`, `?` or `#`"
            ));
        }
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        Ok(Location::S3 {
            bucket: bucket.to_owned(),
            prefix,
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(p) => write!(f, "directory {}", p.display()),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// Why `b` is not a bucket name S3 accepts (3 to 63 lowercase letters, digits, `-` and `.`,
/// beginning and ending with a letter or digit).
pub fn bucket_problem(b: &str) -> Option<&'static str> {
    if !(3..=63).contains(&b.len()) {
        return Some("3 to 63 characters");
    }
    if !b
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
    {
        return Some("lowercase letters, digits, `-` and `.` only");
    }
    let edge = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !edge(b.bytes().next()) || !edge(b.bytes().last()) || b.contains("..") {
        return Some("beginning and ending with a letter or digit, no `..`");
    }
    None
}

/// The endpoint requests go to: `endpoint` (scheme, host and port only), else AWS's for
/// `region`.
pub fn endpoint(endpoint: Option<&str>, region: &str) -> Result<url::Url, String> {
    let text = endpoint
        .map(str::to_owned)
        .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    if let Some(why) = crate::config::endpoint_problem(&text) {
        return Err(format!("object_store.endpoint: {why}"));
    }
    url::Url::parse(&text).map_err(|e| format!("object_store.endpoint: {e}"))
}

/// The URL of `path` (already encoded, starting `/`) in `bucket`: `endpoint/bucket/path`
/// (path-style), else `bucket.host/path`.
pub fn object_url(
    base: &url::Url,
    bucket: &str,
    path: &str,
    path_style: bool,
) -> Result<url::Url, String> {
    let mut u = base.clone();
    if path_style {
        u.set_path(&format!("/{bucket}{path}"));
    } else {
        let host = format!("{bucket}.{}", base.host_str().unwrap_or_default());
        u.set_host(Some(&host)).map_err(|e| e.to_string())?;
        u.set_path(path);
    }
    Ok(u)
}

/// The `Host` header of `u` (with the port when it is not the scheme's).
pub fn host_header(u: &url::Url) -> String {
    let host = u.host_str().unwrap_or_default();
    match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_strictly() {
        assert_eq!(
            Location::parse("s3://audit-log/prod/tiles/"),
            Ok(Location::S3 {
                bucket: "audit-log".into(),
                prefix: "prod/tiles/".into()
            })
        );
        assert_eq!(
            Location::parse("s3://audit-log"),
            Ok(Location::S3 {
                bucket: "audit-log".into(),
                prefix: String::new()
            })
        );
        assert_eq!(
            Location::parse("/var/lib/tiles"),
            Ok(Location::Dir("/var/lib/tiles".into()))
        );
        for bad in [
            "s3://AB/x",
            "s3://key:secret@bucket/x",
            "s3://b/x",
            "s3://bucket/../x",
            "s3://bucket//x",
            "gs://bucket/x",
            "",
        ] {
            let e = Location::parse(bad).expect_err(bad);
            assert!(!e.contains("secret"), "{e}");
        }
    }

    #[test]
    fn endpoints_and_object_urls() {
        let aws = endpoint(None, "eu-west-1").expect("aws");
        assert_eq!(aws.as_str(), "https://s3.eu-west-1.amazonaws.com/");
        let u = object_url(&aws, "audit-log", "/tiles/checkpoint", false).expect("url");
        assert_eq!(
            u.as_str(),
            "https://audit-log.s3.eu-west-1.amazonaws.com/tiles/checkpoint"
        );
        assert_eq!(host_header(&u), "audit-log.s3.eu-west-1.amazonaws.com");
        let local = endpoint(Some("http://127.0.0.1:9000"), "us-east-1").expect("local");
        let u = object_url(&local, "b-1", "/tile/0/000", true).expect("url");
        assert_eq!(u.as_str(), "http://127.0.0.1:9000/b-1/tile/0/000");
        assert_eq!(host_header(&u), "127.0.0.1:9000");
        for bad in [
            "ftp://h",
            "http://u:p@h",
            "http://h/path",
            "http://h?q=1",
            "nonsense",
        ] {
            let e = endpoint(Some(bad), "us-east-1").expect_err(bad);
            assert!(!e.contains(":p@"), "{e}");
        }
    }
}
