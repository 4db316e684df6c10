//! C2SP tlog-proof (`c2sp.org/tlog-proof@v1`), pure: the offline inclusion proof ("spicy
//! signature") of one log entry, read, written and verified in the four steps of the spec's
//! "Verifying a tlog proof". For this log the entry is a row's row hash (32 bytes: what the
//! entry bundles of its tiles hold), its leaf hash `SHA-256(0x00 ‖ row hash)`.
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! [extra <base64 opaque data, not authenticated>]
//! index <leaf index, decimal, no leading zero>
//! <base64 proof hash>            zero or more, the leaf's sibling first (RFC 6962 PATH)
//!                                an empty line
//! <the checkpoint's signed note, verbatim, cosignatures included>
//! ```
//!
//! Step 1 (the leaf hash) is the caller's ([`entry_leaf`] for this log); step 2 the origin and
//! the log's signature; step 3 the witness policy's quorum of valid cosignatures; step 4 the
//! inclusion proof against the signed root.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::merkle::{self, Hash, ProofError};
use super::note::{self, parse_decimal, Checkpoint, NoteError, PublicKey, MAX_NOTE};
use super::policy::{PolicyError, WitnessPolicy};

/// The first line of every proof.
pub const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// The file extension the spec recommends.
pub const EXTENSION: &str = "tlog-proof";

/// The most proof hashes a proof holds: a tree of at most 2^64 leaves is 64 levels deep.
pub const MAX_HASHES: usize = 64;

/// The longest proof read: its note, 64 hash lines and room for extra data.
pub const MAX_PROOF: u64 = MAX_NOTE + (256 << 10);

/// Why a text is not a usable tlog-proof (its own lines; the checkpoint is step 2's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("not a tlog-proof: the first line is not `c2sp.org/tlog-proof@v1`")]
    Header,
    #[error("longer than a tlog-proof can be ({MAX_PROOF} bytes)")]
    TooLong,
    #[error("the line `extra` is not followed by a space and canonical base64")]
    Extra,
    #[error("no line `index <N>` (a decimal leaf index without leading zeros) after the header")]
    Index,
    #[error("proof hash {0} is not the canonical base64 of 32 bytes")]
    Hash(usize),
    #[error("more than {MAX_HASHES} proof hashes, more than a tree of 2^64 leaves needs")]
    TooManyHashes,
    #[error("no empty line and checkpoint after the proof hashes")]
    NoCheckpoint,
    #[error("a line holds a control character (a carriage return, a tab)")]
    Control,
}

/// A verification step that failed (the proof is rejected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("step 2 (checkpoint origin): the checkpoint is of log {got}, not {want}")]
    Origin { got: String, want: String },
    #[error("step 2 (log signature): {0}")]
    Signature(NoteError),
    #[error("step 3 (cosignatures): {0}")]
    Cosignatures(PolicyError),
    #[error("step 4 (inclusion proof): the entry at index {index} does not lead to the signed root of tree size {size}: {why}")]
    Inclusion {
        index: u64,
        size: u64,
        why: ProofError,
    },
}

impl StepError {
    /// The spec's step number that failed.
    pub fn step(&self) -> u8 {
        match self {
            StepError::Origin { .. } | StepError::Signature(_) => 2,
            StepError::Cosignatures(_) => 3,
            StepError::Inclusion { .. } => 4,
        }
    }
}

/// One proof: what the file says, unverified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// Opaque extra data (the `extra` line), never trusted.
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    /// The inclusion proof, the leaf's sibling first.
    pub hashes: Vec<Hash>,
    /// The checkpoint's signed note, verbatim (ends with a newline).
    pub checkpoint: String,
}

/// What a proof accepts: the log's key, the origin, and the witness policy.
#[derive(Debug, Clone, Copy)]
pub struct Accept<'a> {
    pub key: &'a PublicKey,
    /// The origin the checkpoint must carry.
    pub origin: &'a str,
    /// Whose quorum of cosignatures it must carry (`None`: no cosignature is asked).
    pub policy: Option<&'a WitnessPolicy>,
}

/// What a verified proof proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub checkpoint: Checkpoint,
    pub index: u64,
    /// The policy's witnesses whose valid cosignature the note carries (with a policy only).
    pub cosigned_by: Option<Vec<String>>,
}

