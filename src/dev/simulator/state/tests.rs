//! Unit tests of the simulated batch's plan: deterministic, exact anomaly counts, every event
//! decodes.

use super::*;

/// Every anomaly: each is played.
const ALL: [Anomaly; 17] = [
    Anomaly::DropCompletion,
    Anomaly::WrongIdentifier,
    Anomaly::ErrorButCreated,
    Anomaly::Cancelled,
    Anomaly::CancelledButImported,
    Anomaly::DryRun,
    Anomaly::DuplicateEvents,
    Anomaly::LateEvents,
    Anomaly::LeftInProgress,
    Anomaly::LeftPending,
    Anomaly::Failed,
    Anomaly::MissingInPlatform,
    Anomaly::RegistrationInFlight,
    Anomaly::RegistrationNeverRequested,
    Anomaly::RegistrationStalled,
    Anomaly::RegistrationCancelled,
    Anomaly::RegistrationReversed,
];

fn cfg(rates: &[(Anomaly, f64)]) -> PlanConfig {
    PlanConfig {
        supplier: "S".into(),
        accounts: 200,
        seed: 7,
        start: DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
        rates: rates.iter().copied().collect(),
        rest_down: 0.0,
        orders: 5,
        now: DateTime::from_timestamp(1_800_003_600, 0).unwrap_or_default(),
    }
}

#[test]
fn deterministic_and_distinct() {
    let c = cfg(&[(Anomaly::DropCompletion, 0.1), (Anomaly::LateEvents, 0.05)]);
    let (a, b) = (plan(&c).expect("plan"), plan(&c).expect("plan"));
    assert_eq!(a.events, b.events);
    let numbers: std::collections::HashSet<&str> =
        a.accounts.iter().map(|x| x.number.as_str()).collect();
    assert_eq!(numbers.len(), 200);
    let exts: std::collections::HashSet<&str> =
        a.accounts.iter().map(|x| x.external.as_str()).collect();
    assert_eq!(exts.len(), 200);
    let mut other = c.clone();
    other.seed = 8;
    assert_ne!(plan(&other).expect("plan").events, a.events);
}

#[test]
fn anomalies_get_exact_counts_on_distinct_accounts() {
    let rates: Vec<(Anomaly, f64)> = ALL.iter().map(|a| (*a, 0.05)).collect();
    let p = plan(&cfg(&rates)).expect("plan");
    assert_eq!(p.accounts.len(), 200);
    for a in ALL {
        assert_eq!(
            p.accounts.iter().filter(|x| x.anomaly == Some(a)).count(),
            10,
            "{a:?}"
        );
    }
    let e = p.expected();
    // 30 accounts have no registration (not imported); 5 registration anomalies.
    assert_eq!(e["counts"]["matched"], 30 + 20 + 50);
    assert_eq!(e["registration_counts"]["stalled"], 10);
    // 60 accounts are not imported (six anomalies), 50 have a registration anomaly.
    assert_eq!(e["registration_counts"]["registered"], 200 - 60 - 50);
    assert_eq!(p.manifest().orders.len(), 5);
    assert!(plan(&cfg(&[(Anomaly::DryRun, 0.7), (Anomaly::Failed, 0.4)])).is_err());
}

#[test]
fn every_event_decodes() {
    let rates: Vec<(Anomaly, f64)> = ALL.iter().map(|a| (*a, 0.05)).collect();
    let p = plan(&cfg(&rates)).expect("plan");
    for e in &p.events {
        let v = crate::decode::verdict::decode(e, None);
        assert_eq!(
            v.status,
            crate::decode::verdict::Status::Decoded,
            "{}",
            String::from_utf8_lossy(e)
        );
    }
}
