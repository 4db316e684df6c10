//! The pipeline's writers: each takes a batch, writes it through the sink (retrying transient
//! errors with backoff, telling JetStream the messages are still in progress), and only after
//! the commit acks its messages. A batch is given up, unacked, when the shutdown timeout passes
//! or a write fails for good (which stops the pipeline).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::{AckKind, Acker};
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::outcome::{Busy, IngestError, Totals};
use super::sink::{BatchOutcome, Sink};
use crate::db::{Class, DbError};
use crate::ingest::metrics::IngestMetrics;
use crate::row::record::Record;
use crate::telemetry::health::Health;

pub(super) struct Batch {
    /// The records, in the order they came (the sink writes them in log order).
    pub(super) records: Vec<Record>,
    /// The batch's acks, sent all together once it committed (or as progress while it is
    /// written): they need not line up with the records.
    pub(super) ackers: Vec<Acker>,
    pub(super) fetched: Instant,
}

/// The signals the fetch loop and the writers share.
pub(super) struct Control {
    /// A permanent failure: stop fetching, stop retrying.
    pub(super) halt: CancellationToken,
    /// The shutdown timeout passed (or a permanent failure): give up what is not committed.
    pub(super) give_up: CancellationToken,
    pub(super) fatal: Mutex<Option<IngestError>>,
    /// Batches given up: (messages, first stream sequence).
    pub(super) abandoned: Mutex<Vec<(usize, i64)>>,
    /// How often a write in progress tells JetStream its messages are still being worked on.
    pub(super) progress_every: Duration,
    /// How long at least one batch was in hand, over every writer.
    pub(super) busy: Busy,
}

impl Control {
    pub(super) fn fail(&self, e: IngestError, health: &Health) {
        health.fail(e.to_string());
        tracing::error!(error = %e, "ingest stops");
        self.fatal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.halt.cancel();
        self.give_up.cancel();
    }

    pub(super) fn abandon(&self, batch: &Batch, health: &Health) {
        let first = batch.records.first().map_or(0, |r| r.stream_seq);
        self.abandoned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((batch.records.len(), first));
        health.batch_dropped();
    }
}

/// Starts `writers` writers, each taking the next batch from the returned sender until it is
/// dropped, then ending with its totals.
pub(super) fn spawn(
    writers: usize,
    sink: &Sink,
    metrics: &Arc<IngestMetrics>,
    health: &Arc<Health>,
    ctl: &Arc<Control>,
) -> (mpsc::Sender<Batch>, Vec<JoinHandle<Totals>>) {
    let (tx, rx) = mpsc::channel::<Batch>(writers);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let handles = (0..writers)
        .map(|_| {
            let sink = sink.clone();
            let metrics = metrics.clone();
            let health = health.clone();
            let rx = rx.clone();
            let ctl = ctl.clone();
            tokio::spawn(async move {
                let mut totals = Totals::default();
                loop {
                    let next = rx.lock().await.recv().await;
                    let Some(batch) = next else { break };
                    write_and_ack(&sink, &metrics, &health, &ctl, batch, &mut totals).await;
                }
                totals
            })
        })
        .collect();
    (tx, handles)
}

/// Sends `kind` for every message, unless `give_up` comes first; whether all were sent.
async fn ack_all(ackers: &[Acker], kind: AckKind, give_up: &CancellationToken) -> bool {
    let send = async {
        for a in ackers {
            let _ = a.ack_with(kind).await;
        }
    };
    tokio::select! {
        biased;
        _ = give_up.cancelled() => false,
        _ = send => true,
    }
}

fn class_name(c: Class) -> &'static str {
    match c {
        Class::Data => "data",
        Class::Transient => "transient",
        Class::Duplicate => "duplicate",
        Class::Permanent => "permanent",
    }
}

/// Writes one batch, retrying transient errors with backoff (telling JetStream the messages are
/// still in progress), then acks every message. Never acks before the commit. Gives the batch
/// up, unacked, when the shutdown timeout passes or a write fails for good.
pub(super) async fn write_and_ack(
    sink: &Sink,
    metrics: &IngestMetrics,
    health: &Health,
    ctl: &Control,
    mut batch: Batch,
    totals: &mut Totals,
) {
    totals.first.get_or_insert(batch.fetched);
    let _in_hand = ctl.busy.hold(batch.fetched);
    let started = Instant::now();
    let Some(outcome) = write(sink, metrics, health, ctl, &mut batch).await else {
        return;
    };
    let committed = Utc::now();
    health.batch_committed(committed);
    health.reduced_rows.inc_by(outcome.reduced as u64);
    metrics
        .write_seconds
        .observe(started.elapsed().as_secs_f64());
    // The commit stands; an ack lost here (or cut off by the shutdown timeout) means a
    // redelivery, which adds nothing.
    if !ack_all(&batch.ackers, AckKind::Ack, &ctl.give_up).await {
        tracing::warn!(
            messages = batch.records.len(),
            "shutdown timeout while acking a committed batch; its messages will be redelivered and skipped"
        );
    }
    count_committed(metrics, &batch, &outcome, committed);
    totals.messages += batch.records.len() as u64;
    totals.inserted += outcome.inserted as u64;
    totals.batches += 1;
    totals.last = Some(Instant::now());
    tracing::debug!(
        messages = batch.records.len(),
        inserted = outcome.inserted,
        link = outcome.link_seq,
        "batch committed and acked"
    );
}

