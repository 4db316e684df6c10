//! The breaks the auditor's state remembers: the first break a run finds is recorded (the row
//! or checkpoint, the run, the time) and every later run exits 1 naming it, until the auditor
//! acknowledges it by its id (`verify --acknowledge-break ID`, recorded too). Pure: the state
//! file is read and written by [`super::auditor`], the outcome printed by the CLI.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A break a run found, as the state keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordedBreak {
    /// What `--acknowledge-break` takes: 8 hex digits drawn from the break and its time.
    pub(crate) id: String,
    /// When the run found it (RFC 3339, UTC).
    pub(crate) found_at: String,
    /// The run that found it: the state's run count at that run (1 is the state's first run).
    pub(crate) run: u64,
    /// The first break of that run, as it was reported.
    pub(crate) why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream_seq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) link: Option<i64>,
    /// The first checkpoint that did not hold, when the break was the witness's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) checkpoint: Option<String>,
    /// How many breaks that run found in all.
    pub(crate) breaks_total: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) acknowledged: Option<Acknowledged>,
}

/// When, and by which run, a break was acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Acknowledged {
    pub(crate) at: String,
    pub(crate) run: u64,
}

/// What this run found broken, to be remembered when no break is open.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finding {
    pub(crate) why: String,
    pub(crate) stream: Option<String>,
    pub(crate) stream_seq: Option<i64>,
    pub(crate) link: Option<i64>,
    pub(crate) checkpoint: Option<String>,
    pub(crate) breaks_total: i64,
}

/// Why an acknowledgement cannot be taken (exit 2, nothing changed).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AckError {
    #[error(
        "--acknowledge-break {id}: the state file remembers no open break (nothing to acknowledge)"
    )]
    NothingOpen { id: String },
    #[error("--acknowledge-break {id}: the open break is {open} ({why}); give its id")]
    OtherId {
        id: String,
        open: String,
        why: String,
    },
    #[error("--acknowledge-break needs the state file that remembers the break (not --no-state)")]
    NoState,
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl RecordedBreak {
    /// One line naming the break, its run and time, and how to acknowledge it.
    pub(crate) fn line(&self) -> String {
        format!(
            "break {} found by run {} at {}: {} ({} break(s) in that run)",
            self.id, self.run, self.found_at, self.why, self.breaks_total
        )
    }
}

/// Every break found, in the order found (the auditor's state keeps them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Breaks(pub(crate) Vec<RecordedBreak>);

impl Breaks {
    /// The break found and not yet acknowledged, if any (at most one is open at a time).
    pub(crate) fn open(&self) -> Option<&RecordedBreak> {
        self.0.iter().find(|b| b.acknowledged.is_none())
    }

    /// Marks the open break `id` acknowledged by run `run` at `now`.
    pub(crate) fn acknowledge(
        &mut self,
        id: &str,
        run: u64,
        now: DateTime<Utc>,
    ) -> Result<RecordedBreak, AckError> {
        let Some(open) = self.0.iter_mut().find(|b| b.acknowledged.is_none()) else {
            return Err(AckError::NothingOpen { id: id.into() });
        };
        if !open.id.eq_ignore_ascii_case(id.trim()) {
            return Err(AckError::OtherId {
                id: id.into(),
                open: open.id.clone(),
                why: open.why.clone(),
            });
        }
        open.acknowledged = Some(Acknowledged {
            at: stamp(now),
            run,
        });
        Ok(open.clone())
    }

    /// Remembers `f`, found by run `run` at `now`, unless a break is already open (the first
    /// one found stays the one named). Returns the break recorded, if any.
    pub(crate) fn remember(
        &mut self,
        f: Finding,
        run: u64,
        now: DateTime<Utc>,
    ) -> Option<RecordedBreak> {
        if self.open().is_some() {
            return None;
        }
        let found_at = stamp(now);
        let mut h = Sha256::new();
        h.update(found_at.as_bytes());
        h.update(run.to_be_bytes());
        h.update(f.why.as_bytes());
        h.update((self.0.len() as u64).to_be_bytes());
        let d = h.finalize();
        let id = crate::tlog::note::hex4(&[d[0], d[1], d[2], d[3]]);
        let b = RecordedBreak {
            id,
            found_at,
            run,
            why: f.why,
            stream: f.stream,
            stream_seq: f.stream_seq,
            link: f.link,
            checkpoint: f.checkpoint,
            breaks_total: f.breaks_total,
            acknowledged: None,
        };
        self.0.push(b.clone());
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(why: &str) -> Finding {
        Finding {
            why: why.into(),
            stream: Some("EVENTS".into()),
            stream_seq: Some(42),
            breaks_total: 1,
            ..Default::default()
        }
    }

    #[test]
    fn the_first_break_stays_open_until_acknowledged_by_its_id() {
        let now = Utc::now();
        let mut s = Breaks::default();
        let first = s.remember(finding("row edited"), 3, now).expect("recorded");
        assert_eq!(first.id.len(), 8);
        assert!(
            first.line().contains(&first.id) && first.line().contains("row edited"),
            "{}",
            first.line()
        );
        // A second break while the first is open is not recorded over it.
        assert!(s.remember(finding("another"), 4, now).is_none());
        assert_eq!(s.open().map(|b| b.why.as_str()), Some("row edited"));
        assert!(matches!(
            s.acknowledge("00000000", 5, now),
            Err(AckError::OtherId { .. })
        ));
        let acked = s
            .acknowledge(&first.id.to_uppercase(), 5, now)
            .expect("ack");
        assert_eq!(acked.acknowledged.as_ref().map(|a| a.run), Some(5));
        assert!(s.open().is_none());
        assert!(matches!(
            s.acknowledge(&first.id, 6, now),
            Err(AckError::NothingOpen { .. })
        ));
        // Once acknowledged, a new break is recorded again, with another id.
        let second = s.remember(finding("row edited"), 7, now).expect("recorded");
        assert_ne!(second.id, first.id);
        assert_eq!(s.0.len(), 2);
    }
}
