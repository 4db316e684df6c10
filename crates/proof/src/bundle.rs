//! Evidence bundles (`event-audit-bundle/3`, written by `prove`; `/2` and `/1` still read), checked
//! offline: the bundle's JSON and shape (`bundle::shape`), the signed checkpoint against the log's
//! public key, its origin and the witness policy's quorum of cosignatures when asked, then per
//! entry its row hash (SHA-256 of its leaf data), the leaf data read strictly as a row encoding
//! ([`leaf`]; a version 3 leaf opened with the entry's opening, or erased without one), the raw
//! message and every field the entry shows against the leaf ([`fields`]),
//! and its RFC 9162 inclusion proof of leaf `SHA-256(0x00 ‖ row hash)` against the checkpoint's
//! root (for `verify-proof --tiles`, the proof and the leaf read from the log's tiles instead,
//! fetched by the caller). Each failure names what failed. Pure: no I/O.

pub mod complete;
pub mod consistency;
pub mod fields;
pub mod json;
pub mod leaf;
mod shape;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::tlog::merkle::{self, Hash, Node, ProofError};
use crate::tlog::note::{self, NoteError, PublicKey};
use crate::tlog::policy::{PolicyError, WitnessPolicy};
use crate::tlog::tile::read::{ReadError, TileReader};
use fields::FieldFault;
use json::Json;
use leaf::LeafError;
pub use shape::{Bundle, Entry};

/// The format `prove` writes: `/2` and an entry's `opening` (row encoding version 3).
pub const FORMAT: &str = "event-audit-bundle/3";
/// `event-audit-bundle/3` with a `completeness` part (`prove --account A --complete`): the
/// proof that its entries are every row about a person ([`complete`]); its entries may be none.
pub const FORMAT_V4: &str = "event-audit-bundle/4";
/// The second format (no opening, no version 3 leaf); read with the same checks.
pub const FORMAT_V2: &str = "event-audit-bundle/2";
/// The first format (its columns were not evidence then); read with the same checks.
pub const FORMAT_V1: &str = "event-audit-bundle/1";

/// What is wrong with one entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryFault {
    #[error("{0} is not valid base64")]
    Base64(&'static str),
    #[error("row_hash is not 64 hex digits")]
    RowHashHex,
    #[error("row hash: row_hash is not SHA-256 of the leaf data")]
    RowHash,
    #[error(transparent)]
    Leaf(LeafError),
    #[error("raw: the bundle's raw bytes are not the leaf's raw field")]
    Raw,
    #[error("opening: given for a leaf without a commitment (not row encoding version 3)")]
    Opening,
    #[error(transparent)]
    Field(FieldFault),
    #[error("inclusion_proof: a proof hash is not 32 bytes")]
    ProofHash,
    #[error("tiles: the log's tiles hold another leaf hash at index {leaf} than SHA-256(0x00 ‖ row hash)")]
    TileLeaf { leaf: u64 },
    #[error("tiles: {0}")]
    TileRead(ReadError),
    #[error("inclusion proof of leaf {leaf} does not lead to the root of tree size {size}: {why}")]
    Proof {
        leaf: u64,
        size: u64,
        why: ProofError,
    },
}

/// Why a bundle is rejected (exit 1), or cannot be used at all (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("not a usable bundle: {0}")]
    Unusable(String),
    #[error("checkpoint signature: {0}")]
    Checkpoint(NoteError),
    #[error("checkpoint origin: the checkpoint is of log {got}, not {want}")]
    Origin { got: String, want: String },
    #[error("witness policy: {0}")]
    Policy(PolicyError),
    #[error("tiles: the log's tiles make another root for tree size {size} than the bundle's signed checkpoint (the tiles hold another tree)")]
    TilesRoot { size: u64 },
    #[error("completeness: {0}")]
    Complete(complete::CompleteFault),
    #[error("index consistency: {0}")]
    Consistency(String),
    #[error("entry {index} (stream {stream} seq {seq}): {fault}")]
    Entry {
        index: usize,
        stream: String,
        seq: String,
        fault: Box<EntryFault>,
    },
}

impl BundleError {
    /// 2 for input that is not a usable bundle, 1 for a rejected one.
    pub fn exit_code(&self) -> u8 {
        match self {
            BundleError::Unusable(_) => 2,
            _ => 1,
        }
    }
}