/// Writes the batch until it commits, retrying transient errors with backoff. `None`: given up
/// (the shutdown timeout, or a permanent failure, which stops the pipeline).
async fn write(
    sink: &Sink,
    metrics: &IngestMetrics,
    health: &Health,
    ctl: &Control,
    batch: &mut Batch,
) -> Option<BatchOutcome> {
    let mut delay = Duration::from_millis(100);
    loop {
        let e = match attempt(sink, ctl, batch).await {
            None => {
                ctl.abandon(batch, health);
                return None;
            }
            Some(Ok(o)) => return Some(o),
            Some(Err(e)) => e,
        };
        let class = e.class();
        health.db_error(class_name(class));
        if matches!(class, Class::Data | Class::Permanent) {
            // A data error left after every fallback, or a permanent error: the same write
            // cannot succeed. (A duplicate left after the checks is a race with another
            // writer: retried, the redelivery check then skips what it committed.)
            ctl.abandon(batch, health);
            ctl.fail(IngestError::Permanent(e), health);
            return None;
        }
        metrics.write_retries.inc();
        log_write_error(&e, batch.records.len(), delay);
        if !ack_all(&batch.ackers, AckKind::Progress, &ctl.give_up).await {
            ctl.abandon(batch, health);
            return None;
        }
        tokio::select! {
            biased;
            _ = ctl.give_up.cancelled() => {
                ctl.abandon(batch, health);
                return None;
            }
            _ = tokio::time::sleep(delay + jitter(delay)) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(10));
    }
}

/// One write of the batch. A write slower than the ack wait tells JetStream the messages are
/// still in progress, so that they are not redelivered meanwhile. `None`: given up.
async fn attempt(
    sink: &Sink,
    ctl: &Control,
    batch: &mut Batch,
) -> Option<Result<BatchOutcome, DbError>> {
    let write = sink.write_batch(&mut batch.records);
    tokio::pin!(write);
    let mut progress = tokio::time::interval_at(
        tokio::time::Instant::now() + ctl.progress_every,
        ctl.progress_every,
    );
    loop {
        tokio::select! {
            biased;
            _ = ctl.give_up.cancelled() => return None,
            r = &mut write => return Some(r),
            _ = progress.tick() => {
                for a in &batch.ackers {
                    let _ = a.ack_with(AckKind::Progress).await;
                }
            }
        }
    }
}

/// The metrics of a committed batch: counts, sizes, findings, and each message's event,
/// status, errors, bytes and lag to `committed`.
fn count_committed(
    metrics: &IngestMetrics,
    batch: &Batch,
    outcome: &BatchOutcome,
    committed: DateTime<Utc>,
) {
    metrics.batches.inc();
    metrics.batch_size.observe(batch.records.len() as f64);
    metrics.redeliveries.inc_by(outcome.redelivered as u64);
    metrics.duplicates.inc_by(outcome.duplicates as u64);
    metrics.conflicts.inc_by(outcome.conflicts as u64);
    metrics.rows.inc_by(outcome.inserted as u64);
    metrics.new_fields(&outcome.new_fields);
    use crate::decode::verdict::Status;
    for r in &batch.records {
        metrics.message(
            r.catalogue_index,
            r.status,
            || r.event_name(),
            r.unknown_field_count,
        );
        metrics.errors(&r.error_codes);
        metrics.bytes.inc_by(r.raw.len() as u64);
        let from = r.occurred_at.unwrap_or(r.published_at);
        let lag = (committed - from).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
        metrics.lag_seconds.observe(lag);
        if r.status != Status::Decoded {
            // Stream sequence and event name only: never payload values.
            tracing::debug!(
                stream_seq = r.stream_seq,
                event = r.event_name().as_deref().unwrap_or("-"),
                status = %r.status,
                "recorded"
            );
        }
    }
}

fn jitter(d: Duration) -> Duration {
    d.mul_f64(rand::random::<f64>() * 0.5)
}

fn log_write_error(e: &DbError, n: usize, delay: Duration) {
    tracing::warn!(error = %e, class = ?e.class(), messages = n, retry_in_ms = delay.as_millis() as u64, "batch write failed; retrying, nothing acked");
}
