//! The canonical encoding of an audit row and its SHA-256 (the row hash): built from a
//! `super::record::Record` when writing and from the stored columns when verifying, so both
//! sides hash exactly the same bytes. Version 3 (written now) covers the personal columns and
//! the raw message through a salted commitment ([`Canon::opening`]), so they can be erased while
//! the row hash still holds; versions 1 and 2 keep their encodings. Pure: no I/O.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The columns the row hash covers, borrowed. Built from a `super::record::Record` when
/// writing and from the stored row when verifying, so both sides hash exactly the same bytes.
/// The payload column is covered by where its text lies in `raw` (`payload`); `verify` checks
/// its content against that text. Its own type, not the row view, because it is what the hash
/// covers, frozen per encoding version: not every column (`batch_id`, `row_hash` itself), some
/// columns in their canonical form (headers, errors, unknown fields re-canonicalised), and the
/// payload as a place in `raw`; rows written under version 1 keep that encoding.
#[derive(Debug, Clone)]
pub struct Canon<'a> {
    pub stream: &'a str,
    pub stream_seq: i64,
    pub published_at_us: i64,
    pub received_at_us: i64,
    pub subject: &'a str,
    pub delivery_count: i32,
    pub headers: Option<&'a str>,
    pub envelope: Option<&'a str>,
    pub event_id: Option<&'a str>,
    pub event_type: Option<&'a str>,
    pub event_version: Option<&'a str>,
    pub status: &'a str,
    pub errors: Option<&'a str>,
    pub unknown_fields: Option<&'a str>,
    pub account_number: Option<&'a str>,
    pub occurred_at_us: Option<i64>,
    /// The byte range of the stored jsonb payload within `raw`; `None` when the payload
    /// column is NULL.
    pub payload: Option<(u64, u64)>,
    /// Why the payload could not be stored as jsonb.
    pub payload_error: Option<&'a str>,
    /// The fingerprint of the catalogue that gave the verdict; `None` only for rows written
    /// before it was recorded (encoding version 1).
    pub catalogue: Option<&'a str>,
    pub raw: &'a [u8],
    /// Version 3: the row's salt (32 random bytes, kept beside `raw`); `None` once the row's
    /// personal data is erased, and for versions 1 and 2.
    pub salt: Option<&'a [u8]>,
    /// Version 3: the commitment to the personal columns ([`Canon::opening`]); `None` for
    /// versions 1 and 2. The v3 encoding covers it instead of them.
    pub commitment: Option<[u8; 32]>,
}

/// The version tags that open a leaf (the canonical encoding); defined here only.
pub const TAG_V1: &[u8] = b"event-audit row v1\0";
pub const TAG_V2: &[u8] = b"event-audit row v2\0";
pub const TAG_V3: &[u8] = b"event-audit row v3\0";

/// The length of a version 3 row's salt.
pub const SALT_LEN: usize = 32;

/// A length-prefixed value, or NULL.
fn field(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        Some(b) => {
            out.extend_from_slice(&(b.len() as u64).to_be_bytes());
            out.extend_from_slice(b);
        }
        None => out.extend_from_slice(&u64::MAX.to_be_bytes()),
    }
}

fn int(out: &mut Vec<u8>, v: Option<i64>) {
    field(out, v.map(i64::to_be_bytes).as_ref().map(|b| &b[..]));
}

