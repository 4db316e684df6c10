//! The recorded erasures `verify` accepts: only records that are rows of the log (stream
//! `event-audit.erasures`, their batch linked into the chain, so the tree and the witnessed
//! checkpoints cover them), read before the walk. An erasure reaches only what precedes it: a
//! row whose personal data is gone is accepted only when a record placed after it in the log
//! names it with the row hash it still has, or erased every row published in a range that holds
//! its time; a row emptied after every record that could cover it is a break. An erasure by
//! publication time also names how many rows it emptied and a digest of their hashes, which
//! [`tally`] holds against the rows it covers. An entry of `audit.erasures` without its
//! record's row in the log is a break.

pub(crate) mod restores;
mod tally;

use std::collections::HashMap;

use super::Break;
use crate::db::DbError;
use crate::log::read::ErasureRow;
use crate::log::Reader;
use crate::row::erasure::{self, Erasure};
use crate::row::hex;
use crate::row::restore;
use restores::{NamedRestore, RestoreRecord};
pub(crate) use tally::Tally;

/// One erasure as the report names it.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) erasure: i64,
    pub(crate) at: String,
    pub(crate) reason: String,
    pub(crate) selector: String,
    pub(crate) rows: usize,
}

/// What the report says about erasures.
#[derive(Debug, Clone, Default, serde::Serialize, PartialEq, Eq)]
pub(crate) struct Summary {
    /// The erasure records in the log, in order.
    pub(crate) records: Vec<Named>,
    /// Rows found erased (covered by a record) whose hash still holds (encoding version 3).
    pub(crate) rows_erased: i64,
    /// Rows found erased (covered by a record) whose contents can no longer be checked
    /// (encodings 1 and 2: their stored hash stands in the tree, unverifiable).
    pub(crate) rows_unverifiable: i64,
    /// The restores the log records, in order (a database restored from a backup whose lost
    /// leaves came back from a copy of the tiles).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) restores: Vec<NamedRestore>,
    /// Rows of restored leaves found, each covered by a restore record.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) leaves_restored: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Summary {
    /// The summary line's part: the erasures by number, and the erased rows.
    pub(crate) fn line(&self) -> String {
        let ids: Vec<String> = self.records.iter().map(|r| r.erasure.to_string()).collect();
        let erased = !ids.is_empty() || self.rows_erased > 0 || self.rows_unverifiable > 0;
        let mut parts = Vec::new();
        if !erased && self.restores.is_empty() {
            parts.push("no recorded erasure".to_owned());
        } else if erased {
            // The rows of encodings 1 and 2, whose contents cannot be checked once erased, are
            // said only when there are some.
            let unverifiable = if self.rows_unverifiable > 0 {
                format!(
                    ", {} erased, contents unverifiable (row encodings 1 and 2)",
                    self.rows_unverifiable
                )
            } else {
                String::new()
            };
            parts.push(format!(
                "{} recorded erasure(s) ({}): {} erased rows whose hash still holds{unverifiable}",
                self.records.len(),
                if ids.is_empty() {
                    "none".to_owned()
                } else {
                    ids.join(", ")
                },
                self.rows_erased,
            ));
        }
        for r in &self.restores {
            parts.push(format!(
                "restore {} at {}: leaves {}..{} restored from {} (row hashes kept, contents lost)",
                r.restore,
                r.at,
                r.leaves[0],
                r.leaves[1].saturating_sub(1),
                r.from
            ));
        }
        parts.join("; ")
    }
}

/// An erasure by publication time: every row published in `[from, before)` (Unix
/// microseconds) and recorded before it, how many it emptied and the digest of their hashes.
#[derive(Debug, Clone)]
pub(crate) struct ByTime {
    pub(crate) from: Option<i64>,
    pub(crate) before: i64,
    pub(crate) count: i64,
    pub(crate) digest: String,
    /// A pruned partition: its count and digest are of every row of the range (the archive's),
    /// already erased ones included; otherwise of the rows this erasure itself emptied.
    pub(crate) prune: bool,
}

