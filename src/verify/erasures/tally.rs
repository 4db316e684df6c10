//! Each erasure by publication time held against the rows it covers: the walk hands over, link
//! by link in log order, the rows each such record counts (see `Erasures::judge`); they are fed
//! to the record's digest in the order its digest was made (batch, then the batch's own row
//! order), and at the end the count and the digest must be the record's. Links reach the log
//! nearly in batch order, so only the few links that arrive ahead of a smaller batch wait.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::restores::restore_break;
use super::{record_break, Erasures};
use crate::log::read::LinkRow;
use crate::row::hex;
use crate::verify::Break;

/// The running count and digest of every erasure by time.
pub(crate) struct Tally {
    /// The walked links as `(batch id, link seq)`, by batch id: the digests' order.
    order: Vec<(i64, i64)>,
    next: usize,
    /// Walked links not yet fed, by link seq: the rows they count, as `(record, row hash)`.
    waiting: HashMap<i64, Vec<(u32, [u8; 32])>>,
    sums: Vec<(Sha256, i64)>,
    /// Whether the walk starts at the log's first link: only then are the counts whole.
    complete: bool,
}

impl Tally {
    /// For a walk of `links` (in log order) against `records` records.
    pub(crate) fn new(links: &[LinkRow], records: usize, complete: bool) -> Tally {
        let mut order: Vec<(i64, i64)> = links.iter().map(|l| (l.batch_id, l.link_seq)).collect();
        order.sort_unstable();
        Tally {
            order,
            next: 0,
            waiting: HashMap::new(),
            sums: (0..records).map(|_| (Sha256::new(), 0)).collect(),
            complete,
        }
    }

    /// The rows link `link_seq` counts, as the walk found them.
    pub(crate) fn link(&mut self, link_seq: i64, counted: Vec<(u32, [u8; 32])>) {
        self.waiting.insert(link_seq, counted);
        while let Some(&(_, seq)) = self.order.get(self.next) {
            let Some(rows) = self.waiting.remove(&seq) else {
                return;
            };
            for (record, hash) in rows {
                if let Some((h, n)) = self.sums.get_mut(record as usize) {
                    h.update(hash);
                    *n += 1;
                }
            }
            self.next += 1;
        }
    }

    /// The breaks: every erasure by time whose rows are not the count and digest it records.
    /// Nothing when the walk did not start at the first link (`--incremental`).
    pub(crate) fn finish(self, erasures: &Erasures) -> Vec<Break> {
        if !self.complete {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut sums = self.sums.into_iter();
        for ((h, n), r) in sums.by_ref().zip(&erasures.records) {
            let Some(t) = &r.by_time else {
                continue;
            };
            let why = if n != t.count {
                if t.prune {
                    format!("its range holds {n} row(s) recorded before it, the record says it pruned {} (rows added, removed or emptied beyond what it pruned)", t.count)
                } else {
                    format!("{n} row(s) recorded before it in its range are emptied and not by an earlier erasure, the record says it emptied {} (a row emptied beyond its count)", t.count)
                }
            } else if hex(&h.finalize()) != t.digest {
                format!("the hashes of the {n} row(s) it covers do not match its digest (other rows emptied than it erased)")
            } else {
                continue;
            };
            out.push(record_break(r.erasure, Some(r.link), why));
        }
        for ((h, n), r) in sums.zip(&erasures.restores) {
            let want = r.leaves.end - r.leaves.start;
            let why = if u64::try_from(n).ok() != Some(want) {
                format!(
                    "{n} restored leaf row(s) recorded before it at its leaves {}..{}, the record restored {want} (rows removed or added)",
                    r.leaves.start,
                    r.leaves.end.saturating_sub(1)
                )
            } else if hex(&h.finalize()) != r.digest {
                "the hashes of its restored leaves do not match its digest".to_owned()
            } else {
                continue;
            };
            out.push(restore_break(r.number, Some(r.link), &why));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(seq: i64, batch: i64) -> LinkRow {
        LinkRow {
            link_seq: seq,
            batch_id: batch,
            row_count: 1,
            batch_digest: Vec::new(),
            prev_hash: Vec::new(),
            hash: Vec::new(),
            version: 2,
            tree_size: None,
            tree_root: None,
        }
    }

    #[test]
    fn rows_are_fed_in_batch_order_whatever_order_links_arrive_in() {
        // Batch 7 linked after batches 8 and 9.
        let links = [link(1, 8), link(2, 9), link(3, 7)];
        let mut t = Tally::new(&links, 1, true);
        t.link(1, vec![(0, [8; 32])]);
        t.link(2, vec![(0, [9; 32])]);
        assert_eq!(t.sums[0].1, 0, "waits for batch 7");
        t.link(3, vec![(0, [7; 32])]);
        assert_eq!(t.sums[0].1, 3);
        assert!(t.waiting.is_empty());
        let mut want = Sha256::new();
        for b in [7u8, 8, 9] {
            want.update([b; 32]);
        }
        assert_eq!(t.sums[0].0.clone().finalize(), want.finalize());
    }
}
