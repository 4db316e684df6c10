//! Completeness: per stream, the runs of stream sequences the log holds and every gap between
//! them, told apart with the stream's own state on the bus (first and last sequence, deleted
//! messages): gone from the bus before it was read (`purged` below the first sequence,
//! `deleted` by sequence), `missing` (still on the bus but not in the log: a break), `pending`
//! (after the log's last sequence: not read yet), `unknown` (the stream is not on the bus, or
//! its sequences end before the log's). The classification is pure ([`classify`]); the bus state
//! comes from JetStream's stream info with deleted details (`Bus::stream_state`).

use serde::Serialize;

use super::Break;
pub(crate) use crate::bus::state::BusState;
use crate::bus::{Bus, BusError};
use crate::db::DbError;
use crate::log::Reader;

#[derive(Debug, thiserror::Error)]
pub enum GapsError {
    #[error("completeness needs the stream state from NATS: {0}")]
    Bus(#[from] BusError),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Why stream sequences are not in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GapKind {
    /// Below the stream's first sequence: purged (or removed by limits) before it was read.
    Purged,
    /// Deleted from the stream by sequence before it was read.
    Deleted,
    /// Still on the bus, never recorded: a break.
    Missing,
    /// After the last sequence the log holds: not read yet.
    Pending,
    /// The stream's state does not say (the stream is gone, or was recreated).
    Unknown,
}

/// A run of absent sequences, both ends included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Gap {
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) kind: GapKind,
}

/// One stream's completeness.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StreamCompleteness {
    pub(crate) stream: String,
    /// `None` when the stream is not on the bus.
    pub(crate) bus: Option<BusState>,
    /// The runs of sequences the log holds, `[first, last]`.
    pub(crate) held: Vec<[u64; 2]>,
    pub(crate) gaps: Vec<Gap>,
}

/// Completeness of every stream in the log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Completeness {
    pub(crate) streams: Vec<StreamCompleteness>,
}

impl Completeness {
    /// Gaps (runs) of `kind`, over every stream.
    pub(crate) fn count(&self, kind: GapKind) -> i64 {
        self.streams
            .iter()
            .flat_map(|s| &s.gaps)
            .filter(|g| g.kind == kind)
            .count() as i64
    }

    /// The `missing` gaps as breaks.
    pub(crate) fn breaks(&self) -> Vec<Break> {
        self.streams
            .iter()
            .flat_map(|s| {
                s.gaps
                    .iter()
                    .filter(|g| g.kind == GapKind::Missing)
                    .map(|g| Break {
                        link: None,
                        batch: None,
                        stream: Some(s.stream.clone()),
                        stream_seq: i64::try_from(g.from).ok(),
                        why: format!(
                        "stream {} sequences {}..{}: on the bus but not in the log (not recorded)",
                        s.stream, g.from, g.to
                    ),
                    })
            })
            .collect()
    }
}

/// Pushes `[a, b]` of `kind`, merging with the previous gap when they touch.
fn push(out: &mut Vec<Gap>, a: u64, b: u64, kind: GapKind) {
    if a > b {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.kind == kind && last.to + 1 == a {
            last.to = b;
            return;
        }
    }
    out.push(Gap {
        from: a,
        to: b,
        kind,
    });
}

/// Splits `[a, b]` of `base` kind around the deleted sequences.
fn carve(out: &mut Vec<Gap>, a: u64, b: u64, base: GapKind, deleted: &[u64]) {
    let mut at = a;
    let start = deleted.partition_point(|&d| d < a);
    for &d in deleted[start..].iter().take_while(|&&d| d <= b) {
        push(out, at, d.saturating_sub(1), base);
        push(out, d, d, GapKind::Deleted);
        at = d + 1;
    }
    push(out, at, b, base);
}

