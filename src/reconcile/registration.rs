//! Registration follow-through, pure: submitting registration flows only marks meter points for
//! registration; the platform registers them afterwards, and that step can fail. For each meter
//! point the REST service lists for an imported account (`meterpoint-statuses-for-account`), the
//! account's `lifecycle.join-supplier.*` events are read by platform account number and matched
//! by `mpxn` = the supply point's `external_identifier`; the latest of them (by envelope time,
//! then stream order) decides:
//!
//! | registration | latest join-supplier event for the meter point |
//! |---|---|
//! | `registered` | `completed` or `activation.completed` |
//! | `in_flight` | `requested` or `activation.initiated`, requested within the registration grace |
//! | `stalled` | `requested` or `activation.initiated`, requested longer ago than the grace |
//! | `never_requested` | none |
//! | `cancelled` | `cancellation-requested` or `cancelled` |
//! | `reversed` | `reversal-requested` or `reversed` |
//!
//! Choices where the documents are silent: a cancellation or reversal *requested* already counts
//! as cancelled or reversed (the registration will not stand; the operator acts either way); the
//! request time is the latest `requested` event's `requested_at` (its envelope time when that is
//! not RFC 3339), so a new request restarts the clock; the REST status (only `PRE_REGISTRATION`
//! is documented) is shown beside the verdict, never used for it; `agreement.created` and
//! `supply-period.created` change nothing. An account rolls up to its worst meter point
//! (`reversed`, `cancelled`, `stalled`, `never_requested`, `in_flight`, `registered`), to
//! `no_meter_points` when the platform lists none, and to `unverified` when the platform did not
//! answer. Only imported accounts have a registration; the import verdict is never changed by it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// A meter point's (or, rolled up, an account's) registration state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Registration {
    Registered,
    InFlight,
    NeverRequested,
    Stalled,
    Cancelled,
    Reversed,
    NoMeterPoints,
    Unverified,
}

impl Registration {
    /// Every state, in report order.
    pub(crate) const ALL: [Registration; 8] = [
        Registration::Registered,
        Registration::InFlight,
        Registration::NeverRequested,
        Registration::Stalled,
        Registration::Cancelled,
        Registration::Reversed,
        Registration::NoMeterPoints,
        Registration::Unverified,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Registration::Registered => "registered",
            Registration::InFlight => "in_flight",
            Registration::NeverRequested => "never_requested",
            Registration::Stalled => "stalled",
            Registration::Cancelled => "cancelled",
            Registration::Reversed => "reversed",
            Registration::NoMeterPoints => "no_meter_points",
            Registration::Unverified => "unverified",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Registration> {
        Registration::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Nothing left to follow up: registered (or still on its way, which is not yet a problem).
    pub(crate) fn is_settled(self) -> bool {
        self == Registration::Registered
    }

    /// Worse states roll up over better ones.
    fn rank(self) -> u8 {
        match self {
            Registration::Registered => 0,
            Registration::InFlight => 1,
            Registration::Unverified => 2,
            Registration::NoMeterPoints => 3,
            Registration::NeverRequested => 4,
            Registration::Stalled => 5,
            Registration::Cancelled => 6,
            Registration::Reversed => 7,
        }
    }
}

impl std::fmt::Display for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds of `lifecycle.join-supplier.*` events that move a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinKind {
    Requested,
    ActivationInitiated,
    Completed,
    ActivationCompleted,
    CancellationRequested,
    Cancelled,
    ReversalRequested,
    Reversed,
}

impl JoinKind {
    /// From the event type (`lifecycle.join-supplier.completed`); `None` for the others.
    pub(crate) fn from_event_type(t: &str) -> Option<JoinKind> {
        Some(match t.strip_prefix("lifecycle.join-supplier.")? {
            "requested" => JoinKind::Requested,
            "activation.initiated" => JoinKind::ActivationInitiated,
            "completed" => JoinKind::Completed,
            "activation.completed" => JoinKind::ActivationCompleted,
            "cancellation-requested" => JoinKind::CancellationRequested,
            "cancelled" => JoinKind::Cancelled,
            "reversal-requested" => JoinKind::ReversalRequested,
            "reversed" => JoinKind::Reversed,
            _ => return None,
        })
    }
}

/// One join-supplier event naming one meter point (an event naming two supply points is two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JoinEvent {
    /// The platform account number.
    pub(crate) account_number: String,
    pub(crate) mpxn: String,
    /// The event type, e.g. `lifecycle.join-supplier.completed`.
    pub(crate) event_type: String,
    pub(crate) occurred_at: Option<DateTime<Utc>>,
    /// `requested_at` of a `requested` event, when RFC 3339.
    pub(crate) requested_at: Option<DateTime<Utc>>,
    pub(crate) process: Option<String>,
    pub(crate) stream_seq: i64,
}

/// One meter point of an imported account, as reported and stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MeterPoint {
    pub(crate) mpxn: String,
    /// What `meterpoint-statuses-for-account` says (e.g. `PRE_REGISTRATION`).
    pub(crate) status: String,
    /// Absent in runs stored before the follow-through existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) registration: Option<Registration>,
    /// The deciding event's type, and when it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) event_time: Option<DateTime<Utc>>,
    /// When the registration was (last) requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requested_at: Option<DateTime<Utc>>,
    /// The join-supplier process number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) process: Option<String>,
}

