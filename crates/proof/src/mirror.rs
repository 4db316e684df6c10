//! The auditor's mirror (`event-audit mirror`): a copy of every leaf of a log, kept outside the
//! log operators' reach, so that a log later wiped or rewritten can be shown to have been what
//! its copy holds. It follows C2SP tlog-mirror's copy of a log (`<dir>/<hex SHA-256 of the
//! origin>/`, served as tlog-tiles, its checkpoint the *mirror checkpoint*, never lowered) but
//! *pulls* from the log's tlog-tiles read path ([`source`]) instead of receiving `add-entries`.
//! A pull ([`pull`]) checks the log's signed checkpoint (and a witness policy's quorum), rebuilds
//! the tree from the mirror's copy and the new entry bundles, and stores the new tiles and the
//! checkpoint only when the rebuilt root is the signed one and every tile the log serves is the
//! one rebuilt; a smaller log (rollback) or one whose tree does not contain the copy (fork) is
//! evidence, reported with both signed notes, and the copy stays as it was. [`follow`] pulls at
//! an interval with [`metrics`]; [`index`] copies the account index's deltas with the tiles;
//! [`fsck`] checks any copy tile by tile against its checkpoint;
//! [`proof`] reads a bundle's inclusion from a log's or a
//! mirror's tiles for `verify-proof --tiles`. Needs no PostgreSQL and no NATS.

pub mod follow;
pub mod fsck;
pub mod index;
pub mod metrics;
pub mod proof;
pub mod pull;
pub mod source;

use crate::tiles::TilesError;
use crate::tlog::note::{Checkpoint, PublicKey};
use crate::tlog::policy::WitnessPolicy;
use source::{FetchError, Source};

/// A log as the mirror reads it: where, the key its checkpoints are signed with, and the
/// witnesses whose quorum of cosignatures they must carry.
#[derive(Debug, Clone)]
pub struct Log {
    pub source: Source,
    pub key: PublicKey,
    pub policy: Option<WitnessPolicy>,
    /// The most leaves one pull adds (a larger signed tree is refused before any fetch).
    pub max_leaves: u64,
}

/// The default of `--max-leaves-per-pull`: 2^24 leaves, about 1.1 GiB held while a pull checks
/// them (a first pull of a larger log raises it).
pub const MAX_LEAVES_PER_PULL: u64 = 1 << 24;

/// A checkpoint: its signed note as served, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub note: String,
    pub cp: Checkpoint,
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pulled {
    /// The copy went from `from` leaves to `size`.
    Added {
        origin: String,
        from: u64,
        size: u64,
    },
    /// The log signs the tree the copy holds.
    Unchanged { origin: String, size: u64 },
}

impl Pulled {
    pub fn size(&self) -> u64 {
        match self {
            Pulled::Added { size, .. } | Pulled::Unchanged { size, .. } => *size,
        }
    }
}

/// How the log's signed tree contradicts the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The log signs fewer leaves than the copy holds.
    Rollback,
    /// The log signs a tree that does not contain the copy's.
    Fork,
}

/// Why a pull stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("the log is unreachable: {0}")]
    Unreachable(FetchError),
    #[error("refused what the log serves: {0}")]
    Refused(String),
    #[error("{}", split_line(*.split, .mirror, .log))]
    Inconsistent {
        split: Split,
        mirror: Box<Signed>,
        log: Box<Signed>,
    },
    #[error("the mirror's copy: {0}")]
    Store(#[from] TilesError),
}

impl PullError {
    /// The `outcome` label of `event_audit_mirror_pulls_total`.
    pub fn outcome(&self) -> &'static str {
        match self {
            PullError::Unreachable(_) => "unreachable",
            PullError::Refused(_) => "refused",
            PullError::Inconsistent {
                split: Split::Rollback,
                ..
            } => "rollback",
            PullError::Inconsistent { .. } => "fork",
            PullError::Store(_) => "store_failed",
        }
    }

    /// What the log served was not usable: unreachable, or refused.
    pub(crate) fn served(e: FetchError) -> PullError {
        if e.is_unreachable() {
            PullError::Unreachable(e)
        } else {
            PullError::Refused(e.to_string())
        }
    }
}

fn split_line(split: Split, mirror: &Signed, log: &Signed) -> String {
    let (o, m, n) = (&mirror.cp.origin, mirror.cp.size, log.cp.size);
    match split {
        Split::Rollback => format!(
            "ROLLBACK: log {o} signs a tree of {n} leaves, but the mirror holds {m} leaves it signed before; the copy is kept as it is"
        ),
        Split::Fork => format!(
            "FORK: log {o} signs a tree of {n} leaves that does not contain the tree of {m} leaves the mirror holds, which it signed before; the copy is kept as it is"
        ),
    }
}
