//! The ingest pipeline: fetch a batch from the durable consumer, decode it into rows, write it
//! in one transaction, and only then ack it. Two stages, so decoding batch N+1 overlaps the
//! database write of batch N; memory is bounded by the batch size and the channel depth.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::pull::MessagesError;

use crate::bus::PullConsumer;
use async_nats::jetstream::message::{AckKind, Acker};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};

use crate::metrics::Metrics;
use crate::record::{record, Meta, Naming, Record};
use crate::store::{Store, StoreError};

/// What the pipeline needs besides the consumer.
pub struct Ingest {
    pub store: Store,
    pub metrics: Arc<Metrics>,
    pub naming: Naming,
    pub batch_size: usize,
    /// Set while the consumer's message stream is open.
    pub bound: Arc<AtomicBool>,
    /// How long a batch waits to fill up before it is written anyway.
    pub linger: Duration,
    /// Batches written concurrently (each its own transaction; the chain link serializes only
    /// the few microseconds of linking).
    pub writers: usize,
}

struct Batch {
    records: Vec<Record>,
    ackers: Vec<Acker>,
    fetched: Instant,
}

/// Totals of one run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    pub messages: u64,
    pub inserted: u64,
    pub batches: u64,
    /// When the first batch arrived and the last one was acked.
    pub first: Option<Instant>,
    pub last: Option<Instant>,
}

impl Totals {
    /// Seconds from the first message to the last ack.
    pub fn busy_secs(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        }
    }
}

fn meta_of(msg: &async_nats::jetstream::Message) -> Option<Meta> {
    let info = msg.info().ok()?;
    let published_at = DateTime::from_timestamp_micros(info.published.timestamp_micros())?;
    let headers = msg
        .headers
        .as_ref()
        .map(|h| {
            h.iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| (k.to_string(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Some(Meta {
        stream: Arc::from(info.stream),
        stream_seq: info.stream_sequence,
        published_at,
        subject: msg.subject.to_string(),
        delivery_count: info.delivered,
        headers,
    })
}

impl Ingest {
    /// Decodes a chunk into the batch; returns the time spent decoding.
    fn add(
        &self,
        batch: &mut Batch,
        chunk: Vec<Result<async_nats::jetstream::Message, MessagesError>>,
        received_at: DateTime<Utc>,
    ) -> Duration {
        let started = Instant::now();
        for m in chunk {
            let msg = match m {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, "pull consumer error; continuing");
                    continue;
                }
            };
            let Some(meta) = meta_of(&msg) else {
                tracing::warn!(subject = %msg.subject, "message without JetStream metadata; not acked");
                continue;
            };
            let (msg, acker) = msg.split();
            batch
                .records
                .push(record(meta, msg.payload, &self.naming, received_at));
            batch.ackers.push(acker);
        }
        started.elapsed()
    }

    /// Runs until `shutdown` turns true (then finishes the batch in hand) or, with
    /// `exit_when_idle`, until the consumer has nothing pending.
    pub async fn run(
        &self,
        consumer: PullConsumer,
        mut shutdown: watch::Receiver<bool>,
        exit_when_idle: bool,
    ) -> anyhow::Result<Totals> {
        let mut messages = consumer
            .stream()
            .max_messages_per_batch(self.batch_size)
            .heartbeat(Duration::from_secs(5))
            .expires(Duration::from_secs(30))
            .messages()
            .await?
            .ready_chunks(self.batch_size.div_ceil(4));
        self.bound.store(true, Ordering::SeqCst);
        let writers = self.writers.max(1);
        let (tx, rx) = mpsc::channel::<Batch>(writers);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                let store = self.store.clone();
                let metrics = self.metrics.clone();
                let rx = rx.clone();
                tokio::spawn(async move {
                    let mut totals = Totals::default();
                    loop {
                        let next = rx.lock().await.recv().await;
                        let Some(batch) = next else { break };
                        write_and_ack(&store, &metrics, batch, &mut totals).await;
                    }
                    totals
                })
            })
            .collect();
        let mut idle_checks = 0u32;
        loop {
            let next = tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                n = tokio::time::timeout(Duration::from_secs(1), messages.next()) => n,
            };
            let chunk = match next {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(_elapsed) => {
                    if exit_when_idle {
                        idle_checks += 1;
                        if idle_checks >= 2
                            && matches!(crate::bus::consumer_state(&consumer).await, Some((0, 0)))
                        {
                            break;
                        }
                    }
                    continue;
                }
            };
            idle_checks = 0;
            let started = Instant::now();
            let received_at = Utc::now();
            let mut batch = Batch {
                records: Vec::with_capacity(self.batch_size),
                ackers: Vec::with_capacity(self.batch_size),
                fetched: started,
            };
            let mut decoding = self.add(&mut batch, chunk, received_at);
            // Fill the batch up to its size, waiting at most `linger` for more messages.
            let deadline = tokio::time::Instant::now() + self.linger;
            while batch.records.len() < self.batch_size {
                match tokio::time::timeout_at(deadline, messages.next()).await {
                    Ok(Some(chunk)) => decoding += self.add(&mut batch, chunk, received_at),
                    _ => break,
                }
            }
            self.metrics.decode_seconds.observe(decoding.as_secs_f64());
            if batch.records.is_empty() {
                continue;
            }
            if tx.send(batch).await.is_err() {
                break;
            }
        }
        // Stop fetching; the writer commits and acks what it holds, then ends.
        self.bound.store(false, Ordering::SeqCst);
        drop(messages);
        drop(tx);
        let mut totals = Totals::default();
        for h in handles {
            let t = h.await?;
            totals.messages += t.messages;
            totals.inserted += t.inserted;
            totals.batches += t.batches;
            totals.first = match (totals.first, t.first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            totals.last = totals.last.max(t.last);
        }
        Ok(totals)
    }
}

