//! What one ingest run comes to: its totals, or why it stopped other than by a clean stop.

use std::time::{Duration, Instant};

use super::source::BusError;
use crate::db::DbError;

/// Why ingest stopped other than by a clean stop.
#[derive(Debug, thiserror::Error)]
#[allow(unreachable_pub)] // public through `test_support` (the lint misses re-exports of re-exports)
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
    /// Rows recorded by recovery from the bus (at start-up, or when the consumer was
    /// recreated): messages the log lacked below the consumer's ack floor, not in `messages`.
    pub recovered: u64,
    /// When the first batch arrived and the last one was acked.
    pub(crate) first: Option<Instant>,
    pub(crate) last: Option<Instant>,
    /// How long at least one batch was in hand (fetched, not yet acked), whichever writer held
    /// it: the time the daemon spent on its messages, idle stretches between them left out.
    pub(crate) busy: Duration,
}

impl Totals {
    /// Seconds from the first message fetched to the last ack, idle stretches included.
    pub(crate) fn span_secs(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// Seconds with at least one batch in hand.
    pub(crate) fn busy_secs(&self) -> f64 {
        self.busy.as_secs_f64()
    }

    /// Messages per second over `secs`; 0 when no time passed.
    pub(crate) fn rate(&self, secs: f64) -> f64 {
        if secs > 0.0 {
            (self.messages as f64 / secs).round()
        } else {
            0.0
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
        self.busy += t.busy;
    }
}

/// The time at least one batch is in hand, shared by the writers: the union of the batches'
/// intervals from fetch to ack, so that overlapping writers are not counted twice and idle
/// time between batches is not counted at all.
#[derive(Debug, Default)]
pub(crate) struct Busy(std::sync::Mutex<BusyState>);

#[derive(Debug, Default)]
struct BusyState {
    in_hand: usize,
    /// The start of the stretch in progress (`in_hand > 0`).
    since: Option<Instant>,
    /// The end of the last stretch.
    last_end: Option<Instant>,
    total: Duration,
}

impl Busy {
    /// Holds a batch fetched at `fetched` in hand until the returned guard is dropped.
    pub(crate) fn hold(&self, fetched: Instant) -> InHand<'_> {
        self.begin(fetched);
        InHand(self)
    }

    /// A batch fetched at `fetched` is taken in hand (now, or since its fetch).
    pub(crate) fn begin(&self, fetched: Instant) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Time already counted in an ended stretch is not counted again.
        let start = s.last_end.map_or(fetched, |e| fetched.max(e));
        s.since = Some(s.since.map_or(start, |since| since.min(start)));
        s.in_hand += 1;
    }

    /// A batch is out of hand (acked or given up) at `at`.
    pub(crate) fn end(&self, at: Instant) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s.in_hand = s.in_hand.saturating_sub(1);
        if s.in_hand == 0 {
            if let Some(since) = s.since.take() {
                s.total += at.saturating_duration_since(since);
            }
            s.last_end = Some(at);
        }
    }

    /// The busy time of the stretches ended so far.
    pub(crate) fn total(&self) -> Duration {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).total
    }
}

/// A batch in hand: out of hand when dropped, whichever way its write ends.
pub(crate) struct InHand<'a>(&'a Busy);

impl Drop for InHand<'_> {
    fn drop(&mut self) {
        self.0.end(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_the_union_of_the_batches_in_hand() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let b = Busy::default();
        // Two writers overlap (0..30 and 10..40): 40 ms, not 60.
        b.begin(at(0));
        b.begin(at(10));
        b.end(at(30));
        b.end(at(40));
        assert_eq!(b.total(), Duration::from_millis(40));
        // A batch fetched at 35 but taken in hand once that stretch ended counts from 40 on;
        // the idle time from 50 to 1000 is not busy.
        b.begin(at(35));
        b.end(at(50));
        b.begin(at(1000));
        b.end(at(1005));
        assert_eq!(b.total(), Duration::from_millis(40 + 10 + 5));
    }

    #[test]
    fn the_rate_says_over_what() {
        let t0 = Instant::now();
        let t = Totals {
            messages: 700,
            first: Some(t0),
            last: Some(t0 + Duration::from_secs(7)),
            busy: Duration::from_millis(50),
            ..Totals::default()
        };
        assert_eq!(t.rate(t.busy_secs()), 14_000.0);
        assert_eq!(t.rate(t.span_secs()), 100.0);
        assert_eq!(Totals::default().rate(0.0), 0.0);
    }
}
