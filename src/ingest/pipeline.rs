//! The ingest pipeline: fetch a batch from the durable consumer, decode it into rows, write it
//! in one transaction, and only then ack it. Two stages, so decoding batch N+1 overlaps the
//! database write of batch N; memory is bounded by the batch size and the channel depth.
//!
//! Faults: a transient database error retries the batch; a permanent one stops the pipeline
//! (readiness fails, the daemon exits non-zero); a deleted consumer is recreated where the log
//! ends (or, with `--bind-only`, stops the daemon); after SIGTERM the batches in hand have
//! `shutdown_timeout` to commit, then are given up unacked and the run ends in an error naming
//! them. A message the bus client cannot parse is found and recorded by [`super::unparsed`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::pull::{MessagesError, MessagesErrorKind};
use async_nats::jetstream::Message;
use chrono::{DateTime, Utc};
use futures::stream::ReadyChunks;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::outcome::{IngestError, Totals};
use super::recover::metrics::RecoverMetrics;
use super::recover::{Recover, Window};
use super::sink::Sink;
use super::source::{self, Binding, Bus, BusError, ConsumerCheck, PullConsumer};
use super::unparsed;
use super::writer::{self, Batch, Control};
use crate::config::IngestSettings;
use crate::ingest::metrics::IngestMetrics;
use crate::row::record::{record, Naming};
use crate::telemetry::health::Health;

/// What the pipeline needs besides the consumer.
pub(crate) struct Ingest {
    pub(crate) sink: Sink,
    pub(crate) metrics: Arc<IngestMetrics>,
    pub(crate) recover: Arc<RecoverMetrics>,
    pub(crate) health: Arc<Health>,
    pub(crate) naming: Naming,
    pub(crate) settings: IngestSettings,
}

type Chunks = ReadyChunks<async_nats::jetstream::consumer::pull::Stream>;

/// A message and when it was read from the bus client (its row's `received_at`).
type Read = (Message, DateTime<Utc>);
type Pulled = Result<Message, MessagesError>;

/// Something the message stream said that needs the server's word on the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trouble {
    /// The stream reported the consumer deleted, or missed heartbeats.
    Reported,
    /// The stream ended.
    Ended,
}

impl Ingest {
    async fn open(&self, consumer: &PullConsumer) -> Result<Chunks, BusError> {
        let size = self.settings.batch_size;
        let messages = consumer
            .stream()
            .max_messages_per_batch(size)
            .heartbeat(Duration::from_secs(5))
            .expires(Duration::from_secs(30))
            .messages()
            .await
            .map_err(|e| BusError::JetStream {
                action: "pull from consumer",
                name: consumer.cached_info().name.clone(),
                message: e.to_string(),
            })?;
        Ok(messages.ready_chunks(size.div_ceil(4).max(1)))
    }

    /// Messages into `carry`, each with the time it was read from the bus client (the chunk's:
    /// its messages are read at once); what the stream reports about the consumer into
    /// `trouble`.
    fn sort_in(chunk: Vec<Pulled>, carry: &mut VecDeque<Read>, trouble: &mut Option<Trouble>) {
        let read_at = Utc::now();
        for m in chunk {
            match m {
                Ok(m) => carry.push_back((m, read_at)),
                Err(e) => {
                    tracing::warn!(error = %e, "pull consumer error");
                    if matches!(
                        e.kind(),
                        MessagesErrorKind::ConsumerDeleted
                            | MessagesErrorKind::MissingHeartbeat
                            | MessagesErrorKind::NoResponders
                    ) {
                        trouble.get_or_insert(Trouble::Reported);
                    }
                }
            }
        }
    }

