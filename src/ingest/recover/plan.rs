//! What a recovery reads and what it names as lost, from the runs of sequences the log holds
//! of one stream (since the stream was created) and the stream's state on the bus. Pure.

use crate::bus::state::BusState;

/// What to do about one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Runs of sequences the stream still holds and the log lacks, ascending, both ends
    /// included (deleted sequences cut out).
    pub(crate) read: Vec<[u64; 2]>,
    /// Runs of sequences the log lacks that the stream no longer holds (purged, aged out or
    /// deleted), from the log's first sequence on: lost to the log.
    pub(crate) lost: Vec<[u64; 2]>,
}

impl Plan {
    /// How many sequences `runs` hold.
    pub(crate) fn count(runs: &[[u64; 2]]) -> u64 {
        runs.iter().map(|r| r[1] - r[0] + 1).sum()
    }
}

/// Pushes `[a, b]`, merging with the previous run when they touch.
fn push(out: &mut Vec<[u64; 2]>, a: u64, b: u64) {
    if a > b {
        return;
    }
    match out.last_mut() {
        Some(last) if last[1] + 1 == a => last[1] = b,
        _ => out.push([a, b]),
    }
}

/// The plan for the sequences `window` (both ends included) of a stream: `held` are the runs
/// the log holds (ascending, disjoint), `bus` the stream's state. A sequence the log lacks is
/// read when the stream holds it, and lost when it does not and lies at or after the log's
/// first sequence (before it, the log never started: not a loss the log can know of).
pub(crate) fn plan(held: &[[u64; 2]], bus: &BusState, window: [u64; 2]) -> Plan {
    let mut out = Plan::default();
    let [lo, hi] = window;
    if lo > hi {
        return out;
    }
    let log_first = held.first().map(|r| r[0]);
    // The absent runs inside the window.
    let mut absent = Vec::new();
    let mut next = lo;
    for r in held {
        if r[1] < next {
            continue;
        }
        if r[0] > hi {
            break;
        }
        if r[0] > next {
            absent.push([next, r[0] - 1]);
        }
        next = r[1] + 1;
    }
    if next <= hi {
        absent.push([next, hi]);
    }
    for [a, b] in absent {
        // Cut at the bus's first and last sequence, and around each deleted one.
        let mut at = a;
        while at <= b {
            let on_bus = bus.holds(at);
            // The end of the run of the same kind starting at `at`.
            let end = if at < bus.first_seq {
                (bus.first_seq - 1).min(b)
            } else if at > bus.last_seq {
                b
            } else if !on_bus {
                at
            } else {
                let next_deleted = bus.deleted[bus.deleted.partition_point(|&d| d < at)..]
                    .first()
                    .copied()
                    .unwrap_or(u64::MAX);
                b.min(bus.last_seq).min(next_deleted.saturating_sub(1))
            };
            if on_bus {
                push(&mut out.read, at, end);
            } else if log_first.is_some_and(|f| end >= f) {
                push(&mut out.lost, at.max(log_first.unwrap_or(at)), end);
            }
            at = end + 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus(first: u64, last: u64, deleted: &[u64]) -> BusState {
        BusState {
            first_seq: first,
            last_seq: last,
            deleted: deleted.to_vec(),
            deleted_count: deleted.len() as u64,
            created: None,
        }
    }

    #[test]
    fn reads_what_the_bus_still_holds_below_the_window_top() {
        // A restore: the log holds 1–3000 and 5001–5500, the bus 1–5500, acked to 5500.
        let p = plan(&[[1, 3000], [5001, 5500]], &bus(1, 5500, &[]), [1, 5500]);
        assert_eq!(p.read, vec![[3001, 5000]]);
        assert!(p.lost.is_empty());
        assert_eq!(Plan::count(&p.read), 2000);
    }

    #[test]
    fn names_what_the_bus_no_longer_holds_as_lost() {
        // The stream aged out everything below 4000 and deleted 4500.
        let p = plan(&[[1, 3000]], &bus(4000, 5500, &[4500]), [1, 5500]);
        assert_eq!(p.lost, vec![[3001, 3999], [4500, 4500]]);
        assert_eq!(p.read, vec![[4000, 4499], [4501, 5500]]);
    }

    #[test]
    fn before_the_log_began_nothing_is_lost_and_the_window_bounds_both() {
        // The log starts at 1000 (the consumer's start); the stream from 1.
        let p = plan(&[[1000, 1200]], &bus(1, 1300, &[]), [1000, 1250]);
        assert_eq!(p.read, vec![[1201, 1250]]);
        // The stream starts at 500, the log at 1000: 1..499 were never the log's.
        let p = plan(&[[1000, 1200]], &bus(500, 1300, &[]), [1, 1300]);
        assert_eq!(p.read, vec![[500, 999], [1201, 1300]]);
        assert!(p.lost.is_empty());
        // An empty log loses nothing; an empty window plans nothing.
        assert_eq!(plan(&[], &bus(5, 9, &[]), [1, 9]).read, vec![[5, 9]]);
        assert_eq!(plan(&[[1, 9]], &bus(1, 9, &[]), [9, 1]), Plan::default());
    }

    #[test]
    fn held_runs_outside_the_window_are_skipped() {
        let p = plan(&[[1, 10], [20, 30], [40, 50]], &bus(1, 60, &[25]), [15, 45]);
        assert_eq!(p.read, vec![[15, 19], [31, 39]]);
    }
}
