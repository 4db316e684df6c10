//! The metrics of recovery from the bus: the messages it recorded, the sequences it found lost,
//! and the streams found recreated (each recovery sets them; the log line is in the same call,
//! [`RecoverMetrics::observe`]).

use prometheus::{IntCounter, IntGauge};

use super::plan::Plan;
use super::Recovered;
use crate::telemetry::metrics::{counter, gauge, Registry};

pub(crate) struct RecoverMetrics {
    pub(crate) recorded: IntCounter,
    pub(crate) lost: IntGauge,
    pub(crate) resets: IntCounter,
}

impl RecoverMetrics {
    pub(crate) fn new(r: &Registry) -> RecoverMetrics {
        RecoverMetrics {
            recorded: counter(
                r,
                "event_audit_recovered_messages_total",
                "Messages the log lacked and the bus still held, recorded by a recovery (at start-up, when the consumer was bound, or by `event-audit recover`)",
            ),
            lost: gauge(
                r,
                "event_audit_lost_sequences",
                "Stream sequences the log lacks that the stream no longer holds, as the last recovery found them",
            ),
            resets: counter(
                r,
                "event_audit_stream_resets_total",
                "Recoveries that found the stream recreated under its name (its sequences started again) after rows of the log were published on it",
            ),
        }
    }

    /// Sets the metrics from one recovery and says what it found, in one line (a warning when
    /// the log lacked anything).
    pub(crate) fn observe(&self, r: &Recovered) {
        self.recorded.inc_by(r.recorded);
        self.lost
            .set(i64::try_from(Plan::count(&r.lost)).unwrap_or(i64::MAX));
        if r.reset.is_some() {
            self.resets.inc();
        }
        if r.found() {
            tracing::warn!(
                stream = %r.stream,
                recorded = r.recorded,
                already_there = r.present,
                lost = Plan::count(&r.lost),
                "recovery: {}",
                r.line()
            );
        } else {
            tracing::info!(stream = %r.stream, "recovery: {}", r.line());
        }
    }
}