/// The verdict of one meter point from its join-supplier events (any order).
pub(crate) fn decide(
    mpxn: &str,
    status: &str,
    events: &[&JoinEvent],
    now: DateTime<Utc>,
    grace: Duration,
) -> MeterPoint {
    let mut moving: Vec<(&JoinEvent, JoinKind)> = events
        .iter()
        .filter_map(|e| JoinKind::from_event_type(&e.event_type).map(|k| (*e, k)))
        .collect();
    // Latest last: envelope time (missing first), then stream order.
    moving.sort_by_key(|(e, _)| (e.occurred_at.is_some(), e.occurred_at, e.stream_seq));
    let requested = moving
        .iter()
        .rev()
        .find(|(_, k)| *k == JoinKind::Requested)
        .map(|(e, _)| e.requested_at.or(e.occurred_at));
    let mut point = MeterPoint {
        mpxn: mpxn.to_owned(),
        status: status.to_owned(),
        registration: Some(Registration::NeverRequested),
        event: None,
        event_time: None,
        requested_at: requested.flatten(),
        process: None,
    };
    let Some((latest, kind)) = moving.last() else {
        return point;
    };
    point.event = Some(latest.event_type.clone());
    point.event_time = latest.occurred_at;
    point.process = latest.process.clone();
    point.registration = Some(match kind {
        JoinKind::Completed | JoinKind::ActivationCompleted => Registration::Registered,
        JoinKind::CancellationRequested | JoinKind::Cancelled => Registration::Cancelled,
        JoinKind::ReversalRequested | JoinKind::Reversed => Registration::Reversed,
        JoinKind::Requested | JoinKind::ActivationInitiated => {
            match point.requested_at.or(latest.occurred_at) {
                Some(t) if t > now - grace => Registration::InFlight,
                // No time at all: it cannot be shown to be within the grace.
                _ => Registration::Stalled,
            }
        }
    });
    point
}

/// An account's registration: its worst meter point; `no_meter_points` when there is none.
pub(crate) fn rollup(points: &[MeterPoint]) -> Registration {
    points
        .iter()
        .filter_map(|p| p.registration)
        .max_by_key(|r| r.rank())
        .unwrap_or(Registration::NoMeterPoints)
}

