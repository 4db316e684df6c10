//! `event-audit verify`: checks the chain's links in order, then rehashes every row in parallel
//! ([`mod@walk`]: binary COPY over several connections, [`crate::row::copy`] parses it, [`rows`] checks a row)
//! and lists every break (a row, a link, the head, an unlinked row), naming the first in log
//! order; [`gaps`] reports which stream sequences the log holds and why the others are missing.
//! It reads the log through [`crate::log::Reader`] (the log's one read side, where its SQL is);
//! it opens the database as a reader (never creates, never migrates).
//! [`run()`] is the whole use case (chain, completeness, witness, auditor's state, mirror,
//! archive) returning one typed [`VerifyReport`], which the command line only renders.

pub(crate) mod archive;
pub(crate) mod auditor;
pub(crate) mod breaks;
pub(crate) mod erasures;
mod findings;
pub(crate) mod gaps;
pub(crate) mod index;
pub(crate) mod metrics;
pub(crate) mod mirror;
pub(crate) mod reverdicts;
pub(crate) mod rows;
mod run;
mod tree_sink;
pub(crate) mod walk;
pub(crate) mod witness;

use std::sync::Arc;
use std::time::Instant;

use crate::config::defaults::VERIFY_MAX_BREAKS;
use crate::db::DbError;
use crate::log::read::{LinkRow, RunRecord};
use crate::log::Reader;
use crate::verify::metrics::{ChainMetrics, GAP_KINDS};
pub(crate) use run::Recorded;
pub(crate) use run::{run, CouldNotVerify, VerifyOptions, VerifyReport};
pub(crate) use walk::LeafSink;

/// Why a walk could not be completed (not a break: the log could not be read).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Db(DbError),
    #[error("reading the rows of {place}: {source}")]
    Copy {
        place: String,
        source: crate::row::copy::CopyError,
    },
    #[error(transparent)]
    Gaps(#[from] gaps::GapsError),
}

/// One thing that does not hold. `why` names it (row by stream and sequence, batch, link).
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub(crate) struct Break {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) link: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) batch: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_seq: Option<i64>,
    pub(crate) why: String,
}

/// The outcome of one walk: the chain's part of a run's [`VerifyReport`] (its top-level keys).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChainReport {
    pub ok: bool,
    pub links: i64,
    /// The rows of the log (every linked row, whether rehashed or not).
    pub rows: i64,
    /// The rows rehashed by this run: all of them, but with `--incremental`.
    pub(crate) rows_rehashed: i64,
    /// The first thing that does not match in log order, naming the row (stream, sequence),
    /// the batch or the link.
    pub(crate) first_break: Option<String>,
    /// Every break in log order, the first [`VERIFY_MAX_BREAKS`] of them.
    pub(crate) breaks: Vec<Break>,
    /// How many breaks there are in all (`breaks` may be cut).
    pub(crate) breaks_total: i64,
    pub head_link_seq: i64,
    pub(crate) duration_ms: i64,
    /// Completeness per stream, when it was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) completeness: Option<gaps::Completeness>,
    /// On a hot standby: how far its view reaches (the run is not recorded there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) standby: Option<crate::log::standby::StandbyView>,
    /// The recorded erasures and the erased rows found (absent when the log records none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) erasures: Option<erasures::Summary>,
}

/// How to walk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkOptions {
    /// Connections streaming rows at once.
    pub(crate) workers: usize,
    /// Rehash the rows of links from this one on (the links before are still checked against
    /// each other); `None` rehashes every row.
    pub(crate) from_link: Option<i64>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            workers: 2,
            from_link: None,
        }
    }
}

fn link_break(l: &LinkRow, why: String) -> Break {
    Break {
        link: Some(l.link_seq),
        batch: Some(l.batch_id),
        stream: None,
        stream_seq: None,
        why,
    }
}

impl crate::log::read::LastRun {
    /// Sets the verify metrics from this run (the chain poller's job).
    pub(crate) fn export(&self, m: &ChainMetrics) {
        m.verify_ok.set(i64::from(self.ok));
        m.verify_time.set(self.verified_at.timestamp());
        m.verify_rows.set(self.rows);
        m.verify_duration
            .set(self.duration_ms.unwrap_or(0) as f64 / 1000.0);
        let gaps = [
            self.gaps_purged,
            self.gaps_deleted,
            self.gaps_missing,
            self.gaps_pending,
        ];
        for (kind, n) in GAP_KINDS.iter().zip(gaps) {
            m.verify_gaps.with_label_values(&[kind]).set(n.unwrap_or(0));
        }
        m.verify_witness_ok
            .set(self.witness_ok.map_or(-1, i64::from));
    }
}

impl ChainReport {
    /// Adds a break found outside the walk (e.g. in the re-verdicts of `reprocess`).
    pub(crate) fn add_break(&mut self, why: String) {
        self.breaks_total += 1;
        if self.breaks.len() < VERIFY_MAX_BREAKS {
            self.breaks.push(Break {
                link: None,
                batch: None,
                stream: None,
                stream_seq: None,
                why: why.clone(),
            });
        }
        self.ok = false;
        self.first_break.get_or_insert(why);
    }

    /// Adds the completeness report: every `missing` gap is a break.
    pub(crate) fn add_completeness(&mut self, c: gaps::Completeness) {
        let missing = c.breaks();
        self.breaks_total += missing.len() as i64;
        self.breaks.extend(missing);
        self.breaks.truncate(VERIFY_MAX_BREAKS);
        self.ok = self.breaks_total == 0;
        self.first_break = self.breaks.first().map(|b| b.why.clone());
        self.completeness = Some(c);
    }
}

