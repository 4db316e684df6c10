//! A run's settings: what decides its verdicts and its outcome besides the data on both sides
//! (the event grace, the registration grace when registrations are followed, whether pending
//! accounts are asked about, the tolerances, the window of outcome events). Stored with each
//! run (`audit.reconcile_runs.settings`), so that a comparison of two runs can say when they
//! used different settings: a run from the command line with a 7-day registration grace
//! between two scheduled runs with 30 minutes otherwise reads as accounts changing back and
//! forth. Pure.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Params;
use crate::config::Dur;

/// The settings of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunSettings {
    /// An import this recent without outcome event is `awaiting_event`, not `missing_event`.
    pub(crate) grace_secs: i64,
    /// A registration requested longer ago without completion is `stalled`; `None` when
    /// registrations were not followed (the grace decides nothing then).
    pub(crate) registration_grace_secs: Option<i64>,
    /// Every pending account asked about (tells `in_progress` from `pending`).
    pub(crate) check_pending: bool,
    /// Registrations followed up.
    pub(crate) meter_points: bool,
    /// `VERDICT` or `VERDICT=N`, counted as OK for the outcome.
    pub(crate) tolerances: Vec<String>,
    /// Outcome events at or after / before these times, as given.
    pub(crate) since: Option<DateTime<Utc>>,
    pub(crate) until: Option<DateTime<Utc>>,
    /// A moving window: outcome events of the last this many seconds (the daemon's
    /// `--reconcile-window`); its start, different at every run, is in the run's parameters.
    pub(crate) window_secs: Option<i64>,
}

fn dur(secs: i64) -> String {
    Dur::secs(u64::try_from(secs).unwrap_or(0)).to_string()
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl RunSettings {
    /// The settings of a run with these parameters.
    pub(crate) fn of(p: &Params) -> RunSettings {
        let moving = p.window.map(|w| w.num_seconds());
        RunSettings {
            grace_secs: p.grace.num_seconds(),
            registration_grace_secs: p.meter_points.then(|| p.registration_grace.num_seconds()),
            check_pending: p.check_pending,
            meter_points: p.meter_points,
            tolerances: p
                .tolerances
                .iter()
                .map(|t| match t.max {
                    Some(n) => format!("{}={n}", t.verdict),
                    None => t.verdict.to_string(),
                })
                .collect(),
            since: p.since.filter(|_| moving.is_none()),
            until: p.until,
            window_secs: moving,
        }
    }

    /// Each setting as `(name, value)`, in a fixed order.
    fn items(&self) -> [(&'static str, String); 6] {
        let t = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339());
        let window = match (self.window_secs, t(self.since), t(self.until)) {
            (Some(w), _, until) => format!(
                "the last {}{}",
                dur(w),
                until.map_or_else(String::new, |u| format!(" before {u}"))
            ),
            (None, None, None) => "all".to_owned(),
            (None, since, until) => format!(
                "from {} until {}",
                since.as_deref().unwrap_or("the beginning"),
                until.as_deref().unwrap_or("now")
            ),
        };
        [
            ("grace", dur(self.grace_secs)),
            (
                "registration grace",
                self.registration_grace_secs
                    .map_or_else(|| "- (not followed)".to_owned(), dur),
            ),
            ("registrations followed", yes(self.meter_points).to_owned()),
            ("pending asked", yes(self.check_pending).to_owned()),
            (
                "tolerated",
                if self.tolerances.is_empty() {
                    "none".to_owned()
                } else {
                    self.tolerances.join(" ")
                },
            ),
            ("window", window),
        ]
    }

    /// One line: `grace 15m · registration grace 30m · …`.
    pub(crate) fn describe(&self) -> String {
        self.items()
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// What differs from this (earlier) run's settings to `later`'s, one entry each:
    /// `registration grace 7d → 30m`. Empty when they are the same.
    pub(crate) fn differences(&self, later: &RunSettings) -> Vec<String> {
        self.items()
            .into_iter()
            .zip(later.items())
            .filter(|((_, a), (_, b))| a != b)
            .map(|((k, a), (_, b))| format!("{k} {a} → {b}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        let mut p = Params::new(vec!["S".into()], chrono::Duration::minutes(15), "cli");
        p.meter_points = true;
        p
    }

    #[test]
    fn the_settings_that_differ_are_named_with_both_values() {
        let mut cli = params();
        cli.registration_grace = chrono::Duration::days(7);
        let mut daemon = params();
        daemon.registration_grace = chrono::Duration::seconds(1800);
        let (a, b) = (RunSettings::of(&cli), RunSettings::of(&daemon));
        assert_eq!(a.differences(&b), vec!["registration grace 7d → 30m"]);
        assert!(a.differences(&a).is_empty());
        assert_eq!(
            b.describe(),
            "grace 15m · registration grace 30m · registrations followed yes · pending asked no \
             · tolerated none · window all"
        );
        let mut c = cli.clone();
        c.check_pending = true;
        c.tolerances = vec!["missing_event=2".parse().expect("tolerance")];
        c.since = DateTime::from_timestamp(1_800_000_000, 0);
        let d = a.differences(&RunSettings::of(&c));
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("pending asked no → yes"), "{d:?}");
        assert_eq!(d[1], "tolerated none → missing_event=2");
        assert!(d[2].starts_with("window all → from 2027-"), "{d:?}");
    }

    #[test]
    fn a_moving_window_is_its_length_not_its_start() {
        let mut p = params();
        p.window = Some(chrono::Duration::days(7));
        p.since = DateTime::from_timestamp(1_800_000_000, 0);
        let a = RunSettings::of(&p);
        p.since = DateTime::from_timestamp(1_800_000_900, 0);
        assert!(a.differences(&RunSettings::of(&p)).is_empty());
        assert!(
            a.describe().ends_with("window the last 7d"),
            "{}",
            a.describe()
        );
        // Registrations not followed: their grace decides nothing, so it is not compared.
        let mut q = params();
        q.meter_points = false;
        let mut r = q.clone();
        r.registration_grace = chrono::Duration::days(1);
        assert!(RunSettings::of(&q)
            .differences(&RunSettings::of(&r))
            .is_empty());
    }
}
