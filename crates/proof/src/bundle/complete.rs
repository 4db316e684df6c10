//! The completeness part of an `event-audit-bundle/4` (`prove --account A --complete`): the row
//! of the log that records an account index update (`record`, an entry checked as every entry
//! is, whose raw message is the record's JSON: the index's root, the log size it covers, the
//! index key), and for each identifier of the person its VRF proof under that key, the leaves
//! the index holds for its label and the index proof of that label's value. Read strictly
//! (`read`) and checked ([`check`]): every label proven from its identifier, every claim
//! against the record's root, the bundle's rows exactly the union of the claimed leaves (a row
//! left out or one added is rejected), and no row of the bundle linking the person to an
//! identifier the bundle does not cover. Pure.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use super::json::{self, Json, Keys};
use super::{BundleError, Entry};
use crate::tlog::index::{self, CompleteError, Terminal, Value};
use crate::tlog::merkle::Hash;

/// The stream of the log's account index records.
pub const RECORD_STREAM: &str = "event-audit.index";

/// The most identifiers one completeness proof covers.
pub const MAX_IDENTIFIERS: usize = 64;

/// The import events whose two identifier fields link a person's numbers (as erasure follows
/// them): `data_import.import_process.*` of `resource_type` account.
pub const LINK_EVENTS: &str = "data_import.import_process.";
/// The fields of a linking event that hold the person's numbers.
pub const LINK_FIELDS: [&str; 2] = ["external_identifier", "identifier"];

/// The completeness part as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completeness {
    pub record: Entry,
    pub claims: Vec<Claim>,
}

/// One identifier's claim as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub identifier: String,
    pub vrf_proof: Vec<u8>,
    pub leaves: Vec<u64>,
    pub proof: index::Proof,
}

/// An index record's fields (the row's raw message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    /// The index covers the log's leaves `[0, tree_size)`.
    pub tree_size: u64,
    pub root: Hash,
    pub labels: u64,
    pub vrf_key: [u8; 32],
}

/// What a completeness proof proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Complete {
    pub index: &'static str,
    /// The index update's number and the leaf of its record.
    pub update: u64,
    pub record_leaf: u64,
    /// Every row about the person among the log's leaves `[0, through)` is in the bundle.
    pub through: u64,
    pub identifiers: usize,
    pub rows: usize,
}

/// Why a completeness proof does not hold (the bundle is rejected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompleteFault {
    #[error("the index record's row: {0}")]
    Record(String),
    #[error("identifier {0}: its VRF proof does not verify under the index key the record names (not this identifier's label)")]
    Vrf(usize),
    #[error("identifier {0}: {1}")]
    Claim(usize, CompleteError),
    #[error("identifiers {0} and {1} are the same")]
    Repeated(usize, usize),
    #[error("leaf {leaf} is one the index holds for identifier {identifier}, and the bundle has no entry for it: a row left out")]
    Missing { leaf: u64, identifier: usize },
    #[error("entry {0} (leaf {1}) is not among the leaves the index holds for the identifiers: a row added")]
    Extra(usize, u64),
    #[error("entries {0} and {1} are the same leaf")]
    RepeatedEntry(usize, usize),
    #[error(
        "entry {0} links the person to an identifier the bundle does not prove complete (its {1})"
    )]
    Unlinked(usize, &'static str),
}

fn bad(why: String) -> BundleError {
    BundleError::Unusable(why)
}

/// 64 lowercase hex digits as 32 bytes.
pub(super) fn unhex(s: &str) -> Option<Hash> {
    let b = s.as_bytes();
    if b.len() != 64
        || !b
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

fn only(obj: &[(String, Json)], keys: &[&str], at: &str) -> Result<(), BundleError> {
    if let Some((k, _)) = obj.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
        return Err(bad(format!(
            "{at}{k}: not a key of the completeness format"
        )));
    }
    match keys.iter().find(|k| json::get(obj, k).is_none()) {
        Some(k) => Err(bad(format!("{at}{k}: missing"))),
        None => Ok(()),
    }
}

fn uint(v: Option<&Json>, at: &str) -> Result<u64, BundleError> {
    match v {
        Some(Json::Num(t)) if json::is_integer(t) => t
            .parse::<u64>()
            .map_err(|_| bad(format!("{at}: not an integer from 0 to {}", u64::MAX))),
        _ => Err(bad(format!("{at}: not an integer"))),
    }
}

fn text<'a>(v: Option<&'a Json>, at: &str) -> Result<&'a str, BundleError> {
    match v {
        Some(Json::Str(s)) => Ok(s),
        _ => Err(bad(format!("{at}: not a string"))),
    }
}

fn b64(v: Option<&Json>, at: &str) -> Result<Vec<u8>, BundleError> {
    B64.decode(text(v, at)?)
        .map_err(|_| bad(format!("{at}: not base64")))
}