    /// Decodes messages into the batch, each received when it was read; returns the time spent
    /// decoding.
    fn add(&self, batch: &mut Batch, msgs: impl Iterator<Item = Read>) -> Duration {
        let started = Instant::now();
        for (msg, received_at) in msgs {
            let Some(meta) = source::meta_of(&msg) else {
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

    /// Asks the server about the consumer after `trouble`; recreates it when it was deleted
    /// (unless `--bind-only`). `Ok(true)`: reopen the message stream; `Ok(false)`: go on as is;
    /// `Err(None)`: no conclusion yet, ask again later.
    async fn recover(
        &self,
        bus: &Bus,
        binding: &Binding,
        consumer: &mut PullConsumer,
        floor: &AtomicU64,
        trouble: Trouble,
    ) -> Result<bool, Option<IngestError>> {
        match source::check_consumer(consumer).await {
            ConsumerCheck::Present(info) => {
                floor.fetch_max(info.ack_floor.stream_sequence, Ordering::SeqCst);
                Ok(trouble == Trouble::Ended)
            }
            ConsumerCheck::StreamDeleted => Err(Some(
                BusError::StreamDeleted {
                    stream: binding.stream.clone(),
                }
                .into(),
            )),
            ConsumerCheck::Unknown(why) => {
                tracing::warn!(reason = %why, "cannot check the durable consumer; trying again");
                Err(None)
            }
            ConsumerCheck::Deleted if binding.bind_only => Err(Some(
                BusError::ConsumerDeleted {
                    stream: binding.stream.clone(),
                    consumer: binding.consumer.clone(),
                }
                .into(),
            )),
            ConsumerCheck::Deleted => {
                let from = floor.load(Ordering::SeqCst) + 1;
                let from = i64::try_from(from).unwrap_or(i64::MAX);
                let start = match self.sink.log().resume_point(&binding.stream, from).await {
                    Ok(s) => u64::try_from(s).unwrap_or(1),
                    Err(e) => {
                        tracing::warn!(error = %e, "the consumer was deleted; cannot read where the log ends yet");
                        return Err(None);
                    }
                };
                match bus.recreate(binding, start).await {
                    Ok(c) => {
                        *consumer = c;
                        self.health
                            .consumer_recreated(&binding.stream, &binding.consumer, start);
                        self.recover_from_bus(bus, binding, start.saturating_sub(1))
                            .await;
                        Ok(true)
                    }
                    Err(e @ BusError::StreamDeleted { .. }) => Err(Some(e.into())),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot recreate the durable consumer yet");
                        Err(None)
                    }
                }
            }
        }
    }

    /// Runs until `stop` is cancelled (then finishes the batches in hand within the shutdown
    /// timeout) or, with `exit_when_idle`, until the consumer has nothing pending.
    pub(crate) async fn run(
        &self,
        bus: &Bus,
        binding: &Binding,
        mut consumer: PullConsumer,
        stop: CancellationToken,
    ) -> Result<Totals, IngestError> {
        let floor = Arc::new(AtomicU64::new(
            consumer.cached_info().ack_floor.stream_sequence,
        ));
        let recovered_before = self.recover.recorded.get();
        // Below the ack floor the consumer delivers nothing again: what the log lacks there
        // (a database restored from a backup) comes from the stream by sequence.
        self.recover_from_bus(bus, binding, floor.load(Ordering::SeqCst))
            .await;
        let messages = self.open(&consumer).await?;
        self.health.set_bound(true);
        let ctl = Arc::new(Control {
            halt: CancellationToken::new(),
            give_up: CancellationToken::new(),
            fatal: Mutex::new(None),
            abandoned: Mutex::new(Vec::new()),
            progress_every: (binding.ack_wait / 2).max(Duration::from_millis(500)),
            busy: Default::default(),
        });
        let shutdown_timeout = self.settings.shutdown_timeout.get();
        let deadline = tokio::spawn(give_up_after(ctl.clone(), stop.clone(), shutdown_timeout));
        let watch_stop = CancellationToken::new();
        let watcher = tokio::spawn(unparsed::watch(
            self.unparsed_watch(bus, binding, &floor),
            consumer.clone(),
            watch_stop.clone(),
        ));
        let (tx, writers) = writer::spawn(
            self.settings.writers.max(1),
            &self.sink,
            &self.metrics,
            &self.health,
            &ctl,
        );
        let mut pull = Pull {
            messages,
            carry: VecDeque::new(),
            trouble: None,
            idle_checks: 0,
        };
        let on = Running {
            bus,
            binding,
            floor: &floor,
            ctl: &ctl,
            stop: &stop,
        };
        self.read(&on, &mut consumer, &mut pull, &tx).await;
        // Stop fetching (messages pulled but not batched are redelivered); the writers commit
        // and ack what they hold within the shutdown timeout, then end.
        self.health.set_bound(false);
        drop(pull);
        drop(tx);
        let mut totals = Totals::default();
        for h in writers {
            if let Ok(t) = h.await {
                totals.add(t);
            }
        }
        totals.busy = ctl.busy.total();
        totals.recovered = self.recover.recorded.get() - recovered_before;
        watch_stop.cancel();
        let _ = watcher.await;
        deadline.abort();
        outcome(&ctl, totals, shutdown_timeout)
    }

    /// Records what the stream holds and the log lacks, from `stream.start_seq` to `floor`
    /// (see `super::recover`); a failure is logged with what to run, and ingest goes on.
    async fn recover_from_bus(&self, bus: &Bus, binding: &Binding, floor: u64) {
        let r = Recover {
            bus,
            sink: &self.sink,
            naming: &self.naming,
            batch_size: self.settings.batch_size,
            metrics: Some(&self.recover),
        };
        let window = Window {
            from: binding.start_seq,
            to: Some(floor),
        };
        let done = r.run(&binding.stream, window, false).await;
        // Its rows are rows this process appended (`event_audit_audit_rows_total`); as
        // messages they are counted apart, in `event_audit_recovered_messages_total`.
        if let Ok(out) = &done {
            self.metrics.rows.inc_by(out.recorded);
        }
        if let Err(e) = done {
            tracing::warn!(
                stream = %binding.stream,
                error = %e,
                "recovery from the bus could not be made; the log may lack sequences the stream still holds below the consumer's ack floor: run `event-audit recover --stream {}` once NATS and PostgreSQL answer",
                binding.stream
            );
        }
    }

    /// What the watcher of messages the bus client cannot parse needs.
    fn unparsed_watch(
        &self,
        bus: &Bus,
        binding: &Binding,
        floor: &Arc<AtomicU64>,
    ) -> unparsed::Watch {
        unparsed::Watch {
            bus: bus.clone(),
            binding: binding.clone(),
            sink: self.sink.clone(),
            naming: self.naming.clone(),
            health: self.health.clone(),
            metrics: self.metrics.clone(),
            floor: floor.clone(),
        }
    }

    /// The fetch loop: settles trouble with the consumer, pulls, fills batches and hands them
    /// to the writers, until stopped, halted, out of writers or (with `exit_when_idle`) idle.
    async fn read(
        &self,
        on: &Running<'_>,
        consumer: &mut PullConsumer,
        pull: &mut Pull,
        tx: &mpsc::Sender<Batch>,
    ) {
        loop {
            if let Some(t) = pull.trouble.take() {
                if !self.settle(on, consumer, pull, t).await {
                    break;
                }
                if pull.trouble.is_some() {
                    tokio::select! {
                        _ = on.stop.cancelled() => break,
                        _ = on.ctl.halt.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                    continue;
                }
            }
            if pull.carry.is_empty() {
                match self.wait_for_messages(on, consumer, pull).await {
                    Wait::Stop => break,
                    Wait::Nothing => continue,
                    Wait::Messages => {}
                }
            }
            pull.idle_checks = 0;
            let batch = self.fill(pull).await;
            if batch.records.is_empty() {
                continue;
            }
            self.health.batch_taken();
            // Waiting for a writer must not outlast a stop: a batch not handed over is not
            // acked, and JetStream redelivers it.
            let handed = tokio::select! {
                biased;
                r = tx.send(batch) => r.is_ok(),
                _ = on.stop.cancelled() => false,
                _ = on.ctl.halt.cancelled() => false,
            };
            if !handed {
                self.health.batch_dropped();
                break;
            }
        }
    }

    /// Settles trouble `t` with the consumer, reopening the message stream when asked to;
    /// leaves it in `pull.trouble` when it must be asked about again. False: stop (the error
    /// is recorded in `ctl`).
    async fn settle(
        &self,
        on: &Running<'_>,
        consumer: &mut PullConsumer,
        pull: &mut Pull,
        t: Trouble,
    ) -> bool {
        match self
            .recover(on.bus, on.binding, consumer, on.floor, t)
            .await
        {
            Ok(false) => {}
            Ok(true) => match self.open(consumer).await {
                Ok(m) => {
                    pull.messages = m;
                    self.health.set_bound(true);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reopen the message stream yet");
                    self.health.set_bound(false);
                    pull.trouble = Some(Trouble::Ended);
                }
            },
            Err(Some(e)) => {
                on.ctl.fail(e, &self.health);
                return false;
            }
            // No answer about the consumer: a stream that ended must be reopened, so
            // ask again; after missed heartbeats, go on reading and ask at the next.
            Err(None) if t == Trouble::Ended => {
                self.health.set_bound(false);
                pull.trouble = Some(t);
            }
            Err(None) => {}
        }
        true
    }

    /// Waits up to a second for messages when none are carried over; with `exit_when_idle`,
    /// stops on the second idle wait that finds the consumer with nothing pending.
    async fn wait_for_messages(
        &self,
        on: &Running<'_>,
        consumer: &PullConsumer,
        pull: &mut Pull,
    ) -> Wait {
        let next = tokio::select! {
            biased;
            _ = on.stop.cancelled() => return Wait::Stop,
            _ = on.ctl.halt.cancelled() => return Wait::Stop,
            n = tokio::time::timeout(Duration::from_secs(1), pull.messages.next()) => n,
        };
        match next {
            Ok(Some(chunk)) => Self::sort_in(chunk, &mut pull.carry, &mut pull.trouble),
            Ok(None) => pull.trouble = Some(Trouble::Ended),
            Err(_elapsed) => {
                if self.settings.exit_when_idle {
                    pull.idle_checks += 1;
                    if pull.idle_checks >= 2
                        && matches!(source::consumer_state(consumer).await, Some((0, 0)))
                    {
                        return Wait::Stop;
                    }
                }
            }
        }
        if pull.carry.is_empty() {
            Wait::Nothing
        } else {
            Wait::Messages
        }
    }

    /// A batch of the messages carried over, filled up to the batch size with what arrives
    /// within `linger`; the decoding time observed.
    async fn fill(&self, pull: &mut Pull) -> Batch {
        let size = self.settings.batch_size;
        let started = Instant::now();
        let mut batch = Batch {
            records: Vec::with_capacity(size),
            ackers: Vec::with_capacity(size),
            fetched: started,
        };
        let take = pull.carry.len().min(size);
        let mut decoding = self.add(&mut batch, pull.carry.drain(..take));
        // Fill the batch up to its size, waiting at most `linger` for more messages.
        let deadline = tokio::time::Instant::now() + self.settings.linger.get();
        while batch.records.len() < size && pull.carry.is_empty() && pull.trouble.is_none() {
            match tokio::time::timeout_at(deadline, pull.messages.next()).await {
                Ok(Some(chunk)) => {
                    Self::sort_in(chunk, &mut pull.carry, &mut pull.trouble);
                    let take = pull.carry.len().min(size - batch.records.len());
                    decoding += self.add(&mut batch, pull.carry.drain(..take));
                }
                Ok(None) => pull.trouble = Some(Trouble::Ended),
                Err(_) => break,
            }
        }
        self.metrics.decode_seconds.observe(decoding.as_secs_f64());
        batch
    }
}

/// What the fetch loop works with besides the consumer.
struct Running<'a> {
    bus: &'a Bus,
    binding: &'a Binding,
    floor: &'a AtomicU64,
    ctl: &'a Control,
    stop: &'a CancellationToken,
}

/// The fetch loop's state between batches.
struct Pull {
    messages: Chunks,
    /// Messages pulled beyond a full batch wait here for the next one (a batch never exceeds
    /// the batch size).
    carry: VecDeque<Read>,
    trouble: Option<Trouble>,
    idle_checks: u32,
}

/// What waiting for messages gave.
enum Wait {
    /// Stopped, halted, or idle with `exit_when_idle`.
    Stop,
    /// Nothing to batch yet.
    Nothing,
    /// Messages to batch.
    Messages,
}

/// Once `stop` is cancelled, the shutdown timeout; then what is not committed is given up.
async fn give_up_after(ctl: Arc<Control>, stop: CancellationToken, shutdown_timeout: Duration) {
    stop.cancelled().await;
    tokio::time::sleep(shutdown_timeout).await;
    ctl.give_up.cancel();
}

/// The run's result once the writers have ended: the first permanent failure, else the
/// batches given up at shutdown, else the totals.
fn outcome(
    ctl: &Control,
    totals: Totals,
    shutdown_timeout: Duration,
) -> Result<Totals, IngestError> {
    if let Some(e) = ctl.fatal.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let abandoned = std::mem::take(&mut *ctl.abandoned.lock().unwrap_or_else(|p| p.into_inner()));
    if !abandoned.is_empty() {
        return Err(IngestError::ShutdownIncomplete {
            after: shutdown_timeout,
            batches: abandoned.len(),
            messages: abandoned.iter().map(|a| a.0).sum(),
            first: abandoned.iter().map(|a| a.1).min().unwrap_or(0),
        });
    }
    Ok(totals)
}
