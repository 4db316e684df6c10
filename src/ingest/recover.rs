//! Nothing lost that the bus still holds: the sequences the log holds of a stream (since the
//! stream was created) against the stream's state (first and last sequence, deleted ones).
//! Every sequence the stream still holds and the log lacks, in the window asked for (the
//! daemon: from the consumer's configured start to its ack floor, below which the consumer
//! never delivers again; `event-audit recover`: what the operator names), is read by its
//! sequence and recorded through the sink in stream order, with the same decoding and the same
//! exactly-once rules as any batch (a row already there, written meanwhile by another daemon,
//! is skipped by the sink). What the stream no longer holds is named as lost. Rows an erasure
//! or a prune emptied keep their keys, so they are held, and never recorded again. A stream
//! recreated under the same name (its sequences started again) is judged from its creation
//! time, and named.

pub(crate) mod metrics;
mod ordered;
pub(crate) mod plan;

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::StreamExt;

use super::sink::Sink;
use crate::bus::{js_err, Bus, BusError, API_TIMEOUT};
use crate::db::DbError;
use crate::row::record::{record, record_unparsed, Meta, Naming, Record};
use metrics::RecoverMetrics;
use plan::Plan;

/// Messages fetched by sequence at once.
const IN_FLIGHT: usize = 32;
/// From how many sequences on a run is read through an ordered consumer.
const ORDERED_FROM: u64 = 256;

/// Why a recovery could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecoverError {
    #[error("stream `{0}` does not exist on the bus: nothing to recover from")]
    NoStream(String),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Rows of the log published on a stream of the same name before the stream was created.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Reset {
    /// When the stream on the bus was created.
    pub(crate) created: String,
    /// Rows of its earlier incarnation, and the highest sequence among them.
    pub(crate) rows: i64,
    pub(crate) last_seq: i64,
}

/// What a recovery found and did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Recovered {
    pub(crate) stream: String,
    pub(crate) dry_run: bool,
    /// The window looked at, both ends included.
    pub(crate) window: [u64; 2],
    /// Runs of sequences the stream holds and the log lacked.
    pub(crate) missing: Vec<[u64; 2]>,
    /// Of them, recorded now, and found already there (written meanwhile).
    pub(crate) recorded: u64,
    pub(crate) present: u64,
    /// Runs of sequences the log lacks that the stream no longer holds.
    pub(crate) lost: Vec<[u64; 2]>,
    pub(crate) reset: Option<Reset>,
    /// How long reading and recording took, seconds.
    pub(crate) seconds: f64,
}

impl Recovered {
    /// Whether it found anything to say.
    pub(crate) fn found(&self) -> bool {
        !self.missing.is_empty() || !self.lost.is_empty() || self.reset.is_some()
    }

    /// One line: what was found, what was done, what the operator must do.
    pub(crate) fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.reset {
            parts.push(format!(
                "the stream was created at {} after {} row(s) of the log were published on a stream of that name (sequences up to {}): it was recreated and its sequences started again; its new messages are rows of their own, judged from its creation",
                r.created, r.rows, r.last_seq
            ));
        }
        if !self.missing.is_empty() {
            let n = Plan::count(&self.missing);
            parts.push(if self.dry_run {
                format!(
                    "the log lacks {n} sequence(s) the stream still holds ({}): a recovery would record them",
                    ranges(&self.missing)
                )
            } else {
                format!(
                    "the log lacked {n} sequence(s) the stream still holds ({}): {} recorded, {} already there, in {:.1} s",
                    ranges(&self.missing),
                    self.recorded,
                    self.present,
                    self.seconds
                )
            });
        }
        if !self.lost.is_empty() {
            parts.push(format!(
                "{} sequence(s) the log lacks are no longer on the stream ({}): lost to the log (see docs/disaster-recovery.md)",
                Plan::count(&self.lost),
                ranges(&self.lost)
            ));
        }
        if parts.is_empty() {
            parts.push("the log holds every sequence the stream holds".to_owned());
        }
        let window = if self.window[1] < self.window[0] {
            "no sequence yet".to_owned()
        } else {
            format!("sequences {}..{}", self.window[0], self.window[1])
        };
        format!("stream {} {window}: {}", self.stream, parts.join("; "))
    }
}

/// Runs as `a..b,c,d..e`, both ends included (as `--seq A..B` takes them).
pub(crate) fn ranges(runs: &[[u64; 2]]) -> String {
    runs.iter()
        .map(|[a, b]| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}..{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What a recovery works with.
pub(crate) struct Recover<'a> {
    pub(crate) bus: &'a Bus,
    pub(crate) sink: &'a Sink,
    pub(crate) naming: &'a Naming,
    pub(crate) batch_size: usize,
    pub(crate) metrics: Option<&'a RecoverMetrics>,
}

/// Which sequences to look at: from `from`, up to `to` (`None`: the stream's last).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub(crate) from: u64,
    pub(crate) to: Option<u64>,
}

