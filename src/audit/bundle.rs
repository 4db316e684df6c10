//! Evidence bundles (`event-audit-bundle/1`, written by `prove`), checked offline: the signed
//! checkpoint against the public key, then per entry its row hash (SHA-256 of its leaf data, the
//! row's canonical encoding), its raw bytes (the last field of the leaf data: u64 big-endian
//! length, then the bytes), and its RFC 9162 inclusion proof of leaf `SHA-256(0x00 ‖ row hash)`
//! against the checkpoint's root. Each failure names what failed. Pure: no I/O.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::note::{self, NoteError, PublicKey};
use super::tlog::{self, Hash, ProofError};

/// The format name a bundle carries.
pub const FORMAT: &str = "event-audit-bundle/1";

/// A bundle, as `prove` writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bundle {
    pub format: String,
    /// The whole signed note.
    pub checkpoint: String,
    pub entries: Vec<Entry>,
}

/// One proven row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub stream: String,
    pub stream_seq: i64,
    pub leaf_index: u64,
    /// The raw message, base64.
    pub raw: String,
    /// The decoded columns, for humans (not checked).
    #[serde(default)]
    pub columns: serde_json::Value,
    /// The canonical encoding of the row, base64.
    pub leaf_data: String,
    /// SHA-256 of the leaf data, hex.
    pub row_hash: String,
    /// Base64 32-byte hashes.
    pub inclusion_proof: Vec<String>,
}

/// What is wrong with one entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryFault {
    #[error("{0} is not valid base64")]
    Base64(&'static str),
    #[error("row hash is not 64 hex digits")]
    RowHashHex,
    #[error("row hash is not SHA-256 of the leaf data")]
    RowHash,
    #[error("raw bytes are not the raw field of the leaf data")]
    Raw,
    #[error("a proof hash is not 32 bytes")]
    ProofHash,
    #[error("inclusion proof does not lead to the checkpoint's root: {0}")]
    Proof(ProofError),
}

/// Why a bundle is rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("not a bundle: {0}")]
    Json(String),
    #[error("format `{0}` is not {FORMAT}")]
    Format(String),
    #[error("checkpoint signature: {0}")]
    Checkpoint(NoteError),
    #[error("entry {index} (stream {stream} seq {seq}, leaf {leaf} of tree size {size}): {fault}")]
    Entry {
        index: usize,
        stream: String,
        seq: i64,
        leaf: u64,
        size: u64,
        fault: EntryFault,
    },
}

/// What a bundle proves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proven {
    pub origin: String,
    pub tree_size: u64,
    pub entries: usize,
}

fn unhex(s: &str) -> Option<Hash> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

/// Whether `raw` is the last field of `leaf_data` (u64 big-endian length, then the bytes).
pub fn raw_is_last_field(leaf_data: &[u8], raw: &[u8]) -> bool {
    let n = raw.len();
    let Some(at) = leaf_data.len().checked_sub(n + 8) else {
        return false;
    };
    leaf_data[at..at + 8] == (n as u64).to_be_bytes() && &leaf_data[at + 8..] == raw
}

fn check_entry(e: &Entry, size: u64, root: &Hash) -> Result<(), EntryFault> {
    let leaf_data = B64
        .decode(&e.leaf_data)
        .map_err(|_| EntryFault::Base64("leaf data"))?;
    let raw = B64.decode(&e.raw).map_err(|_| EntryFault::Base64("raw"))?;
    let row_hash = unhex(&e.row_hash.to_ascii_lowercase()).ok_or(EntryFault::RowHashHex)?;
    if <[u8; 32]>::from(Sha256::digest(&leaf_data)) != row_hash {
        return Err(EntryFault::RowHash);
    }
    if !raw_is_last_field(&leaf_data, &raw) {
        return Err(EntryFault::Raw);
    }
    let proof = e
        .inclusion_proof
        .iter()
        .map(|p| {
            let b = B64
                .decode(p)
                .map_err(|_| EntryFault::Base64("proof hash"))?;
            Hash::try_from(b).map_err(|_| EntryFault::ProofHash)
        })
        .collect::<Result<Vec<Hash>, EntryFault>>()?;
    let leaf = tlog::leaf_hash(&row_hash);
    tlog::verify_inclusion(e.leaf_index, size, &leaf, &proof, root).map_err(EntryFault::Proof)
}

/// Checks a bundle's text with `key`.
pub fn check(text: &str, key: &PublicKey) -> Result<Proven, BundleError> {
    let b: Bundle = serde_json::from_str(text).map_err(|e| BundleError::Json(e.to_string()))?;
    if b.format != FORMAT {
        return Err(BundleError::Format(b.format));
    }
    let cp = note::open(&b.checkpoint, key).map_err(BundleError::Checkpoint)?;
    for (index, e) in b.entries.iter().enumerate() {
        check_entry(e, cp.size, &cp.root).map_err(|fault| BundleError::Entry {
            index,
            stream: e.stream.clone(),
            seq: e.stream_seq,
            leaf: e.leaf_index,
            size: cp.size,
            fault,
        })?;
    }
    Ok(Proven {
        origin: cp.origin,
        tree_size: cp.size,
        entries: b.entries.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_is_the_length_prefixed_last_field() {
        let mut leaf = b"event-audit row v2\0".to_vec();
        leaf.extend_from_slice(&3u64.to_be_bytes());
        leaf.extend_from_slice(b"abc");
        assert!(raw_is_last_field(&leaf, b"abc"));
        assert!(!raw_is_last_field(&leaf, b"abd"));
        assert!(!raw_is_last_field(&leaf, b"bc"));
        assert!(!raw_is_last_field(b"short", b"abc"));
        let mut empty = b"x".to_vec();
        empty.extend_from_slice(&0u64.to_be_bytes());
        assert!(raw_is_last_field(&empty, b""));
    }

    #[test]
    fn hex_is_strict() {
        assert!(unhex(&"ab".repeat(32)).is_some());
        assert!(unhex(&"ab".repeat(31)).is_none());
        assert!(unhex(&"zz".repeat(32)).is_none());
    }
}