fn terminal(v: Option<&Json>, at: &str) -> Result<Terminal, BundleError> {
    match v {
        Some(Json::Null) => Ok(Terminal::Empty),
        Some(Json::Obj(t)) => {
            only(t, &["label", "count", "acc"], &format!("{at}."))?;
            let hex = |k: &str| {
                unhex(text(json::get(t, k), &format!("{at}.{k}"))?)
                    .ok_or_else(|| bad(format!("{at}.{k}: not 64 lowercase hex digits")))
            };
            Ok(Terminal::Leaf {
                label: hex("label")?,
                value: Value {
                    count: uint(json::get(t, "count"), &format!("{at}.count"))?,
                    acc: hex("acc")?,
                },
            })
        }
        _ => Err(bad(format!("{at}: not null or an object"))),
    }
}

fn claim(i: usize, v: &Json) -> Result<Claim, BundleError> {
    let at = format!("completeness.identifiers[{i}]");
    let Json::Obj(o) = v else {
        return Err(bad(format!("{at}: not an object")));
    };
    only(
        o,
        &["identifier", "vrf_proof", "leaves", "index_proof"],
        &format!("{at}."),
    )?;
    let Some(Json::Arr(items)) = json::get(o, "leaves") else {
        return Err(bad(format!("{at}.leaves: not an array")));
    };
    let leaves = items
        .iter()
        .map(|l| uint(Some(l), &format!("{at}.leaves")))
        .collect::<Result<Vec<u64>, _>>()?;
    let Some(Json::Obj(p)) = json::get(o, "index_proof") else {
        return Err(bad(format!("{at}.index_proof: not an object")));
    };
    only(p, &["siblings", "terminal"], &format!("{at}.index_proof."))?;
    let Some(Json::Arr(sibs)) = json::get(p, "siblings") else {
        return Err(bad(format!("{at}.index_proof.siblings: not an array")));
    };
    if sibs.len() > index::MAX_DEPTH {
        return Err(bad(format!(
            "{at}.index_proof.siblings: more than {} hashes",
            index::MAX_DEPTH
        )));
    }
    let siblings = sibs
        .iter()
        .map(|s| {
            let b = b64(Some(s), &format!("{at}.index_proof.siblings"))?;
            Hash::try_from(b)
                .map_err(|_| bad(format!("{at}.index_proof.siblings: a hash is not 32 bytes")))
        })
        .collect::<Result<Vec<Hash>, _>>()?;
    Ok(Claim {
        identifier: text(json::get(o, "identifier"), &format!("{at}.identifier"))?.to_owned(),
        vrf_proof: b64(json::get(o, "vrf_proof"), &format!("{at}.vrf_proof"))?,
        leaves,
        proof: index::Proof {
            siblings,
            terminal: terminal(
                json::get(p, "terminal"),
                &format!("{at}.index_proof.terminal"),
            )?,
        },
    })
}

/// Reads the `completeness` object (its record read as an entry by `entry`).
pub(super) fn read(
    v: &Json,
    entry: impl Fn(&Json) -> Result<Entry, BundleError>,
) -> Result<Completeness, BundleError> {
    let Json::Obj(o) = v else {
        return Err(bad("completeness: not an object".into()));
    };
    only(o, &["index", "record", "identifiers"], "completeness.")?;
    let format = text(json::get(o, "index"), "completeness.index")?;
    if format != index::FORMAT {
        return Err(bad(format!(
            "completeness.index: {format:?} is not {}",
            index::FORMAT
        )));
    }
    let record = entry(json::get(o, "record").unwrap_or(&Json::Null))?;
    let Some(Json::Arr(items)) = json::get(o, "identifiers") else {
        return Err(bad("completeness.identifiers: not an array".into()));
    };
    if items.is_empty() || items.len() > MAX_IDENTIFIERS {
        return Err(bad(format!(
            "completeness.identifiers: from 1 to {MAX_IDENTIFIERS} identifiers"
        )));
    }
    let claims = items
        .iter()
        .enumerate()
        .map(|(i, v)| claim(i, v))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Completeness { record, claims })
}

