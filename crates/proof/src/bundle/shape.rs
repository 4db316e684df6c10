//! The shape of a bundle's JSON, checked before anything it claims: an object with exactly
//! `format`, `checkpoint` and a non-empty `entries` array; each entry with exactly `stream`
//! (string), `stream_seq` (integer), `leaf_index` (integer from 0 to 2^64 − 1), `raw`,
//! `leaf_data`, `row_hash` (strings), `inclusion_proof` (array of strings) and `columns` (an
//! object holding exactly the keys its format defines for the version its leaf data is tagged
//! with, [`fields::defined`]; checked as claims later); in `event-audit-bundle/3` also
//! `opening` (a string, or null: no version 3 leaf to open, or the row erased). Anything else is not a usable bundle
//! (exit 2), so a bundle never shows a shorter row than its format promises. Pure.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::complete::{self, Completeness};
use super::json::{self, Json, Keys};
use super::{fields, leaf, BundleError, FORMAT, FORMAT_V1, FORMAT_V2, FORMAT_V4};

/// A bundle as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub format: String,
    /// The whole signed note.
    pub checkpoint: String,
    pub entries: Vec<Entry>,
    /// `event-audit-bundle/4`: the proof that `entries` are every row about a person.
    pub completeness: Option<Completeness>,
}

/// One entry as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub stream: String,
    /// As written (an integer).
    pub stream_seq: String,
    pub leaf_index: u64,
    /// Base64.
    pub raw: String,
    /// The decoded columns shown, in the bundle's order.
    pub columns: Vec<(String, Json)>,
    /// Base64.
    pub leaf_data: String,
    /// Hex.
    pub row_hash: String,
    /// Base64 hashes.
    pub inclusion_proof: Vec<String>,
    /// `event-audit-bundle/3`: the opening of a version 3 leaf's commitment (base64); `None`
    /// for a leaf of another version, and for an erased row (its personal columns not shown).
    pub opening: Option<String>,
}

const TOP: [&str; 3] = ["format", "checkpoint", "entries"];
/// The keys of an `event-audit-bundle/4`: those of [`TOP`] and `completeness`.
const TOP_V4: [&str; 4] = ["format", "checkpoint", "entries", "completeness"];
const ENTRY: [&str; 8] = [
    "stream",
    "stream_seq",
    "leaf_index",
    "raw",
    "columns",
    "leaf_data",
    "row_hash",
    "inclusion_proof",
];

/// The keys of an `event-audit-bundle/3` entry: those of [`ENTRY`] and `opening`.
const ENTRY_V3: [&str; 9] = [
    "stream",
    "stream_seq",
    "leaf_index",
    "raw",
    "columns",
    "leaf_data",
    "row_hash",
    "inclusion_proof",
    "opening",
];

fn bad(why: String) -> BundleError {
    BundleError::Unusable(why)
}

fn only(obj: &[(String, Json)], allowed: &[&str], at: &str) -> Result<(), BundleError> {
    match obj.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(bad(format!("{at}{k}: not a key of the bundle format"))),
        None => Ok(()),
    }
}

fn field<'a>(obj: &'a [(String, Json)], key: &str, at: &str) -> Result<&'a Json, BundleError> {
    json::get(obj, key).ok_or_else(|| bad(format!("{at}{key}: missing")))
}

fn string(obj: &[(String, Json)], key: &str, at: &str) -> Result<String, BundleError> {
    match field(obj, key, at)? {
        Json::Str(s) => Ok(s.clone()),
        _ => Err(bad(format!("{at}{key}: not a string"))),
    }
}

fn integer(obj: &[(String, Json)], key: &str, at: &str) -> Result<String, BundleError> {
    match field(obj, key, at)? {
        Json::Num(t) if json::is_integer(t) => Ok(t.clone()),
        _ => Err(bad(format!("{at}{key}: not an integer"))),
    }
}

/// `columns` holds exactly the keys `format` defines for the leaf's version: an unknown key
/// first (in the bundle's order), then a missing one (in [`fields::COLUMNS`] order). Leaf data
/// that is not base64 or of no known version is left to the entry's check (exit 1).
fn complete(
    format: &str,
    leaf_data: &str,
    columns: &[(String, Json)],
    erased: bool,
    at: &str,
) -> Result<(), BundleError> {
    let data = B64.decode(leaf_data).unwrap_or_default();
    let Some(version) = leaf::version(&data) else {
        return Ok(());
    };
    let Some(keys) = fields::defined(format, version, erased) else {
        return Ok(());
    };
    let whose = format!("an {format} entry with a version {version} leaf");
    if let Some((k, _)) = columns.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
        return Err(bad(format!("{at}columns.{k}: not a column of {whose}")));
    }
    match keys.iter().find(|k| json::get(columns, k).is_none()) {
        Some(k) => Err(bad(format!(
            "{at}columns.{k}: missing ({whose} shows every column it defines)"
        ))),
        None => Ok(()),
    }
}

fn entry(i: usize, format: &str, v: &Json) -> Result<Entry, BundleError> {
    entry_at(&format!("entries[{i}]"), format, v)
}