/// The gaps of one stream: every sequence from 1 to the later of the log's last and the bus's
/// last that the log does not hold (`held`: ascending, disjoint runs).
pub(crate) fn classify(held: &[[u64; 2]], bus: Option<&BusState>) -> Vec<Gap> {
    let log_max = held.last().map_or(0, |r| r[1]);
    let upper = bus.map_or(log_max, |b| b.last_seq.max(log_max));
    let mut absent = Vec::new();
    let mut next = 1u64;
    for r in held {
        if r[0] > next {
            absent.push((next, r[0] - 1));
        }
        next = next.max(r[1] + 1);
    }
    if upper >= next {
        absent.push((next, upper));
    }
    let mut out = Vec::new();
    for (a, b) in absent {
        let Some(bus) = bus else {
            push(&mut out, a, b, GapKind::Unknown);
            continue;
        };
        // Cut at the bus's first sequence, the log's last and the bus's last.
        let mut cuts = vec![a, b + 1];
        for c in [bus.first_seq, log_max + 1, bus.last_seq + 1] {
            if c > a && c <= b {
                cuts.push(c);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (x, y) = (w[0], w[1] - 1);
            let kind = if x < bus.first_seq {
                GapKind::Purged
            } else if x > bus.last_seq {
                GapKind::Unknown
            } else if x > log_max {
                GapKind::Pending
            } else {
                GapKind::Missing
            };
            if kind == GapKind::Purged || kind == GapKind::Unknown {
                push(&mut out, x, y, kind);
            } else {
                carve(&mut out, x, y, kind, &bus.deleted);
            }
        }
    }
    out
}

/// Completeness of every stream the log holds, against the bus. A `missing` gap is looked at
/// again in the log once the bus state is known (a batch committed meanwhile is not a gap).
pub(crate) async fn check(store: &Reader, bus: &Bus) -> Result<Completeness, GapsError> {
    let ranges = store.held_ranges().await?;
    let mut streams: Vec<StreamCompleteness> = Vec::new();
    for (stream, a, b) in ranges {
        let r = [a.max(0) as u64, b.max(0) as u64];
        match streams.last_mut() {
            Some(s) if s.stream == stream => s.held.push(r),
            _ => streams.push(StreamCompleteness {
                stream,
                bus: None,
                held: vec![r],
                gaps: Vec::new(),
            }),
        }
    }
    for s in &mut streams {
        s.bus = bus.stream_state(&s.stream).await?;
        let mut gaps = Vec::new();
        for g in classify(&s.held, s.bus.as_ref()) {
            if g.kind != GapKind::Missing {
                push(&mut gaps, g.from, g.to, g.kind);
                continue;
            }
            let (from, to) = (g.from as i64, g.to as i64);
            let now: Vec<u64> = store
                .held_between(&s.stream, from, to)
                .await?
                .into_iter()
                .map(|v| v as u64)
                .collect();
            let mut at = g.from;
            for h in now {
                push(&mut gaps, at, h.saturating_sub(1), GapKind::Missing);
                at = h + 1;
            }
            push(&mut gaps, at, g.to, GapKind::Missing);
        }
        s.gaps = gaps;
    }
    Ok(Completeness { streams })
}

#[cfg(test)]
mod tests {
    use super::*;
    use GapKind::*;

    fn gap(from: u64, to: u64, kind: GapKind) -> Gap {
        Gap { from, to, kind }
    }

    #[test]
    fn tells_purged_deleted_missing_and_pending_apart() {
        let bus = BusState {
            first_seq: 3,
            last_seq: 20,
            deleted: vec![6, 7, 15, 19],
            deleted_count: 4,
            created: None,
        };
        // The log holds 3..=5, 8..=9 and 12..=16 (15 is held although deleted later).
        let held = [[3, 5], [8, 9], [12, 16]];
        assert_eq!(
            classify(&held, Some(&bus)),
            vec![
                gap(1, 2, Purged),
                gap(6, 7, Deleted),
                gap(10, 11, Missing),
                gap(17, 18, Pending),
                gap(19, 19, Deleted),
                gap(20, 20, Pending),
            ]
        );
    }

    #[test]
    fn without_the_stream_every_gap_is_unknown_and_the_tail_is_not_invented() {
        assert_eq!(
            classify(&[[2, 3], [5, 5]], None),
            vec![gap(1, 1, Unknown), gap(4, 4, Unknown)]
        );
        assert_eq!(classify(&[[1, 9]], None), vec![]);
    }

    #[test]
    fn a_recreated_stream_with_fewer_sequences_is_unknown() {
        let bus = BusState {
            first_seq: 1,
            last_seq: 2,
            ..BusState::default()
        };
        assert_eq!(
            classify(&[[1, 2], [6, 6]], Some(&bus)),
            vec![gap(3, 5, Unknown)]
        );
        // An empty stream whose messages were all purged.
        let bus = BusState {
            first_seq: 11,
            last_seq: 10,
            ..BusState::default()
        };
        assert_eq!(classify(&[[4, 10]], Some(&bus)), vec![gap(1, 3, Purged)]);
    }
}
