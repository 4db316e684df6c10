//! The recorded erasures `verify` accepts: only records that are rows of the log (stream
//! `event-audit.erasures`, their batch linked into the chain, so the tree and the witnessed
//! checkpoints cover them), read before the walk. A row whose personal data is gone is accepted
//! only when such a record names it with the row hash it still has; an entry of
//! `audit.erasures` without its record's row in the log is a break.

use std::collections::HashMap;

use super::store::ErasureRow;
use super::{Break, VerifyStore};
use crate::db::DbError;
use crate::row::erasure::Erasure;
use crate::row::hex;

/// One erasure as the report names it.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct Named {
    pub(crate) erasure: i64,
    pub(crate) at: String,
    pub(crate) reason: String,
    pub(crate) selector: String,
    pub(crate) rows: usize,
}

/// What the report says about erasures.
#[derive(Debug, Clone, Default, serde::Serialize, PartialEq, Eq)]
pub struct Summary {
    /// The erasure records in the log, in order.
    pub(crate) records: Vec<Named>,
    /// Rows found erased (covered by a record) whose hash still holds (encoding version 3).
    pub(crate) rows_erased: i64,
    /// Rows found erased (covered by a record) whose contents can no longer be checked
    /// (encodings 1 and 2: their stored hash stands in the tree, unverifiable).
    pub(crate) rows_unverifiable: i64,
}

impl Summary {
    /// The summary line's part: the erasures by number, and the erased rows.
    pub(crate) fn line(&self) -> String {
        let ids: Vec<String> = self.records.iter().map(|r| r.erasure.to_string()).collect();
        format!(
            "{} recorded erasure(s) ({}): {} erased rows whose hash still holds, {} erased, contents unverifiable (row encodings 1 and 2)",
            self.records.len(),
            if ids.is_empty() { "none".to_owned() } else { ids.join(", ") },
            self.rows_erased,
            self.rows_unverifiable
        )
    }
}

/// The rows the log's erasure records name: `(stream, seq)` → (erasure, row hash in hex).
#[derive(Debug, Default)]
pub(crate) struct Erasures {
    rows: HashMap<(String, i64), (i64, String)>,
    /// Erasures by publication time: `[from, before)` in Unix microseconds.
    ranges: Vec<(Option<i64>, i64)>,
    pub(crate) summary: Summary,
}

impl Erasures {
    /// Whether a record names this row with this row hash, or erased every row published in a
    /// range that holds this one's time (erasures by time: retention, pruned partitions).
    pub(crate) fn covers(
        &self,
        stream: &str,
        seq: i64,
        published_us: i64,
        row_hash: &[u8],
    ) -> bool {
        let in_range = |&(from, before): &(Option<i64>, i64)| {
            from.is_none_or(|f| published_us >= f) && published_us < before
        };
        self.ranges.iter().any(in_range)
            || self
                .rows
                .get(&(stream.to_owned(), seq))
                .is_some_and(|(_, h)| *h == hex(row_hash))
    }

    /// From the records' rows and `audit.erasures`; the breaks found on the way.
    pub(crate) fn from_rows(
        rows: &[ErasureRow],
        index: &[(i64, Vec<u8>)],
    ) -> (Erasures, Vec<Break>) {
        let mut out = Erasures::default();
        let mut breaks = Vec::new();
        let brk = |why: String| Break {
            link: None,
            batch: None,
            stream: Some(crate::row::erasure::STREAM.to_owned()),
            stream_seq: None,
            why,
        };
        for r in rows.iter().filter(|r| r.linked) {
            match Erasure::parse(&r.raw) {
                Some(e) if e.erasure == r.stream_seq => {
                    let count = match &e.published {
                        None => e.rows.len(),
                        Some(p) => match p.range_us() {
                            Some(range) => {
                                out.ranges.push(range);
                                usize::try_from(p.count).unwrap_or(0)
                            }
                            None => {
                                breaks.push(brk(format!(
                                    "erasure record {}: its publication range does not parse",
                                    r.stream_seq
                                )));
                                continue;
                            }
                        },
                    };
                    for x in &e.rows {
                        out.rows.insert(
                            (x.stream.clone(), x.stream_seq),
                            (e.erasure, x.row_hash.clone()),
                        );
                    }
                    out.summary.records.push(Named {
                        erasure: e.erasure,
                        at: e.at,
                        reason: e.reason,
                        selector: e.selector,
                        rows: count,
                    });
                }
                // The record itself erased: nothing it named is accepted through it.
                None if r.raw.is_empty() => {}
                _ => breaks.push(brk(format!(
                    "erasure record {}: its raw message is not an erasure record of that number",
                    r.stream_seq
                ))),
            }
        }
        for (id, hash) in index {
            let held = rows
                .iter()
                .any(|r| r.linked && r.stream_seq == *id && r.row_hash == *hash);
            if !held {
                breaks.push(brk(format!(
                    "erasure {id} in audit.erasures has no record of its own in the chain and the tree (an erasure written outside the log)"
                )));
            }
        }
        (out, breaks)
    }
}

impl VerifyStore {
    /// The erasures the log records, and the breaks in their records.
    pub(crate) async fn erasures(&self) -> Result<(Erasures, Vec<Break>), DbError> {
        let rows = self.erasure_rows().await?;
        let index = self.erasure_index().await?;
        Ok(Erasures::from_rows(&rows, &index))
    }
}