impl Canon<'_> {
    /// The text columns between the delivery count and the envelope time, in encoding order.
    fn texts(&self) -> [Option<&str>; 9] {
        [
            self.headers,
            self.envelope,
            self.event_id,
            self.event_type,
            self.event_version,
            Some(self.status),
            self.errors,
            self.unknown_fields,
            self.account_number,
        ]
    }

    /// The encoding version: 3 (a commitment), 2, or 1 for rows written before the catalogue
    /// was recorded.
    pub fn version(&self) -> u8 {
        if self.commitment.is_some() {
            3
        } else if self.catalogue.is_some() {
            2
        } else {
            1
        }
    }

    /// The canonical encoding (the Merkle tree's leaf data is its SHA-256, the row hash).
    pub fn encode(&self) -> Vec<u8> {
        if let Some(c) = self.commitment {
            return self.encode_v3(&c);
        }
        let mut out = Vec::with_capacity(self.raw.len() + 512);
        if self.catalogue.is_none() {
            self.encode_v1(&mut out);
            return out;
        }
        out.extend_from_slice(TAG_V2);
        field(&mut out, Some(self.stream.as_bytes()));
        int(&mut out, Some(self.stream_seq));
        int(&mut out, Some(self.published_at_us));
        int(&mut out, Some(self.received_at_us));
        field(&mut out, Some(self.subject.as_bytes()));
        int(&mut out, Some(i64::from(self.delivery_count)));
        for v in self.texts() {
            field(&mut out, v.map(str::as_bytes));
        }
        int(&mut out, self.occurred_at_us);
        let range = self.place();
        field(&mut out, range.as_ref().map(|r| &r[..]));
        field(&mut out, self.payload_error.map(str::as_bytes));
        field(&mut out, self.catalogue.map(str::as_bytes));
        field(&mut out, Some(self.raw));
        out
    }

    /// The payload's place as the encodings write it: two 8-byte big-endian offsets.
    fn place(&self) -> Option<[u8; 16]> {
        self.payload.map(|(a, b)| {
            let mut r = [0u8; 16];
            r[..8].copy_from_slice(&a.to_be_bytes());
            r[8..].copy_from_slice(&b.to_be_bytes());
            r
        })
    }

    /// Version 3: the tag and 15 length-prefixed fields: version 2 without the personal
    /// columns (headers, envelope id, errors, account number, the payload's place, the raw
    /// message), and the commitment to them last.
    fn encode_v3(&self, commitment: &[u8; 32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(TAG_V3);
        field(&mut out, Some(self.stream.as_bytes()));
        int(&mut out, Some(self.stream_seq));
        int(&mut out, Some(self.published_at_us));
        int(&mut out, Some(self.received_at_us));
        field(&mut out, Some(self.subject.as_bytes()));
        int(&mut out, Some(i64::from(self.delivery_count)));
        for v in [
            self.envelope,
            self.event_type,
            self.event_version,
            Some(self.status),
            self.unknown_fields,
        ] {
            field(&mut out, v.map(str::as_bytes));
        }
        int(&mut out, self.occurred_at_us);
        field(&mut out, self.payload_error.map(str::as_bytes));
        field(&mut out, self.catalogue.map(str::as_bytes));
        field(&mut out, Some(commitment));
        out
    }

    /// Version 3: the opening of the commitment, `None` without a salt (erased, or not
    /// version 3): the 32-byte salt, then length-prefixed the raw message, the payload's place,
    /// the headers, the envelope id, the account number and the errors.
    pub fn opening(&self) -> Option<Vec<u8>> {
        let salt = self.salt?;
        let mut out = Vec::with_capacity(self.raw.len() + 256);
        out.extend_from_slice(salt);
        field(&mut out, Some(self.raw));
        field(&mut out, self.place().as_ref().map(|r| &r[..]));
        for v in [
            self.headers,
            self.event_id,
            self.account_number,
            self.errors,
        ] {
            field(&mut out, v.map(str::as_bytes));
        }
        Some(out)
    }

    /// The commitment its opening makes (`None` without a salt): SHA-256 of the opening.
    pub fn committed(&self) -> Option<[u8; 32]> {
        self.opening().map(|o| Sha256::digest(o).into())
    }

    /// Version 1: integers without length, a tag byte for the envelope time, no payload,
    /// payload error or catalogue.
    fn encode_v1(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(TAG_V1);
        field(out, Some(self.stream.as_bytes()));
        out.extend_from_slice(&self.stream_seq.to_be_bytes());
        out.extend_from_slice(&self.published_at_us.to_be_bytes());
        out.extend_from_slice(&self.received_at_us.to_be_bytes());
        field(out, Some(self.subject.as_bytes()));
        out.extend_from_slice(&self.delivery_count.to_be_bytes());
        for v in self.texts() {
            field(out, v.map(str::as_bytes));
        }
        match self.occurred_at_us {
            Some(t) => {
                out.push(1);
                out.extend_from_slice(&t.to_be_bytes());
            }
            None => out.push(0),
        }
        field(out, Some(self.raw));
    }

    /// The row hash: SHA-256 of the encoding.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.encode()).into()
    }
}

/// Text columns cannot hold NUL; input-derived text is cleaned the same way on both sides.
pub fn clean(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s.to_owned()
    }
}

/// Canonical JSON for the headers column (also used by `verify` on what it reads back).
pub fn canonical_headers(headers: &BTreeMap<String, Vec<String>>) -> Option<String> {
    if headers.is_empty() {
        return None;
    }
    serde_json::to_string(headers).ok()
}