/// An index record's JSON, read strictly: exactly its six keys.
pub fn record(raw: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "its raw message is not UTF-8".to_owned())?;
    let Ok(Json::Obj(o)) = json::parse(text, Keys::Unique) else {
        return Err("its raw message is not a JSON object".into());
    };
    let keys = ["index", "seq", "tree_size", "root", "labels", "vrf_key"];
    if let Some((k, _)) = o.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
        return Err(format!("its record: {k}: not a key of an index record"));
    }
    if let Some(k) = keys.iter().find(|k| json::get(&o, k).is_none()) {
        return Err(format!("its record: {k}: missing"));
    }
    if json::get(&o, "index") != Some(&Json::Str(index::FORMAT.into())) {
        return Err(format!("its record is not of the format {}", index::FORMAT));
    }
    let n = |k: &str| {
        match json::get(&o, k) {
            Some(Json::Num(t)) if json::is_integer(t) => t.parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("its record: {k}: not an integer from 0 to {}", u64::MAX))
    };
    let root = match json::get(&o, "root") {
        Some(Json::Str(s)) => unhex(s),
        _ => None,
    }
    .ok_or("its record's root is not 64 lowercase hex digits")?;
    let vrf_key = match json::get(&o, "vrf_key") {
        Some(Json::Str(s)) => B64
            .decode(s)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok()),
        _ => None,
    }
    .ok_or("its record's vrf_key is not the base64 of 32 bytes")?;
    Ok(Record {
        seq: n("seq")?,
        tree_size: n("tree_size")?,
        root,
        labels: n("labels")?,
        vrf_key,
    })
}

/// The identifiers a row links the person to, as `(field, value)`: the two numbers of a
/// `data_import.import_process.*` event of `resource_type` account, from its shown columns.
fn links(e: &Entry) -> Vec<(&'static str, String)> {
    let col = |k: &str| json::get(&e.columns, k);
    let Some(Json::Str(t)) = col("event_type") else {
        return Vec::new();
    };
    let Some(Json::Obj(p)) = col("payload") else {
        return Vec::new();
    };
    if !t.starts_with(LINK_EVENTS)
        || json::get(p, "resource_type") != Some(&Json::Str("account".into()))
    {
        return Vec::new();
    }
    LINK_FIELDS
        .iter()
        .filter_map(|f| match json::get(p, f) {
            Some(Json::Str(s)) if !s.is_empty() => Some((*f, s.clone())),
            _ => None,
        })
        .collect()
}

/// Checks the claims against the record (whose own entry the caller checked) and the bundle's
/// `entries` (each checked, its row hash that of its leaf data).
pub fn check(
    c: &Completeness,
    rec: &Record,
    record_leaf: u64,
    entries: &[(Entry, Hash)],
) -> Result<Complete, CompleteFault> {
    if rec.tree_size > record_leaf {
        return Err(CompleteFault::Record(format!(
            "it claims an index of {} leaves, beyond its own leaf {record_leaf}",
            rec.tree_size
        )));
    }
    for (i, a) in c.claims.iter().enumerate() {
        if let Some(j) = c.claims[..i]
            .iter()
            .position(|b| b.identifier == a.identifier)
        {
            return Err(CompleteFault::Repeated(j, i));
        }
    }
    let mut by_leaf: std::collections::BTreeMap<u64, (usize, Hash)> = Default::default();
    for (i, (e, h)) in entries.iter().enumerate() {
        if let Some((j, _)) = by_leaf.insert(e.leaf_index, (i, *h)) {
            return Err(CompleteFault::RepeatedEntry(j, i));
        }
    }
    let mut covered = std::collections::BTreeSet::new();
    for (i, a) in c.claims.iter().enumerate() {
        let label = index::label_proven(&rec.vrf_key, &a.identifier, &a.vrf_proof)
            .ok_or(CompleteFault::Vrf(i))?;
        let mut listed = Vec::with_capacity(a.leaves.len());
        for leaf in &a.leaves {
            let (_, h) = by_leaf.get(leaf).ok_or(CompleteFault::Missing {
                leaf: *leaf,
                identifier: i,
            })?;
            listed.push((*leaf, *h));
            covered.insert(*leaf);
        }
        index::check_complete(&rec.root, &label, &a.proof, &listed, rec.tree_size)
            .map_err(|e| CompleteFault::Claim(i, e))?;
    }
    for (i, (e, _)) in entries.iter().enumerate() {
        if !covered.contains(&e.leaf_index) {
            return Err(CompleteFault::Extra(i, e.leaf_index));
        }
        for (field, value) in links(e) {
            if !c.claims.iter().any(|a| a.identifier == value) {
                return Err(CompleteFault::Unlinked(i, field));
            }
        }
    }
    Ok(Complete {
        index: index::FORMAT,
        update: rec.seq,
        record_leaf,
        through: rec.tree_size,
        identifiers: c.claims.len(),
        rows: entries.len(),
    })
}

/// The fault of a record entry whose raw message is not an index record.
pub(super) fn not_a_record(e: &Entry, why: String) -> CompleteFault {
    if e.stream != RECORD_STREAM {
        return CompleteFault::Record(format!(
            "its stream is {:?}, not the index records' {RECORD_STREAM:?}",
            e.stream
        ));
    }
    CompleteFault::Record(why)
}
