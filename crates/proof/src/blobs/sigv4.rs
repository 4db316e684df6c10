//! AWS Signature Version 4 for S3 requests, pure: the canonical request, the string to sign,
//! the signing key and the `Authorization` header, over `hmac` and `sha2`. Every header given is
//! signed (names lowercased and sorted, values trimmed); the payload is signed by its SHA-256.
//! Checked against the example signatures AWS publishes for S3.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The SHA-256 of no bytes, the payload hash of a request without a body.
#[cfg(test)]
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// One request to sign.
pub(super) struct Request<'a> {
    pub method: &'a str,
    /// The path as sent: each segment already URI-encoded ([`encode_path`]).
    pub path: &'a str,
    /// Query parameters, not encoded (a parameter without a value has `""`).
    pub query: &'a [(&'a str, &'a str)],
    /// Every header to sign, `host` and `x-amz-date` among them.
    pub headers: &'a [(String, String)],
    /// Lowercase hex SHA-256 of the body (as sent in `x-amz-content-sha256`).
    pub payload_sha256: &'a str,
}

/// Who signs, where, and when (`x-amz-date`'s value, `YYYYMMDDTHHMMSSZ`).
pub(super) struct Signer<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    pub region: &'a str,
    pub amz_date: &'a str,
}

/// The `Authorization` header's value for `req`.
pub(super) fn authorization(s: &Signer<'_>, req: &Request<'_>) -> String {
    let (canonical, signed) = canonical_request(req);
    let date = s.amz_date.get(..8).unwrap_or(s.amz_date);
    let scope = format!("{date}/{}/s3/aws4_request", s.region);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
        s.amz_date,
        sha256_hex(canonical.as_bytes())
    );
    let mut key = hmac(
        format!("AWS4{}", s.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    for part in [s.region, "s3", "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope},SignedHeaders={signed},Signature={signature}",
        s.access_key_id
    )
}

/// The canonical request and the signed headers' names.
fn canonical_request(req: &Request<'_>) -> (String, String) {
    let mut query: Vec<(String, String)> = req
        .query
        .iter()
        .map(|(k, v)| (encode(k, true), encode(v, true)))
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), collapse(v)))
        .collect();
    headers.sort();
    let mut canonical_headers = String::new();
    for (k, v) in &headers {
        canonical_headers.push_str(&format!("{k}:{v}\n"));
    }
    let signed = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical = format!(
        "{}\n{}\n{query}\n{canonical_headers}\n{signed}\n{}",
        req.method, req.path, req.payload_sha256
    );
    (canonical, signed)
}

/// A header value trimmed, its runs of spaces made one.
fn collapse(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// URI-encodes `s` as SigV4 asks: every byte but `A-Z a-z 0-9 - _ . ~` as `%XX` (uppercase),
/// and `/` too unless `slash` is false.
pub(super) fn encode(s: &str, slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b'/' if !slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// An object's path (`/bucket/key` or `/key`), each segment encoded, the slashes kept.
pub(super) fn encode_path(path: &str) -> String {
    encode(path, false)
}

/// Lowercase hex SHA-256 of `bytes`.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example credentials and time of AWS's published S3 signature examples
    /// ("Signature Calculations for the Authorization Header", examplebucket, 2013-05-24).
    const KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const DATE: &str = "20130524T000000Z";
    const HOST: &str = "examplebucket.s3.amazonaws.com";

    fn sign(
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        extra: &[(&str, &str)],
        payload: &str,
    ) -> String {
        let mut headers = vec![
            ("Host".to_owned(), HOST.to_owned()),
            ("x-amz-date".to_owned(), DATE.to_owned()),
            ("x-amz-content-sha256".to_owned(), payload.to_owned()),
        ];
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let signer = Signer {
            access_key_id: KEY_ID,
            secret_access_key: SECRET,
            region: "us-east-1",
            amz_date: DATE,
        };
        authorization(
            &signer,
            &Request {
                method,
                path,
                query,
                headers: &headers,
                payload_sha256: payload,
            },
        )
    }

    #[test]
    fn get_object_with_a_range_signs_as_aws_publishes() {
        let auth = sign(
            "GET",
            "/test.txt",
            &[],
            &[("Range", "bytes=0-9")],
            EMPTY_SHA256,
        );
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn put_object_signs_as_aws_publishes() {
        let body = b"Welcome to Amazon S3.";
        let payload = sha256_hex(body);
        assert_eq!(
            payload,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        let path = format!("/{}", encode_path("test$file.text"));
        assert_eq!(path, "/test%24file.text");
        let auth = sign(
            "PUT",
            &path,
            &[],
            &[
                ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
            &payload,
        );
        assert!(
            auth.ends_with(
                "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,\
                 Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
            ),
            "{auth}"
        );
    }

    #[test]
    fn queries_sign_as_aws_publishes() {
        let lifecycle = sign("GET", "/", &[("lifecycle", "")], &[], EMPTY_SHA256);
        assert!(
            lifecycle.ends_with(
                "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
            ),
            "{lifecycle}"
        );
        // Given out of order: the canonical query is sorted.
        let list = sign(
            "GET",
            "/",
            &[("prefix", "J"), ("max-keys", "2")],
            &[],
            EMPTY_SHA256,
        );
        assert!(
            list.ends_with(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            ),
            "{list}"
        );
    }

    #[test]
    fn paths_keep_their_slashes_and_encode_the_rest() {
        assert_eq!(encode_path("tile/0/x001/234.p/5"), "tile/0/x001/234.p/5");
        assert_eq!(encode_path("a b/c+d"), "a%20b/c%2Bd");
        assert_eq!(encode("a/b", true), "a%2Fb");
        assert_eq!(collapse("  a   b "), "a b");
    }
}