impl ByTime {
    fn holds(&self, published_us: i64) -> bool {
        self.from.is_none_or(|f| published_us >= f) && published_us < self.before
    }
}

/// One record of the log, as `verify` holds rows against it.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// Its number (its sequence in the erasure stream).
    pub(crate) erasure: i64,
    /// The chain link of its row: it covers only rows of earlier links.
    pub(crate) link: i64,
    pub(crate) by_time: Option<ByTime>,
}

/// A row as the walk meets it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'a> {
    pub(crate) stream: &'a str,
    pub(crate) stream_seq: i64,
    pub(crate) published_us: i64,
    pub(crate) row_hash: &'a [u8],
    /// The chain link of the row's batch.
    pub(crate) link: i64,
    /// Whether its personal data is gone.
    pub(crate) emptied: bool,
    /// Its leaf index in the tree, where its link has one.
    pub(crate) leaf: Option<u64>,
}

/// What the records say of an emptied row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judged {
    /// A record placed after the row names it or covers its time: the first such.
    Covered,
    /// Only records placed before the row would cover it: the first one's number.
    EmptiedAfter(i64),
    /// No record names the row or covers its time.
    Uncovered,
    /// A restored leaf's row, at its index, covered by a restore record placed after it.
    Restored,
}

/// The rows the log's erasure records name, and their erasures by time.
#[derive(Debug, Default)]
pub(crate) struct Erasures {
    /// In log order.
    pub(crate) records: Vec<Record>,
    /// stream → sequence → (record index, row hash in hex).
    named: HashMap<String, HashMap<i64, Vec<(usize, String)>>>,
    /// Indexes of the records by time, and of the prunes among them.
    by_time: Vec<usize>,
    prunes: Vec<usize>,
    /// The restore records, in order.
    pub(crate) restores: Vec<RestoreRecord>,
    pub(crate) summary: Summary,
}

impl Erasures {
    /// Judges one row, and pushes `(record index, row hash)` for each erasure by time whose
    /// count and digest include it onto `counted`.
    pub(crate) fn judge(&self, p: &Place<'_>, counted: &mut Vec<(u32, [u8; 32])>) -> Judged {
        if p.stream == restore::LEAVES {
            return restores::judge(&self.restores, self.records.len(), p, counted);
        }
        if self.records.is_empty() || p.stream == erasure::STREAM || p.stream == restore::STREAM {
            return Judged::Uncovered;
        }
        let hash = || <[u8; 32]>::try_from(p.row_hash).unwrap_or([0; 32]);
        // A prune counts every row of its range recorded before it, emptied or not.
        for &i in &self.prunes {
            let r = &self.records[i];
            if r.link > p.link && r.by_time.as_ref().is_some_and(|t| t.holds(p.published_us)) {
                counted.push((i as u32, hash()));
            }
        }
        if !p.emptied {
            return Judged::Uncovered;
        }
        // The records that name this row with its hash or cover its time, in log order.
        let named = self
            .named
            .get(p.stream)
            .and_then(|s| s.get(&p.stream_seq))
            .into_iter()
            .flatten()
            .filter(|(_, h)| *h == hex(p.row_hash))
            .map(|(i, _)| *i);
        let timed = self.by_time.iter().copied().filter(|&i| {
            self.records[i]
                .by_time
                .as_ref()
                .is_some_and(|t| t.holds(p.published_us))
        });
        let mut first_after: Option<usize> = None;
        let mut first_before: Option<usize> = None;
        for i in named.chain(timed) {
            let slot = if self.records[i].link > p.link {
                &mut first_after
            } else {
                &mut first_before
            };
            if slot.is_none_or(|j| self.records[i].link < self.records[j].link) {
                *slot = Some(i);
            }
        }
        match (first_after, first_before) {
            (Some(i), _) => {
                // The first record after the row emptied it: an erasure by time counts it
                // (a prune counted it above, whatever emptied it).
                if self.records[i].by_time.as_ref().is_some_and(|t| !t.prune) {
                    counted.push((i as u32, hash()));
                }
                Judged::Covered
            }
            (None, Some(i)) => Judged::EmptiedAfter(self.records[i].erasure),
            (None, None) => Judged::Uncovered,
        }
    }

