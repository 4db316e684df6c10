//! The daemon's health, kept by the parts that know it and read by `/readyz` without any I/O:
//! each fact has one writer (the database prober, the NATS prober, the ingest pipeline), and
//! `connection_up{component}` is set by the same writer in the same call. Ingest progress too:
//! batches in hand and the last commit (a stall fails readiness), a permanent failure, and the
//! counters of the faults the pipeline worked around.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec};

use super::metrics::{counter, counter_vec, gauge, gauge_vec, Registry};

/// How ingest is doing, as `/readyz` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Nothing in hand, or commits within the stall timeout.
    Flowing,
    /// Batches in hand and no commit for `secs` seconds (more than the stall timeout).
    Stalled { secs: i64, batches: i64 },
    /// A permanent error: the daemon is stopping, with this reason.
    Failed(String),
}

/// What `/readyz` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Readiness {
    pub(crate) nats: bool,
    pub(crate) postgres: bool,
    pub(crate) consumer_bound: bool,
    /// The durable consumer answered the last poll (in a cluster: it and its stream have a
    /// leader).
    pub(crate) jetstream: bool,
    pub(crate) ingest: Progress,
}

impl Readiness {
    pub(crate) fn ready(&self) -> bool {
        self.nats
            && self.postgres
            && self.consumer_bound
            && self.jetstream
            && self.ingest == Progress::Flowing
    }
}