/// Step 1 for this log: the leaf hash of an entry (a row hash), `SHA-256(0x00 ‖ entry)`.
pub fn entry_leaf(entry: &[u8]) -> Hash {
    merkle::leaf_hash(entry)
}

/// Whether a text claims to be a tlog-proof (its first line is the header).
pub fn is_tlog_proof(text: &str) -> bool {
    text.split('\n').next() == Some(HEADER)
}

fn canonical(b64: &str) -> Option<Vec<u8>> {
    B64.decode(b64).ok().filter(|b| B64.encode(b) == b64)
}

impl TlogProof {
    /// Reads a proof's text strictly: every line as the spec writes it, the checkpoint kept
    /// verbatim (it is read in step 2).
    pub fn parse(text: &str) -> Result<TlogProof, FormatError> {
        if text.len() as u64 > MAX_PROOF {
            return Err(FormatError::TooLong);
        }
        let mut rest = text
            .strip_prefix(HEADER)
            .and_then(|r| r.strip_prefix('\n'))
            .ok_or(FormatError::Header)?;
        let line = |rest: &mut &str| -> Result<String, FormatError> {
            let (l, r) = rest.split_once('\n').ok_or(FormatError::NoCheckpoint)?;
            if l.bytes().any(|b| b < 0x20) {
                return Err(FormatError::Control);
            }
            *rest = r;
            Ok(l.to_owned())
        };
        let mut l = line(&mut rest)?;
        let extra = match l.strip_prefix("extra") {
            Some(e) => {
                let data = e
                    .strip_prefix(' ')
                    .and_then(canonical)
                    .ok_or(FormatError::Extra)?;
                l = line(&mut rest)?;
                Some(data)
            }
            None => None,
        };
        let index = l
            .strip_prefix("index ")
            .and_then(parse_decimal)
            .ok_or(FormatError::Index)?;
        let mut hashes = Vec::new();
        loop {
            let l = line(&mut rest)?;
            if l.is_empty() {
                break;
            }
            if hashes.len() == MAX_HASHES {
                return Err(FormatError::TooManyHashes);
            }
            let h = canonical(&l)
                .and_then(|b| Hash::try_from(b).ok())
                .ok_or(FormatError::Hash(hashes.len() + 1))?;
            hashes.push(h);
        }
        if rest.is_empty() {
            return Err(FormatError::NoCheckpoint);
        }
        Ok(TlogProof {
            extra,
            index,
            hashes,
            checkpoint: rest.to_owned(),
        })
    }

    /// The proof's text, as the spec lays it out.
    pub fn encode(&self) -> String {
        let mut out = format!("{HEADER}\n");
        if let Some(e) = &self.extra {
            out += &format!("extra {}\n", B64.encode(e));
        }
        out += &format!("index {}\n", self.index);
        for h in &self.hashes {
            out += &B64.encode(h);
            out.push('\n');
        }
        out.push('\n');
        out += &self.checkpoint;
        out
    }

    /// Steps 2 to 4 for the leaf hash `leaf` (step 1's): the checkpoint's origin and the
    /// log's signature, the policy's quorum of cosignatures, the inclusion of `leaf` at the
    /// proof's index under the signed root. The first step that fails is the error.
    pub fn verify(&self, leaf: &Hash, accept: &Accept<'_>) -> Result<Verified, StepError> {
        let claimed = note::claimed(&self.checkpoint).map_err(StepError::Signature)?;
        if claimed.origin != accept.origin {
            return Err(StepError::Origin {
                got: claimed.origin,
                want: accept.origin.to_owned(),
            });
        }
        let cp = note::open(&self.checkpoint, accept.key).map_err(StepError::Signature)?;
        let cosigned_by = match accept.policy {
            Some(p) => Some(p.check(&self.checkpoint).map_err(StepError::Cosignatures)?),
            None => None,
        };
        self.included(leaf, &cp)?;
        Ok(Verified {
            checkpoint: cp,
            index: self.index,
            cosigned_by,
        })
    }

    /// Step 4 alone, against a checkpoint already opened.
    pub fn included(&self, leaf: &Hash, cp: &Checkpoint) -> Result<(), StepError> {
        merkle::verify_inclusion(self.index, cp.size, leaf, &self.hashes, &cp.root).map_err(|why| {
            StepError::Inclusion {
                index: self.index,
                size: cp.size,
                why,
            }
        })
    }
}

#[cfg(test)]
#[path = "proof_tests.rs"]
mod tests;
