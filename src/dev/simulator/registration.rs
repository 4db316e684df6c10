//! The registration side of the simulated batch: for every imported account, the
//! `lifecycle.join-supplier.*` events of its meter points (keyed by the platform account
//! number; each supply point's `external_identifier` is the meter point's mpxn, as the REST
//! meter point statuses list it) that give it the registration it must get. By default a
//! registration is requested with the import and completed just after (→ `registered`); the
//! registration anomalies change that:
//! - registration-in-flight: requested at play time, not completed (→ `in_flight`)
//! - registration-never-requested: no join-supplier event (→ `never_requested`)
//! - registration-stalled: requested with the import, never completed (→ `stalled` with a
//!   registration grace below the batch's age)
//! - registration-cancelled: requested, then cancelled (→ `cancelled`)
//! - registration-reversed: requested, completed, then reversed (→ `reversed`)

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use crate::reconcile::registration::Registration;

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn market(mpxn: &str) -> &'static str {
    if mpxn.ends_with(['0', '2', '4', '6', '8']) {
        "ELECTRICITY"
    } else {
        "GAS"
    }
}

/// The join-supplier events of one imported account that give its meter points registration
/// `want`, in order: `(event name, envelope time, payload)`. `at` is the import time, `now`
/// the play time.
pub(crate) fn events(
    number: &str,
    process: &str,
    meter_points: &[String],
    want: Registration,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<(&'static str, DateTime<Utc>, Value)> {
    let date = (at + Duration::days(14)).format("%Y-%m-%d").to_string();
    let requested_points: Vec<Value> = meter_points
        .iter()
        .map(|m| json!({"external_identifier": m, "market_name": market(m), "requested_supply_start_date": date}))
        .collect();
    let activated: Vec<Value> = meter_points
        .iter()
        .map(|m| json!({"external_identifier": m, "market_name": market(m), "confirmed_supply_start_date": date}))
        .collect();
    let base = |points: &[Value]| {
        json!({"account_number": number, "join_supplier_process_number": process,
               "subtype": "import", "supply_points": points})
    };
    let requested = |t: DateTime<Utc>| {
        let mut p = base(&requested_points);
        p["requested_at"] = Value::from(time(t));
        ("lifecycle.join-supplier.requested-v1", t, p)
    };
    let ms = Duration::milliseconds;
    let completed = (
        "lifecycle.join-supplier.completed-v1",
        at + ms(3),
        base(&activated),
    );
    match want {
        Registration::NeverRequested | Registration::NoMeterPoints | Registration::Unverified => {
            Vec::new()
        }
        Registration::InFlight => vec![requested(now)],
        Registration::Stalled => vec![requested(at + ms(2))],
        Registration::Cancelled => vec![
            requested(at + ms(2)),
            (
                "lifecycle.join-supplier.cancellation-requested-v1",
                at + ms(3),
                base(&requested_points),
            ),
            (
                "lifecycle.join-supplier.cancelled-v1",
                at + ms(4),
                base(&requested_points),
            ),
        ],
        Registration::Reversed => vec![
            requested(at + ms(2)),
            completed,
            (
                "lifecycle.join-supplier.reversal-requested-v1",
                at + ms(4),
                base(&requested_points),
            ),
            (
                "lifecycle.join-supplier.reversed-v1",
                at + ms(5),
                base(&requested_points),
            ),
        ],
        Registration::Registered => vec![requested(at + ms(2)), completed],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::registration::{decide, JoinEvent};

    /// The events the simulator plays give, through the real decision, the stated verdict.
    #[test]
    fn each_anomaly_gives_its_registration() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let now = at + Duration::hours(1);
        let points = vec!["1234567890123".to_owned()];
        for want in [
            Registration::Registered,
            Registration::InFlight,
            Registration::NeverRequested,
            Registration::Stalled,
            Registration::Cancelled,
            Registration::Reversed,
        ] {
            let evs: Vec<JoinEvent> = events("A-1", "J-1", &points, want, at, now)
                .into_iter()
                .enumerate()
                .map(|(i, (name, t, p))| JoinEvent {
                    account_number: "A-1".into(),
                    mpxn: points[0].clone(),
                    event_type: name.trim_end_matches("-v1").to_owned(),
                    occurred_at: Some(t),
                    requested_at: p["requested_at"]
                        .as_str()
                        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                        .map(|t| t.with_timezone(&Utc)),
                    process: Some("J-1".into()),
                    stream_seq: i as i64,
                })
                .collect();
            let refs: Vec<&JoinEvent> = evs.iter().collect();
            let got = decide(
                &points[0],
                "PRE_REGISTRATION",
                &refs,
                now,
                Duration::minutes(30),
            );
            assert_eq!(got.registration, Some(want), "{want:?}");
        }
    }
}
