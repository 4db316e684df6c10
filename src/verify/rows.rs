//! One stored row against its hash: its canonical encoding rebuilt from the stored columns
//! (the JSON columns re-canonicalised, the payload's place in `raw` found again), and its
//! payload column against what jsonb stores for the payload text inside `raw`, compared in Rust
//! (PostgreSQL is asked only when they differ). Pure.

use std::collections::BTreeMap;

use crate::decode::catalogue::rt::FieldError;
use crate::row::canon::{canonical_errors, canonical_headers, canonical_strings, Canon};
use crate::row::jsonb::jsonb_text;
use crate::row::record::range_in;

pub(crate) use crate::row::view::RowView;

/// What a row check found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The row matches; its hash.
    Ok([u8; 32]),
    /// The payload column differs from our reading of jsonb's text for the payload in `raw`;
    /// the caller asks PostgreSQL before calling it an edit.
    PayloadDiffers { hash: [u8; 32], from_raw: String },
    /// The row does not match: why.
    Broken(&'static str),
    /// The row's personal data is gone (a version 3 row without its salt: its hash still
    /// holds, this one; a version 1 or 2 row whose raw message and personal columns are empty:
    /// its contents can no longer be checked, its stored hash). Only a recorded erasure makes
    /// this anything but a break; the walk decides.
    Erased { hash: [u8; 32], verified: bool },
}

fn recanon<T: serde::de::DeserializeOwned>(
    text: Option<&str>,
    f: impl Fn(&T) -> Option<String>,
) -> Result<Option<String>, ()> {
    match text {
        None => Ok(None),
        Some(t) => serde_json::from_str::<T>(t).map(|v| f(&v)).map_err(|_| ()),
    }
}

/// The payload text a row's raw bytes carry, if any (the same extraction the writer did).
pub(crate) fn payload_of(raw: &[u8]) -> Option<&str> {
    match crate::decode::envelope::open(raw, Some("-")) {
        Ok(env) => Some(env.payload),
        Err(m) => m.payload,
    }
}

/// Checks one stored row.
/// The row's canonical encoding rebuilt from its stored columns, handed to `f` (the walk hashes
/// it, `prove` hands it out as leaf data); `None` when a JSON column no longer has its recorded
/// shape. Also returns the payload text found in `raw` when the row has a payload column.
pub(crate) fn with_canon<'a, T>(
    row: &RowView<'a>,
    f: impl FnOnce(&Canon<'_>) -> T,
) -> Option<(T, Option<&'a str>)> {
    let headers = recanon::<BTreeMap<String, Vec<String>>>(row.headers, canonical_headers);
    let errors = recanon::<Vec<FieldError>>(row.errors, |e| canonical_errors(e));
    let unknown = recanon::<Vec<String>>(row.unknown_fields, |u| canonical_strings(u));
    let (Ok(headers), Ok(errors), Ok(unknown)) = (headers, errors, unknown) else {
        return None;
    };
    let payload_text = row.payload.and(payload_of(row.raw));
    let commitment = match row.commitment {
        None => None,
        Some(c) => Some(<[u8; 32]>::try_from(c).ok()?),
    };
    let payload = payload_text
        .and_then(|p| range_in(row.raw, p))
        .map(|r| (r.start as u64, r.end as u64));
    let canon = Canon {
        headers: headers.as_deref(),
        errors: errors.as_deref(),
        unknown_fields: unknown.as_deref(),
        commitment,
        ..row.canon(payload)
    };
    Some((f(&canon), payload_text))
}

/// The canonical encoding of a stored row: the Merkle tree's leaf data (its SHA-256 is the row
/// hash).
pub(crate) fn encoding(row: &RowView<'_>) -> Option<Vec<u8>> {
    with_canon(row, |c| c.encode()).map(|(e, _)| e)
}

/// The opening of a version 3 row's commitment (`None`: erased, or not version 3): what a
/// bundle shows for an auditor to check the personal columns against the leaf.
pub(crate) fn opening(row: &RowView<'_>) -> Option<Vec<u8>> {
    with_canon(row, |c| c.opening()).and_then(|(o, _)| o)
}

/// Whether a row's personal columns and raw message are all gone (NULL, `raw` empty).
pub(crate) fn emptied(row: &RowView<'_>) -> bool {
    row.raw.is_empty()
        && row.salt.is_none()
        && row.payload.is_none()
        && row.headers.is_none()
        && row.event_id.is_none()
        && row.account_number.is_none()
        && row.errors.is_none()
}