    /// From the records' rows and `audit.erasures`; the breaks found on the way.
    pub(crate) fn from_rows(
        rows: &[ErasureRow],
        index: &[(i64, Vec<u8>)],
    ) -> (Erasures, Vec<Break>) {
        let mut out = Erasures::default();
        let mut breaks = Vec::new();
        for r in rows {
            let Some(link) = r.link_seq.filter(|_| r.linked) else {
                continue;
            };
            match Erasure::parse(&r.raw) {
                Some(e) if e.erasure == r.stream_seq => match out.add(e, link) {
                    Ok(()) => {}
                    Err(why) => breaks.push(record_break(r.stream_seq, Some(link), why)),
                },
                // The record itself erased: nothing it named is accepted through it.
                None if r.raw.is_empty() => {}
                _ => breaks.push(record_break(
                    r.stream_seq,
                    Some(link),
                    "its raw message is not an erasure record of that number".to_owned(),
                )),
            }
        }
        out.index();
        for (id, hash) in index {
            let held = rows
                .iter()
                .any(|r| r.linked && r.stream_seq == *id && r.row_hash == *hash);
            if !held {
                breaks.push(Break {
                    link: None,
                    batch: None,
                    stream: Some(erasure::STREAM.to_owned()),
                    stream_seq: None,
                    why: format!("erasure {id} in audit.erasures has no record of its own in the chain and the tree (an erasure written outside the log)"),
                });
            }
        }
        (out, breaks)
    }

    /// Adds one record placed at `link`.
    fn add(&mut self, e: Erasure, link: i64) -> Result<(), String> {
        let by_time = match &e.published {
            None => None,
            Some(p) => {
                let (from, before) = p
                    .range_us()
                    .ok_or_else(|| "its publication range does not parse".to_owned())?;
                Some(ByTime {
                    from,
                    before,
                    count: p.count,
                    digest: p.row_hashes_sha256.clone(),
                    prune: e.archive.is_some(),
                })
            }
        };
        let rows = by_time
            .as_ref()
            .map_or(e.rows.len(), |t| usize::try_from(t.count).unwrap_or(0));
        for x in &e.rows {
            self.named
                .entry(x.stream.clone())
                .or_default()
                .entry(x.stream_seq)
                .or_default()
                .push((self.records.len(), x.row_hash.clone()));
        }
        self.records.push(Record {
            erasure: e.erasure,
            link,
            by_time,
        });
        self.summary.records.push(Named {
            erasure: e.erasure,
            at: e.at,
            reason: e.reason,
            selector: e.selector,
            rows,
        });
        Ok(())
    }

    /// Lists the erasures by time and the prunes.
    fn index(&mut self) {
        for (i, r) in self.records.iter().enumerate() {
            if let Some(t) = &r.by_time {
                self.by_time.push(i);
                if t.prune {
                    self.prunes.push(i);
                }
            }
        }
    }
}

/// A break in (or about) erasure record `erasure`.
pub(crate) fn record_break(erasure: i64, link: Option<i64>, why: String) -> Break {
    Break {
        link,
        batch: None,
        stream: Some(erasure::STREAM.to_owned()),
        stream_seq: Some(erasure),
        why: format!("erasure record {erasure}: {why}"),
    }
}

/// The erasures the log records, and the breaks in their records.
pub(crate) async fn read(log: &Reader) -> Result<(Erasures, Vec<Break>), DbError> {
    let rows = log.erasure_rows().await?;
    let index = log.erasure_index().await?;
    let (mut e, mut breaks) = Erasures::from_rows(&rows, &index);
    let (restores, more) = restores::read(&log.restore_rows().await?);
    e.summary.restores = restores.iter().map(RestoreRecord::named).collect();
    e.restores = restores;
    breaks.extend(more);
    Ok((e, breaks))
}

#[cfg(test)]
#[path = "erasures_tests.rs"]
mod tests;