/// A short explanation of the meter points that are not registered, for the detail column.
pub(crate) fn explain(points: &[MeterPoint], now: DateTime<Utc>) -> Option<String> {
    let ago = |t: DateTime<Utc>| {
        let h = (now - t).num_hours();
        if h < 48 {
            format!("{h} h ago")
        } else {
            format!("{} d ago", h / 24)
        }
    };
    let parts: Vec<String> = points
        .iter()
        .filter_map(|p| {
            let r = p.registration?;
            let why = match r {
                Registration::Registered => return None,
                Registration::InFlight | Registration::Stalled => match p.requested_at {
                    Some(t) => format!("requested {}, not completed", ago(t)),
                    None => "requested (no time given), not completed".to_owned(),
                },
                Registration::NeverRequested => "no registration requested".to_owned(),
                _ => match &p.event {
                    Some(e) => format!("latest event {}", e.trim_start_matches("lifecycle.")),
                    None => r.as_str().to_owned(),
                },
            };
            Some(format!("meter point {} {r}: {why}", p.mpxn))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    fn ev(kind: &str, hours_ago: i64, seq: i64) -> JoinEvent {
        let at = now() - Duration::hours(hours_ago);
        JoinEvent {
            account_number: "A-1".into(),
            mpxn: "M1".into(),
            event_type: format!("lifecycle.join-supplier.{kind}"),
            occurred_at: Some(at),
            requested_at: (kind == "requested").then_some(at),
            process: Some("J-1".into()),
            stream_seq: seq,
        }
    }

    fn verdict(events: &[JoinEvent]) -> Registration {
        let refs: Vec<&JoinEvent> = events.iter().collect();
        decide("M1", "PRE_REGISTRATION", &refs, now(), Duration::hours(24))
            .registration
            .expect("decided")
    }

    #[test]
    fn every_row_of_the_table() {
        use Registration::*;
        assert_eq!(verdict(&[]), NeverRequested);
        assert_eq!(verdict(&[ev("requested", 2, 1)]), InFlight);
        assert_eq!(verdict(&[ev("requested", 30, 1)]), Stalled);
        assert_eq!(
            verdict(&[ev("requested", 30, 1), ev("completed", 20, 2)]),
            Registered
        );
        assert_eq!(
            verdict(&[ev("requested", 30, 1), ev("activation.completed", 20, 2)]),
            Registered
        );
        assert_eq!(
            verdict(&[ev("requested", 30, 1), ev("activation.initiated", 1, 2)]),
            Stalled,
            "the request time decides, not the activation's"
        );
        for k in ["cancellation-requested", "cancelled"] {
            assert_eq!(
                verdict(&[ev("requested", 3, 1), ev(k, 2, 2)]),
                Cancelled,
                "{k}"
            );
        }
        for k in ["reversal-requested", "reversed"] {
            assert_eq!(
                verdict(&[ev("requested", 30, 1), ev("completed", 20, 2), ev(k, 2, 3)]),
                Reversed,
                "{k}"
            );
        }
        // Informational events change nothing.
        assert_eq!(
            verdict(&[ev("completed", 20, 1), ev("agreement.created", 1, 2)]),
            Registered
        );
    }

    #[test]
    fn envelope_time_then_stream_order_decides_the_latest() {
        // Delivered late (higher sequence) but earlier in time: the completion stands.
        let events = [ev("completed", 1, 1), ev("requested", 30, 2)];
        assert_eq!(verdict(&events), Registration::Registered);
        // A new request after a completion restarts the registration.
        let events = [ev("completed", 20, 1), ev("requested", 1, 2)];
        assert_eq!(verdict(&events), Registration::InFlight);
    }

    #[test]
    fn accounts_roll_up_to_their_worst_meter_point() {
        let p = |r| MeterPoint {
            mpxn: "M".into(),
            status: "PRE_REGISTRATION".into(),
            registration: Some(r),
            event: None,
            event_time: None,
            requested_at: None,
            process: None,
        };
        use Registration::*;
        assert_eq!(rollup(&[]), NoMeterPoints);
        assert_eq!(rollup(&[p(Registered), p(InFlight)]), InFlight);
        assert_eq!(
            rollup(&[p(InFlight), p(Stalled), p(NeverRequested)]),
            Stalled
        );
        assert_eq!(rollup(&[p(Cancelled), p(Reversed)]), Reversed);
        assert!(explain(&[p(Registered)], now()).is_none());
        let why = explain(&[p(Registered), p(NeverRequested)], now()).expect("explained");
        assert!(why.contains("never_requested"), "{why}");
    }

    #[test]
    fn names_round_trip() {
        for r in Registration::ALL {
            assert_eq!(Registration::parse(r.as_str()), Some(r));
            assert_eq!(
                serde_json::to_value(r).ok(),
                Some(serde_json::Value::from(r.as_str()))
            );
        }
    }
}