/// Writes one batch, retrying transient errors with backoff (telling JetStream the messages are
/// still in progress), then acks every message. Never acks before the commit.
async fn write_and_ack(store: &Store, metrics: &Metrics, mut batch: Batch, totals: &mut Totals) {
    totals.first.get_or_insert(batch.fetched);
    // The store writes in (stream, sequence) order; keep each acker beside its record.
    let mut pairs: Vec<(Record, Acker)> = batch
        .records
        .drain(..)
        .zip(batch.ackers.drain(..))
        .collect();
    pairs.sort_by(|(a, _), (b, _)| a.log_key().cmp(&b.log_key()));
    (batch.records, batch.ackers) = pairs.into_iter().unzip();
    let mut delay = Duration::from_millis(100);
    let started = Instant::now();
    let outcome = loop {
        match store.write_batch(&mut batch.records).await {
            Ok(o) => break o,
            Err(e) => {
                metrics.write_retries.inc();
                metrics.up.with_label_values(&["postgres"]).set(0);
                log_write_error(&e, batch.records.len(), delay);
                for a in &batch.ackers {
                    let _ = a.ack_with(AckKind::Progress).await;
                }
                tokio::time::sleep(delay + jitter(delay)).await;
                delay = (delay * 2).min(Duration::from_secs(10));
            }
        }
    };
    let committed = Utc::now();
    metrics.up.with_label_values(&["postgres"]).set(1);
    metrics
        .write_seconds
        .observe(started.elapsed().as_secs_f64());
    for (a, r) in batch.ackers.iter().zip(&batch.records) {
        if let Err(e) = a.ack().await {
            // The commit stands; a lost ack means a redelivery, which adds nothing.
            tracing::warn!(
                error = %e,
                stream_seq = r.stream_seq,
                event = r.event_name().as_deref().unwrap_or("-"),
                "ack failed; the message will be redelivered and skipped"
            );
        }
    }
    metrics.batches.inc();
    metrics.batch_size.observe(batch.records.len() as f64);
    metrics.redeliveries.inc_by(outcome.redelivered as u64);
    metrics.duplicates.inc_by(outcome.duplicates as u64);
    metrics.conflicts.inc_by(outcome.conflicts as u64);
    metrics.rows.inc_by(outcome.inserted as u64);
    if outcome.link_seq > metrics.chain_head.get() {
        metrics.chain_head.set(outcome.link_seq);
    }
    for r in &batch.records {
        metrics.message(
            r.catalogue_index,
            r.status,
            r.event_name().as_deref(),
            r.unknown_field_count,
        );
        metrics.errors(&r.error_codes);
        metrics.bytes.inc_by(r.raw.len() as u64);
        let from = r.occurred_at.unwrap_or(r.published_at);
        let lag = (committed - from).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
        metrics.lag_seconds.observe(lag);
        if r.status != crate::verdict::Status::Decoded {
            // Stream sequence and event name only: never payload values.
            tracing::debug!(
                stream_seq = r.stream_seq,
                event = r.event_name().as_deref().unwrap_or("-"),
                status = %r.status,
                "recorded"
            );
        }
    }

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

fn jitter(d: Duration) -> Duration {
    d.mul_f64(rand::random::<f64>() * 0.5)
}

fn log_write_error(e: &StoreError, n: usize, delay: Duration) {
    tracing::warn!(error = %e, transient = e.is_transient(), messages = n, retry_in_ms = delay.as_millis() as u64, "batch write failed; retrying, nothing acked");
}