pub(super) fn entry_at(place: &str, format: &str, v: &Json) -> Result<Entry, BundleError> {
    let at = format!("{place}.");
    let Json::Obj(e) = v else {
        return Err(bad(format!("{place}: not an object")));
    };
    let v3 = format == FORMAT || format == FORMAT_V4;
    only(e, if v3 { &ENTRY_V3[..] } else { &ENTRY[..] }, &at)?;
    let opening = match (v3, json::get(e, "opening")) {
        (false, _) => None,
        (true, Some(Json::Null)) => None,
        (true, Some(Json::Str(o))) => Some(o.clone()),
        (true, Some(_)) => return Err(bad(format!("{at}opening: not a string or null"))),
        (true, None) => return Err(bad(format!("{at}opening: missing"))),
    };
    let index = integer(e, "leaf_index", &at)?;
    let leaf_index = match index.as_str() {
        "-0" => Some(0),
        t => t.parse::<u64>().ok(),
    }
    .ok_or_else(|| {
        bad(format!(
            "{at}leaf_index: not an integer from 0 to {}",
            u64::MAX
        ))
    })?;
    let inclusion_proof = match field(e, "inclusion_proof", &at)? {
        Json::Arr(items) => items
            .iter()
            .map(|h| match h {
                Json::Str(s) => Ok(s.clone()),
                _ => Err(bad(format!("{at}inclusion_proof: not an array of strings"))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad(format!("{at}inclusion_proof: not an array"))),
    };
    let columns = match field(e, "columns", &at)? {
        Json::Obj(c) => c.clone(),
        _ => return Err(bad(format!("{at}columns: not an object"))),
    };
    let leaf_data = string(e, "leaf_data", &at)?;
    complete(format, &leaf_data, &columns, opening.is_none(), &at)?;
    Ok(Entry {
        stream: string(e, "stream", &at)?,
        stream_seq: integer(e, "stream_seq", &at)?,
        leaf_index,
        raw: string(e, "raw", &at)?,
        columns,
        leaf_data,
        row_hash: string(e, "row_hash", &at)?,
        inclusion_proof,
        opening,
    })
}

/// Reads a bundle's text (JSON without repeated keys, as [`json::parse`] reads it).
pub(super) fn read(text: &str) -> Result<Bundle, BundleError> {
    let v = json::parse(text, Keys::Unique).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Json::Obj(top) = v else {
        return Err(bad("not a JSON object".into()));
    };
    let format = string(&top, "format", "")?;
    if ![FORMAT_V4, FORMAT, FORMAT_V2, FORMAT_V1].contains(&format.as_str()) {
        return Err(bad(format!(
            "format {format:?} is not {FORMAT} (nor {FORMAT_V4}, {FORMAT_V2} or {FORMAT_V1})"
        )));
    }
    let v4 = format == FORMAT_V4;
    only(&top, if v4 { &TOP_V4[..] } else { &TOP[..] }, "")?;
    let checkpoint = string(&top, "checkpoint", "")?;
    let Json::Arr(items) = field(&top, "entries", "")? else {
        return Err(bad("entries: not an array".into()));
    };
    // A completeness proof may show that no row is about the person.
    if items.is_empty() && !v4 {
        return Err(bad(
            "entries: none (a bundle proves at least one row)".into()
        ));
    }
    let entries = items
        .iter()
        .enumerate()
        .map(|(i, v)| entry(i, &format, v))
        .collect::<Result<Vec<_>, _>>()?;
    let completeness = match v4 {
        true => Some(complete::read(field(&top, "completeness", "")?, |v| {
            entry_at("completeness.record", &format, v)
        })?),
        false => None,
    };
    Ok(Bundle {
        format,
        checkpoint,
        entries,
        completeness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle of one entry whose `key` has the JSON text `value` (the rest well formed).
    fn entry_with(key: &str, value: &str) -> String {
        let mut e: Vec<(&str, &str)> = vec![
            ("stream", r#""S""#),
            ("stream_seq", "1"),
            ("leaf_index", "0"),
            ("raw", r#""""#),
            ("leaf_data", r#""""#),
            ("row_hash", r#""""#),
            ("inclusion_proof", "[]"),
            ("columns", "{}"),
            ("opening", "null"),
        ];
        e.retain(|(k, _)| *k != key);
        e.push((key, value));
        let e: Vec<String> = e.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
        format!(
            r#"{{"format":"{FORMAT}","checkpoint":"x","entries":[{{{}}}]}}"#,
            e.join(",")
        )
    }

    #[test]
    fn the_leaf_index_is_an_integer_from_zero() {
        assert_eq!(
            read(&entry_with("leaf_index", "5")).unwrap().entries[0].leaf_index,
            5
        );
        assert_eq!(
            read(&entry_with("leaf_index", "-0")).unwrap().entries[0].leaf_index,
            0
        );
        let max = u64::MAX.to_string();
        assert!(read(&entry_with("leaf_index", &max)).is_ok());
        for bad in [
            "-1",
            "true",
            "1.0",
            "1e0",
            "\"1\"",
            "null",
            "18446744073709551616",
        ] {
            let e = read(&entry_with("leaf_index", bad)).unwrap_err();
            assert!(e.to_string().contains("leaf_index"), "{bad}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn the_shape_is_fixed() {
        for (text, what) in [
            ("[]", "not a JSON object"),
            (
                r#"{"format":"event-audit-bundle/5","checkpoint":"x","entries":[{}]}"#,
                "format",
            ),
            (
                &format!(r#"{{"format":"{FORMAT}","checkpoint":"x","entries":[]}}"#),
                "none",
            ),
            (
                &format!(r#"{{"format":"{FORMAT}","checkpoint":"x","entries":[],"x":1}}"#),
                "x: not a key",
            ),
            (
                &format!(r#"{{"format":"{FORMAT}","format":"{FORMAT}"}}"#),
                "repeated",
            ),
            (&entry_with("stream_seq", "1.5"), "stream_seq"),
            (&entry_with("columns", "[]"), "columns"),
            (&entry_with("inclusion_proof", "[1]"), "inclusion_proof"),
            (&entry_with("note", "1"), "note: not a key"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.to_string().contains(what), "{text}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }
}