/// Canonical JSON for the unknown-fields column.
pub fn canonical_strings(items: &[String]) -> Option<String> {
    if items.is_empty() {
        return None;
    }
    serde_json::to_string(items).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A version 1 row's columns (no payload place, no catalogue), for the tests of this
    /// encoding and of its reader (`bundle::leaf`).
    pub(crate) fn sample() -> Canon<'static> {
        Canon {
            stream: "S",
            stream_seq: 7,
            published_at_us: 1_700_000_000_000_000,
            received_at_us: 1_700_000_000_000_001,
            subject: "subj",
            delivery_count: 1,
            headers: Some(r#"{"a":["b"]}"#),
            envelope: Some("cloudevents"),
            event_id: Some("id-1"),
            event_type: Some("account.created"),
            event_version: Some("v1"),
            status: "decoded",
            errors: None,
            unknown_fields: Some(r#"["x"]"#),
            account_number: Some("A-1"),
            occurred_at_us: Some(1_700_000_000_000_002),
            payload: None,
            payload_error: None,
            catalogue: None,
            raw: br#"{"k":1}"#,
            salt: None,
            commitment: None,
        }
    }

    /// Rows written before version 2 still hash as they did (golden value computed by an
    /// independent implementation of version 1).
    #[test]
    fn version_1_hashes_as_before() {
        let c = sample();
        assert_eq!(c.version(), 1);
        let hex: String = c.hash().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "e11f04a818cd7ec67010f8f0ce5dc1b62e9c48aaa25fe0de07722a578d38cda5"
        );
    }

    /// Version 2 covers the payload's place, the payload error and the catalogue.
    #[test]
    fn version_2_covers_payload_and_catalogue() {
        let mut c = sample();
        c.catalogue = Some("0123456789abcdef");
        c.payload = Some((0, 7));
        let base = c.hash();
        assert!(c.encode().starts_with(b"event-audit row v2\0"));
        let mut d = c.clone();
        d.payload = None;
        assert_ne!(d.hash(), base, "payload set to NULL");
        let mut d = c.clone();
        d.payload_error = Some("x");
        assert_ne!(d.hash(), base);
        let mut d = c.clone();
        d.catalogue = Some("fedcba9876543210");
        assert_ne!(d.hash(), base);
        // 20 fields after the tag: stream, 8-byte seq, ... raw last.
        let enc = c.encode();
        let tag = b"event-audit row v2\0".len();
        assert_eq!(&enc[tag..tag + 8], &1u64.to_be_bytes());
        assert_eq!(&enc[enc.len() - 7..], br#"{"k":1}"#);
    }

    /// Version 3: the personal columns and the raw message only through the commitment, which
    /// is SHA-256 of the opening `salt ‖ field(raw) ‖ field(place) ‖ field(headers) ‖
    /// field(event_id) ‖ field(account_number) ‖ field(errors)`, written last; without the salt
    /// (erased) the hash is the same.
    #[test]
    fn version_3_commits_to_the_personal_columns() {
        let salt: &'static [u8] = &[7u8; 32];
        let mut c = sample();
        (c.catalogue, c.payload, c.salt) = (Some("0123456789abcdef"), Some((0, 7)), Some(salt));
        c.commitment = c.committed();
        assert_eq!(c.version(), 3);
        let opening = c.opening().expect("a salt");
        let mut want = salt.to_vec();
        for f in [
            &br#"{"k":1}"#[..],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7],
            br#"{"a":["b"]}"#,
            b"id-1",
            b"A-1",
        ] {
            want.extend_from_slice(&(f.len() as u64).to_be_bytes());
            want.extend_from_slice(f);
        }
        want.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(opening, want);
        let enc = c.encode();
        assert!(enc.starts_with(TAG_V3));
        let commitment: [u8; 32] = Sha256::digest(&opening).into();
        assert_eq!(&enc[enc.len() - 32..], &commitment);
        assert_eq!(&enc[enc.len() - 40..enc.len() - 32], &32u64.to_be_bytes());
        assert!(
            !enc.windows(3).any(|w| w == b"A-1"),
            "no personal column in the encoding"
        );
        let base = c.hash();
        let mut erased = c.clone();
        (erased.salt, erased.raw, erased.account_number) = (None, b"", None);
        erased.payload = None;
        assert_eq!(erased.hash(), base);
        let mut d = c.clone();
        d.account_number = Some("A-2");
        assert_ne!(d.committed(), c.commitment);
    }
}