/// The row's hash recomputed from its columns (`None`: a JSON column lost its recorded shape).
pub(crate) fn recomputed(row: &RowView<'_>) -> Option<[u8; 32]> {
    with_canon(row, |c| c.hash()).map(|(hash, _)| hash)
}

pub(crate) fn check(row: &RowView<'_>) -> Check {
    if row.commitment.is_some_and(|c| c.len() != 32) {
        return Check::Broken("the commitment is not 32 bytes (row edited)");
    }
    let opened = |c: &Canon<'_>| (c.hash(), c.salt.is_none() || c.committed() == c.commitment);
    let Some(((hash, committed), payload_text)) = with_canon(row, opened) else {
        return Check::Broken("a JSON column no longer has its recorded shape");
    };
    let stored: Option<[u8; 32]> = row.row_hash.try_into().ok();
    if row.commitment.is_some() && row.salt.is_none() {
        return match (stored == Some(hash), emptied(row)) {
            (true, true) => Check::Erased {
                hash,
                verified: true,
            },
            (false, _) => Check::Broken("stored columns do not match the row's hash (row edited)"),
            (true, false) => Check::Broken(
                "personal columns kept without the salt that checks them (salt removed)",
            ),
        };
    }
    if stored != Some(hash) {
        return match stored {
            Some(h) if row.commitment.is_none() && emptied(row) => Check::Erased {
                hash: h,
                verified: false,
            },
            _ => Check::Broken("stored columns do not match the row's hash (row edited)"),
        };
    }
    if !committed {
        return Check::Broken("personal columns do not match the row's commitment (row edited)");
    }
    let Some(stored) = row.payload else {
        return Check::Ok(hash);
    };
    let Some(text) = payload_text else {
        return Check::Broken("a payload column but no payload in the raw message (payload added)");
    };
    match jsonb_text(text) {
        Ok(t) if t == stored => Check::Ok(hash),
        Ok(from_raw) => Check::PayloadDiffers { hash, from_raw },
        Err(_) => Check::PayloadDiffers {
            hash,
            from_raw: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use chrono::Utc;

    use super::*;
    use crate::row::record::{record, Meta, Naming, Record};

    fn rec() -> Record {
        let meta = Meta {
            stream: Arc::from("S"),
            stream_seq: 1,
            published_at: Utc::now(),
            subject: "s".into(),
            delivery_count: 1,
            headers: vec![("X-User".into(), "a@example.com".into())],
        };
        let raw = br#"{"event":"account.occupied-v1","id":"i-1","payload":{"account_number":"A"}}"#;
        record(
            meta,
            Bytes::from_static(raw),
            &Naming::default(),
            Utc::now(),
        )
    }

    fn erased<'a>(v: RowView<'a>) -> RowView<'a> {
        RowView {
            raw: b"",
            salt: None,
            payload: None,
            headers: None,
            event_id: None,
            account_number: None,
            errors: None,
            ..v
        }
    }

    fn holds(c: &Check) -> bool {
        matches!(c, Check::Ok(_) | Check::PayloadDiffers { .. })
    }

    /// An erased row is told from an edited one: version 3 keeps its hash, version 2 its
    /// stored hash (unverifiable); anything short of a whole erasure is a break.
    #[test]
    fn erased_rows_are_told_from_edited_ones() {
        let r = rec();
        let v = r.view(1);
        assert!(holds(&check(&v)), "{:?}", check(&v));
        let e = check(&erased(v));
        assert_eq!(
            e,
            Check::Erased {
                hash: r.row_hash,
                verified: true
            }
        );
        let half = RowView { salt: None, ..v };
        assert!(matches!(check(&half), Check::Broken(w) if w.contains("salt removed")));
        let edited = RowView {
            account_number: Some("B"),
            ..v
        };
        assert!(matches!(check(&edited), Check::Broken(w) if w.contains("commitment")));
        let mut old = rec();
        old.as_encoding_2();
        let v = old.view(1);
        assert!(holds(&check(&v)), "{:?}", check(&v));
        let e = check(&erased(v));
        assert_eq!(
            e,
            Check::Erased {
                hash: old.row_hash,
                verified: false
            }
        );
        let edited = RowView { payload: None, ..v };
        assert!(matches!(check(&edited), Check::Broken(_)));
    }
}