/// Walks the whole chain with the default options and records the result.
pub async fn verify(log: &Reader) -> Result<ChainReport, VerifyError> {
    let report = walk(log, WalkOptions::default(), None).await?;
    record(log, &report, None).await?;
    Ok(report)
}

/// Records a run (through the function the auditor may call).
pub(crate) async fn record(
    log: &Reader,
    report: &ChainReport,
    witness_ok: Option<bool>,
) -> Result<(), VerifyError> {
    let c = report.completeness.as_ref();
    let count = |k| c.map(|c| c.count(k));
    log.record_run(&RunRecord {
        ok: report.ok,
        links: report.links,
        rows: report.rows,
        first_break: report.first_break.as_deref(),
        breaks: report.breaks_total,
        duration_ms: report.duration_ms,
        gaps_purged: count(gaps::GapKind::Purged),
        gaps_deleted: count(gaps::GapKind::Deleted),
        gaps_missing: count(gaps::GapKind::Missing),
        gaps_pending: count(gaps::GapKind::Pending),
        witness_ok,
    })
    .await?;
    Ok(())
}

/// Checks the links against each other and the head, rehashes the rows (see
/// [`WalkOptions`]), handing each link's row hashes to `sink` in log order, and looks for
/// rows outside the chain. Lists every break.
pub(crate) async fn walk(
    log: &Reader,
    opts: WalkOptions,
    sink: Option<&mut dyn LeafSink>,
) -> Result<ChainReport, VerifyError> {
    let started = Instant::now();
    let links = log.links().await?;
    let mut breaks = Vec::new();
    let mut prev: &[u8] = &[0u8; 32];
    for (expect, l) in (1i64..).zip(&links) {
        if l.link_seq != expect || l.prev_hash != prev {
            breaks.push(link_break(
                l,
                format!(
                    "link {}: does not follow link {} (chain broken or a link removed)",
                    l.link_seq,
                    expect - 1
                ),
            ));
        }
        prev = &l.hash;
    }
    let head_link_seq = links.last().map_or(0, |l| l.link_seq);
    let (head_seq, head_hash) = log.chain_head().await?;
    let head_break = (head_seq != head_link_seq || head_hash != prev).then(|| Break {
        link: Some(head_seq),
        batch: None,
        stream: None,
        stream_seq: None,
        why: format!("chain head (link {head_seq}) does not match the last link ({head_link_seq})"),
    });
    let n_links = links.len() as i64;
    let linked_total: i64 = links.iter().map(|l| i64::from(l.row_count)).sum();
    let from = opts.from_link.unwrap_or(i64::MIN);
    let walked: Vec<LinkRow> = links.into_iter().filter(|l| l.link_seq >= from).collect();
    let (erasures, erasure_breaks) = erasures::read(log).await?;
    let erasures = Arc::new(erasures);
    let complete = opts.from_link.is_none();
    let w = walk::rows(
        log,
        Arc::new(walked),
        erasures.clone(),
        opts.workers,
        complete,
        sink,
    )
    .await?;
    let rehashed = w.rows;
    breaks.extend(w.breaks);
    // Log order: by link (a link's own break after its rows'), stable otherwise.
    breaks.sort_by_key(|b| b.link.unwrap_or(i64::MAX));
    breaks.extend(head_break);
    breaks.extend(erasure_breaks);
    let mut summary = erasures.summary.clone();
    summary.rows_erased = w.emptied.hash_holds;
    summary.rows_unverifiable = w.emptied.unverifiable;
    summary.leaves_restored = w.emptied.restored;
    // Every row of a linked batch was walked: more rows than that lie outside the chain (the
    // costly search that names them runs only then).
    // (Incremental: the links' own counts stand for the rows not walked.)
    let (expected, rows) = match opts.from_link {
        None => (rehashed, rehashed),
        Some(_) => (linked_total, linked_total),
    };
    let outside = log.row_count().await? != expected;
    let unlinked = if outside {
        log.unlinked_rows(VERIFY_MAX_BREAKS as i64).await?
    } else {
        Vec::new()
    };
    let unlinked_total = unlinked.first().map_or(0, |u| u.total);
    let mut total = breaks.len() as i64;
    breaks.extend(unlinked.into_iter().map(|u| Break {
        link: None,
        batch: Some(u.batch_id),
        stream_seq: Some(u.stream_seq),
        why: format!(
            "row stream={} stream_seq={}: batch {} has no chain link (row inserted outside the chain)",
            u.stream, u.stream_seq, u.batch_id
        ),
        stream: Some(u.stream),
    }));
    total += unlinked_total;
    // The envelope-id findings, recomputed from the rows.
    let found = findings::check(log).await?;
    total += found.len() as i64;
    breaks.extend(found);
    breaks.truncate(VERIFY_MAX_BREAKS);
    Ok(ChainReport {
        ok: total == 0,
        links: n_links,
        rows,
        rows_rehashed: rehashed,
        first_break: breaks.first().map(|b| b.why.clone()),
        breaks,
        breaks_total: total,
        head_link_seq,
        duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        completeness: None,
        standby: None,
        erasures: (!summary.records.is_empty()
            || !summary.restores.is_empty()
            || w.emptied != walk::Emptied::default())
        .then_some(summary),
    })
}