pub(crate) struct Health {
    nats: AtomicBool,
    postgres: AtomicBool,
    bound: AtomicBool,
    jetstream: AtomicBool,
    /// Unix milliseconds of the last committed batch (0: none yet).
    last_commit_ms: AtomicI64,
    /// Batches taken from the bus and neither committed nor given up.
    in_hand: AtomicI64,
    /// Unix milliseconds since when a commit is awaited: the last commit, or the moment
    /// batches came into hand after none.
    waiting_since_ms: AtomicI64,
    stall_after_ms: AtomicI64,
    failure: Mutex<Option<String>>,
    up: IntGaugeVec,
    uncommitted: IntGauge,
    last_commit: IntGauge,
    /// Durable consumers recreated after being deleted under the daemon.
    pub(crate) consumer_recreated: IntCounter,
    /// Messages the bus client could not parse, fetched by sequence and recorded.
    pub(crate) unparsable: IntCounter,
    /// Rows PostgreSQL refused as data, recorded as bus facts and raw bytes.
    pub(crate) reduced_rows: IntCounter,
    db_errors: IntCounterVec,
    leader_changes: IntCounterVec,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Health {
    pub(crate) fn new(r: &Registry) -> Health {
        let up = gauge_vec(
            r,
            "event_audit_connection_up",
            "1 when the connection to the component works",
            &["component"],
        );
        for c in ["nats", "postgres", "jetstream"] {
            up.with_label_values(&[c]).set(0);
        }
        let db_errors = counter_vec(
            r,
            "event_audit_db_errors_total",
            "Failed batch writes by class: transient (retried), data (the message's fault, recorded), permanent (the daemon stops)",
            &["class"],
        );
        for c in ["transient", "data", "duplicate", "permanent"] {
            db_errors.with_label_values(&[c]);
        }
        let leader_changes = counter_vec(
            r,
            "event_audit_bus_leader_changes_total",
            "Leader changes of the audit stream and of the durable consumer in the JetStream cluster, by role (stream, consumer), as the daemon's poll saw them",
            &["role"],
        );
        for role in ["stream", "consumer"] {
            leader_changes.with_label_values(&[role]);
        }
        Health {
            nats: AtomicBool::new(false),
            postgres: AtomicBool::new(false),
            bound: AtomicBool::new(false),
            // Bound means it answered at bind time; the NATS prober polls it from then on.
            jetstream: AtomicBool::new(true),
            last_commit_ms: AtomicI64::new(0),
            in_hand: AtomicI64::new(0),
            waiting_since_ms: AtomicI64::new(0),
            stall_after_ms: AtomicI64::new(
                crate::config::defaults::STALL_TIMEOUT.get().as_millis() as i64,
            ),
            failure: Mutex::new(None),
            up,
            uncommitted: gauge(
                r,
                "event_audit_ingest_uncommitted_batches",
                "Batches taken from the bus and not yet committed",
            ),
            last_commit: gauge(
                r,
                "event_audit_ingest_last_commit_timestamp_seconds",
                "When the last batch committed (Unix time; 0 before the first)",
            ),
            consumer_recreated: counter(
                r,
                "event_audit_consumer_recreated_total",
                "Durable consumers recreated after being deleted under the daemon",
            ),
            unparsable: counter(
                r,
                "event_audit_ingest_unparsable_messages_total",
                "Messages whose NATS header block the client cannot parse, fetched by sequence and recorded as malformed (each counted once, when first recorded)",
            ),
            reduced_rows: counter(
                r,
                "event_audit_ingest_reduced_rows_total",
                "Rows PostgreSQL refused as data, recorded as bus facts and raw bytes with the reason",
            ),
            db_errors,
            leader_changes,
        }
    }

    /// The stall timeout of readiness (`ingest.stall_timeout`).
    pub(crate) fn set_stall_timeout(&self, d: Duration) {
        self.stall_after_ms.store(
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Ordering::SeqCst,
        );
    }

    /// Written by the database prober only.
    pub(crate) fn set_postgres(&self, up: bool) {
        self.postgres.store(up, Ordering::SeqCst);
        self.up.with_label_values(&["postgres"]).set(i64::from(up));
    }

    /// Written by the NATS prober only.
    pub(crate) fn set_nats(&self, up: bool) {
        self.nats.store(up, Ordering::SeqCst);
        self.up.with_label_values(&["nats"]).set(i64::from(up));
    }

    /// Written by the NATS prober only: whether the durable consumer answered its last poll.
    pub(crate) fn set_jetstream(&self, up: bool) {
        self.jetstream.store(up, Ordering::SeqCst);
        self.up.with_label_values(&["jetstream"]).set(i64::from(up));
    }

    /// Written by the NATS prober only: the stream's or the consumer's leader changed.
    /// A JetStream leader moved: logged and counted in one call (`role` is `stream` or
    /// `consumer`; `from` and `to` are the servers' names).
    pub(crate) fn leader_changed(
        &self,
        role: &str,
        stream: &str,
        consumer: &str,
        from: &str,
        to: &str,
    ) {
        self.leader_changes.with_label_values(&[role]).inc();
        tracing::warn!(
            role,
            stream = %stream,
            consumer = %consumer,
            from = %from,
            to = %to,
            "JetStream {role} leader changed from {from} to {to}"
        );
    }

    /// The durable consumer was deleted under the daemon and recreated from `start`: logged and
    /// counted in one call.
    pub(crate) fn consumer_recreated(&self, stream: &str, consumer: &str, start: u64) {
        self.consumer_recreated.inc();
        tracing::warn!(
            stream = %stream,
            consumer = %consumer,
            start_sequence = start,
            "the durable consumer was deleted under the daemon; recreated, delivering from the first sequence the log lacks"
        );
    }

    /// Written by the ingest pipeline only: whether its message stream is open.
    pub(crate) fn set_bound(&self, bound: bool) {
        self.bound.store(bound, Ordering::SeqCst);
    }

    /// Written by the ingest pipeline: a batch came into hand.
    pub(crate) fn batch_taken(&self) {
        if self.in_hand.fetch_add(1, Ordering::SeqCst) == 0 {
            self.waiting_since_ms.store(now_ms(), Ordering::SeqCst);
        }
        self.uncommitted.inc();
    }

    /// Written by the ingest pipeline: a batch in hand was given up (not committed, not acked).
    pub(crate) fn batch_dropped(&self) {
        self.in_hand.fetch_sub(1, Ordering::SeqCst);
        self.uncommitted.dec();
    }

    /// Written by the ingest pipeline only, after each commit.
    pub(crate) fn committed(&self, at: chrono::DateTime<chrono::Utc>) {
        let ms = at.timestamp_millis();
        self.last_commit_ms.store(ms, Ordering::SeqCst);
        self.waiting_since_ms.store(ms, Ordering::SeqCst);
        self.last_commit.set(at.timestamp());
    }

    /// Written by the ingest pipeline: a batch in hand committed.
    pub(crate) fn batch_committed(&self, at: chrono::DateTime<chrono::Utc>) {
        self.committed(at);
        self.in_hand.fetch_sub(1, Ordering::SeqCst);
        self.uncommitted.dec();
    }

    /// A failed batch write, by class (`transient`, `data`, `duplicate`, `permanent`).
    pub(crate) fn db_error(&self, class: &str) {
        self.db_errors.with_label_values(&[class]).inc();
    }

    /// Written by the ingest pipeline: a permanent failure; readiness fails from now on.
    pub(crate) fn fail(&self, reason: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(reason);
    }

    fn progress(&self) -> Progress {
        if let Some(reason) = self
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Progress::Failed(reason);
        }
        let batches = self.in_hand.load(Ordering::SeqCst);
        let waited = now_ms() - self.waiting_since_ms.load(Ordering::SeqCst);
        if batches > 0 && waited > self.stall_after_ms.load(Ordering::SeqCst) {
            return Progress::Stalled {
                secs: waited / 1000,
                batches,
            };
        }
        Progress::Flowing
    }

    pub(crate) fn readiness(&self) -> Readiness {
        Readiness {
            nats: self.nats.load(Ordering::SeqCst),
            postgres: self.postgres.load(Ordering::SeqCst),
            consumer_bound: self.bound.load(Ordering::SeqCst),
            jetstream: self.jetstream.load(Ordering::SeqCst),
            ingest: self.progress(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_in_hand_without_commit_stalls_readiness() {
        let h = Health::new(&Registry::new());
        h.set_stall_timeout(Duration::from_millis(0));
        assert_eq!(h.readiness().ingest, Progress::Flowing);
        h.batch_taken();
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(
            h.readiness().ingest,
            Progress::Stalled { batches: 1, .. }
        ));
        h.batch_committed(chrono::Utc::now());
        assert_eq!(h.readiness().ingest, Progress::Flowing);
        h.fail("permission denied".into());
        assert_eq!(
            h.readiness().ingest,
            Progress::Failed("permission denied".into())
        );
    }
}