/// What else the checkpoint must satisfy.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The log the checkpoint must be of.
    pub origin: Option<String>,
    /// The witnesses whose quorum of valid cosignatures it must carry.
    pub policy: Option<WitnessPolicy>,
}

/// What a bundle proves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proven {
    pub format: String,
    pub origin: String,
    pub tree_size: u64,
    pub entries: usize,
    /// The policy's witnesses that cosigned the checkpoint (with a policy only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosigned_by: Option<Vec<String>>,
    /// With a completeness part: what it proved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<complete::Complete>,
}

fn unhex(s: &str) -> Option<Hash> {
    let b = s.as_bytes();
    if b.len() != 64 || !b.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// The inclusion proof of `index` in the tree of `size` read from the tiles, once the tiles'
/// leaf there is `leaf` (an index outside the tree: no proof, which the check rejects).
fn proof_from_tiles(
    t: &TileReader<'_>,
    index: u64,
    size: u64,
    leaf: &Hash,
) -> Result<Vec<Hash>, EntryFault> {
    if index >= size {
        return Ok(Vec::new());
    }
    let at = t
        .node(Node { level: 0, index })
        .map_err(EntryFault::TileRead)?;
    if &at != leaf {
        return Err(EntryFault::TileLeaf { leaf: index });
    }
    t.inclusion(index, size).map_err(EntryFault::TileRead)
}

fn check_entry(
    e: &Entry,
    size: u64,
    root: &Hash,
    tiles: Option<&TileReader<'_>>,
) -> Result<(), EntryFault> {
    let data = B64
        .decode(&e.leaf_data)
        .map_err(|_| EntryFault::Base64("leaf_data"))?;
    let raw = B64.decode(&e.raw).map_err(|_| EntryFault::Base64("raw"))?;
    let opening = match &e.opening {
        Some(o) => Some(B64.decode(o).map_err(|_| EntryFault::Base64("opening"))?),
        None => None,
    };
    let row_hash = unhex(&e.row_hash).ok_or(EntryFault::RowHashHex)?;
    if <[u8; 32]>::from(Sha256::digest(&data)) != row_hash {
        return Err(EntryFault::RowHash);
    }
    let mut c = leaf::parse(&data).map_err(EntryFault::Leaf)?;
    // A version 3 leaf's personal columns and raw message come from its opening; without one
    // (erased) the entry may show none of them, and no raw bytes.
    match (opening.as_deref(), c.commitment.is_some()) {
        (Some(o), true) => leaf::open(&mut c, o).map_err(EntryFault::Leaf)?,
        (Some(_), false) => return Err(EntryFault::Opening),
        (None, _) => {}
    }
    if c.raw != raw.as_slice() {
        return Err(EntryFault::Raw);
    }
    let seq = Json::Num(e.stream_seq.clone());
    fields::check("stream", "stream", &Json::Str(e.stream.clone()), &c)
        .map_err(EntryFault::Field)?;
    fields::check("stream_seq", "stream_seq", &seq, &c).map_err(EntryFault::Field)?;
    for (key, shown) in &e.columns {
        fields::check(&format!("columns.{key}"), key, shown, &c).map_err(EntryFault::Field)?;
    }
    let leaf = merkle::leaf_hash(&row_hash);
    let proof = match tiles {
        Some(t) => proof_from_tiles(t, e.leaf_index, size, &leaf)?,
        None => e
            .inclusion_proof
            .iter()
            .map(|p| {
                let b = B64
                    .decode(p)
                    .map_err(|_| EntryFault::Base64("an inclusion_proof hash"))?;
                Hash::try_from(b).map_err(|_| EntryFault::ProofHash)
            })
            .collect::<Result<Vec<Hash>, EntryFault>>()?,
    };
    merkle::verify_inclusion(e.leaf_index, size, &leaf, &proof, root).map_err(|why| {
        EntryFault::Proof {
            leaf: e.leaf_index,
            size,
            why,
        }
    })
}

/// Checks a bundle's text: its checkpoint signed by `key` (without a key, as it claims: for
/// `prove`'s own check of what it writes), then `expect`, then every entry.
pub fn check(text: &str, key: Option<&PublicKey>, expect: &Expect) -> Result<Proven, BundleError> {
    check_against(text, key, expect, None)
}

/// The bundle's shape, as read (its claims not checked).
pub fn read(text: &str) -> Result<Bundle, BundleError> {
    shape::read(text)
}

/// [`check`], each entry's inclusion read from the log's tiles (`verify-proof --tiles`) instead
/// of the bundle's proof hashes: the tiles' root at the checkpoint's size must be the signed
/// root, the tiles' leaf at each entry's index its leaf hash, and the proof read from the tiles
/// must lead to the signed root.
pub fn check_against_tiles(
    text: &str,
    key: &PublicKey,
    expect: &Expect,
    tiles: &TileReader<'_>,
) -> Result<Proven, BundleError> {
    check_against(text, Some(key), expect, Some(tiles))
}

fn check_against(
    text: &str,
    key: Option<&PublicKey>,
    expect: &Expect,
    tiles: Option<&TileReader<'_>>,
) -> Result<Proven, BundleError> {
    let b = shape::read(text)?;
    let (cp, cosigned_by) = signed(&b.checkpoint, key, expect)?;
    if let Some(t) = tiles {
        let root = t
            .root(cp.size)
            .map_err(|e| BundleError::Unusable(format!("tiles: {e}")))?;
        if root != cp.root {
            return Err(BundleError::TilesRoot { size: cp.size });
        }
    }
    for (index, e) in b.entries.iter().enumerate() {
        check_entry(e, cp.size, &cp.root, tiles).map_err(|fault| BundleError::Entry {
            index,
            stream: e.stream.clone(),
            seq: e.stream_seq.clone(),
            fault: Box::new(fault),
        })?;
    }
    let complete = match &b.completeness {
        Some(c) => Some(check_completeness(c, &b.entries, &cp, tiles)?),
        None => None,
    };
    Ok(Proven {
        format: b.format,
        origin: cp.origin,
        tree_size: cp.size,
        entries: b.entries.len(),
        cosigned_by,
        complete,
    })
}

/// The checkpoint a proof is made against: its note opened with `key` (without one, as it
/// claims), of `expect`'s origin, and the policy's witnesses that cosigned it (with a policy).
fn signed(
    note_text: &str,
    key: Option<&PublicKey>,
    expect: &Expect,
) -> Result<(crate::tlog::note::Checkpoint, Option<Vec<String>>), BundleError> {
    let cp = match key {
        Some(k) => note::open(note_text, k),
        None => note::claimed(note_text),
    }
    .map_err(BundleError::Checkpoint)?;
    if let Some(want) = &expect.origin {
        if &cp.origin != want {
            return Err(BundleError::Origin {
                got: cp.origin,
                want: want.clone(),
            });
        }
    }
    let cosigned_by = match &expect.policy {
        Some(p) => Some(p.check(note_text).map_err(BundleError::Policy)?),
        None => None,
    };
    Ok((cp, cosigned_by))
}

/// The completeness part: its record entry checked as an entry is, read as an index record,
/// then every claim against it and the bundle's (checked) entries.
fn check_completeness(
    c: &complete::Completeness,
    entries: &[Entry],
    cp: &crate::tlog::note::Checkpoint,
    tiles: Option<&TileReader<'_>>,
) -> Result<complete::Complete, BundleError> {
    let fault = |f| BundleError::Complete(f);
    let r = &c.record;
    check_entry(r, cp.size, &cp.root, tiles)
        .map_err(|e| fault(complete::not_a_record(r, e.to_string())))?;
    let raw = B64.decode(&r.raw).unwrap_or_default();
    let rec = complete::record(&raw).map_err(|why| fault(complete::not_a_record(r, why)))?;
    if r.stream != complete::RECORD_STREAM {
        return Err(fault(complete::not_a_record(r, String::new())));
    }
    // Every entry was checked: its row hash is its leaf data's.
    let rows: Vec<(Entry, Hash)> = entries
        .iter()
        .map(|e| (e.clone(), unhex(&e.row_hash).unwrap_or_default()))
        .collect();
    complete::check(c, &rec, r.leaf_index, &rows).map_err(fault)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_strict() {
        assert!(unhex(&"ab".repeat(32)).is_some());
        assert!(unhex(&"AB".repeat(32)).is_some());
        assert!(unhex(&"ab".repeat(31)).is_none());
        assert!(unhex(&"zz".repeat(32)).is_none());
        assert!(unhex(&format!("+a{}", "ab".repeat(31))).is_none());
    }
}
