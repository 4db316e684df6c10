//! What one ingest run comes to: its totals, or why it stopped other than by a clean stop.

use std::time::{Duration, Instant};

use super::source::BusError;
use crate::db::DbError;

/// Why ingest stopped other than by a clean stop.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("the audit log refuses batch writes, and retrying cannot help: {0}; fix the cause (permissions, schema, configuration) and restart")]
    Permanent(DbError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("the shutdown timeout ({after:?}) passed with {batches} batch(es) of {messages} message(s) not committed (stream sequences from {first}); none of them was acked, JetStream will redeliver them")]
    ShutdownIncomplete {
        after: Duration,
        batches: usize,
        messages: usize,
        first: i64,
    },
}

/// Totals of one run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    pub messages: u64,
    pub inserted: u64,
    pub batches: u64,
    /// When the first batch arrived and the last one was acked.
    pub(crate) first: Option<Instant>,
    pub(crate) last: Option<Instant>,
}

impl Totals {
    /// Seconds from the first message to the last ack.
    pub(crate) fn busy_secs(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        }
    }

    pub(super) fn add(&mut self, t: Totals) {
        self.messages += t.messages;
        self.inserted += t.inserted;
        self.batches += t.batches;
        self.first = match (self.first, t.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last = self.last.max(t.last);
    }
}