impl Recover<'_> {
    /// Recovers `stream` in `window` (see the module); on `dry_run` only says what it would.
    pub(crate) async fn run(
        &self,
        stream: &str,
        window: Window,
        dry_run: bool,
    ) -> Result<Recovered, RecoverError> {
        let bus_state = self
            .bus
            .stream_state(stream)
            .await?
            .ok_or_else(|| RecoverError::NoStream(stream.to_owned()))?;
        let since = bus_state.created.unwrap_or(DateTime::UNIX_EPOCH);
        let held = self.sink.log().held_runs(stream, since).await?;
        let reset = self
            .sink
            .log()
            .rows_before(stream, since)
            .await?
            .map(|(rows, last_seq)| Reset {
                created: crate::row::erasure::stamp(since),
                rows,
                last_seq,
            });
        let began = std::time::Instant::now();
        let top = window.to.unwrap_or(bus_state.last_seq);
        let span = [window.from.max(1), top];
        let planned = plan::plan(&held, &bus_state, span);
        let mut out = Recovered {
            stream: stream.to_owned(),
            dry_run,
            window: span,
            missing: planned.read.clone(),
            recorded: 0,
            present: 0,
            lost: planned.lost,
            reset,
            seconds: 0.0,
        };
        if !dry_run {
            for &[a, b] in &planned.read {
                let from = if b - a + 1 >= ORDERED_FROM {
                    self.read_ordered(stream, [a, b], &mut out).await?
                } else {
                    a
                };
                if from <= b {
                    self.read_run(stream, [from, b], &mut out).await?;
                }
            }
        }
        out.seconds = began.elapsed().as_secs_f64();
        if let Some(m) = self.metrics {
            m.observe(&out);
        }
        Ok(out)
    }

    /// Reads and records `run` in stream order, a batch at a time; a sequence gone meanwhile
    /// is named lost.
    async fn read_run(
        &self,
        stream: &str,
        [a, b]: [u64; 2],
        out: &mut Recovered,
    ) -> Result<(), RecoverError> {
        let handle = self
            .bus
            .js
            .get_stream_no_info(stream)
            .await
            .map_err(|e| js_err("get stream", stream, e))?;
        let handle = Arc::new(handle);
        let mut fetched = futures::stream::iter(a..=b)
            .map(|seq| {
                let handle = handle.clone();
                async move { (seq, self.fetch(&handle, stream, seq).await) }
            })
            .buffered(IN_FLIGHT);
        let mut batch: Vec<Record> = Vec::with_capacity(self.batch_size.min(10_000));
        while let Some((seq, got)) = fetched.next().await {
            match got? {
                Some(rec) => batch.push(rec),
                None => push_lost(&mut out.lost, seq),
            }
            if batch.len() >= self.batch_size.max(1) {
                self.write(&mut batch, out).await?;
            }
        }
        Ok(self.write(&mut batch, out).await?)
    }

    async fn write(&self, batch: &mut Vec<Record>, out: &mut Recovered) -> Result<(), DbError> {
        if batch.is_empty() {
            return Ok(());
        }
        let done = self.sink.write_batch(batch).await?;
        out.recorded += done.inserted as u64;
        out.present += (batch.len() - done.inserted) as u64;
        batch.clear();
        Ok(())
    }

    /// Message `seq` as a record, `None` when the stream no longer holds it.
    async fn fetch(
        &self,
        handle: &async_nats::jetstream::stream::Stream<()>,
        stream: &str,
        seq: u64,
    ) -> Result<Option<Record>, BusError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind as K;
        let got = tokio::time::timeout(API_TIMEOUT, handle.get_raw_message(seq))
            .await
            .map_err(|_| js_err("get message", stream, format!("sequence {seq}: timed out")))?;
        match got {
            Ok(m) => {
                let meta = Meta {
                    stream: Arc::from(stream),
                    stream_seq: m.sequence,
                    published_at: DateTime::from_timestamp_micros(m.time.timestamp_micros())
                        .unwrap_or(m.time),
                    subject: m.subject.to_string(),
                    delivery_count: 0,
                    headers: super::source::headers_of(&m.headers),
                };
                Ok(Some(record(meta, m.payload, self.naming, Utc::now())))
            }
            Err(e) if matches!(e.kind(), K::NoMessageFound) => Ok(None),
            Err(e) if matches!(e.kind(), K::JetStream(ref j) if j.error_code() == async_nats::jetstream::ErrorCode::NO_MESSAGE_FOUND) => {
                Ok(None)
            }
            // A header block the client cannot parse: as stored, recorded as the watch does.
            Err(_) => match self.bus.stored_message(stream, seq).await? {
                None => Ok(None),
                Some(s) => {
                    let block = s.headers.clone().unwrap_or_default();
                    Ok(Some(record_unparsed(
                        s.meta(stream),
                        &block,
                        Bytes::from(s.data),
                        self.naming,
                        Utc::now(),
                    )))
                }
            },
        }
    }
}

fn push_lost(lost: &mut Vec<[u64; 2]>, seq: u64) {
    let at = lost.partition_point(|r| r[1] < seq);
    match lost.get_mut(at) {
        Some(r) if r[0] <= seq => {}
        _ => lost.insert(at, [seq, seq]),
    }
}
