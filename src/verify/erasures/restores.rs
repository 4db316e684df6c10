//! The restores the log records (stream `event-audit.restores`): each names the leaves it
//! brought back from a copy of the tiles, `[database_size, size)`, and the digest of their row
//! hashes. A restored leaf's row (stream `event-audit.restored`, its sequence its leaf index,
//! no contents) is accepted only when it sits at the leaf index it claims and a restore record
//! placed after it covers that index; the record's leaves must be exactly such rows
//! (`super::tally` holds the count and the digest).

use super::{Break, Judged, Place};
use crate::log::read::ErasureRow;
use crate::row::restore::{self, Restore};

/// One restore record, as `verify` holds rows against it.
#[derive(Debug, Clone)]
pub(crate) struct RestoreRecord {
    pub(crate) number: i64,
    pub(crate) link: i64,
    pub(crate) leaves: std::ops::Range<u64>,
    pub(crate) digest: String,
    pub(crate) from: String,
    pub(crate) at: String,
    pub(crate) reason: String,
}

/// One restore as the report names it.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub(crate) struct NamedRestore {
    pub(crate) restore: i64,
    pub(crate) at: String,
    pub(crate) reason: String,
    pub(crate) from: String,
    pub(crate) leaves: [u64; 2],
}

/// The restore records of the log; the breaks in them.
pub(crate) fn read(rows: &[ErasureRow]) -> (Vec<RestoreRecord>, Vec<Break>) {
    let mut out = Vec::new();
    let mut breaks = Vec::new();
    for r in rows {
        let Some(link) = r.link_seq.filter(|_| r.linked) else {
            continue;
        };
        match Restore::parse(&r.raw) {
            Some(x) if x.restore == r.stream_seq && x.database_size <= x.size => {
                out.push(RestoreRecord {
                    number: x.restore,
                    link,
                    leaves: x.leaves(),
                    digest: x.row_hashes_sha256,
                    from: x.from,
                    at: x.at,
                    reason: x.reason,
                })
            }
            _ => breaks.push(restore_break(
                r.stream_seq,
                Some(link),
                "its raw message is not a restore record of that number",
            )),
        }
    }
    (out, breaks)
}

impl RestoreRecord {
    pub(crate) fn named(&self) -> NamedRestore {
        NamedRestore {
            restore: self.number,
            at: self.at.clone(),
            reason: self.reason.clone(),
            from: self.from.clone(),
            leaves: [self.leaves.start, self.leaves.end],
        }
    }
}

/// Judges a row of a restored leaf: covered by the first record placed after it whose leaves
/// hold its index, when it sits at that index; `(record, hash)` pushed for that record's
/// count and digest (its index in the tally comes after the erasures', `offset`).
pub(crate) fn judge(
    records: &[RestoreRecord],
    offset: usize,
    p: &Place<'_>,
    counted: &mut Vec<(u32, [u8; 32])>,
) -> Judged {
    let Ok(index) = u64::try_from(p.stream_seq) else {
        return Judged::Uncovered;
    };
    if p.leaf != Some(index) || !p.emptied {
        return Judged::Uncovered;
    }
    let first = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.link > p.link && r.leaves.contains(&index))
        .min_by_key(|(_, r)| r.link);
    match first {
        Some((i, _)) => {
            let hash = <[u8; 32]>::try_from(p.row_hash).unwrap_or([0; 32]);
            counted.push(((offset + i) as u32, hash));
            Judged::Restored
        }
        None => Judged::Uncovered,
    }
}

/// A break in (or about) restore record `n`.
pub(crate) fn restore_break(n: i64, link: Option<i64>, why: &str) -> Break {
    Break {
        link,
        batch: None,
        stream: Some(restore::STREAM.to_owned()),
        stream_seq: Some(n),
        why: format!("restore record {n}: {why}"),
    }
}
