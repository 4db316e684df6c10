//! The platform simulator in-process, and the ground truth it states; [`Sim::fix`] makes the
//! platform finish accounts (and publishes their events).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::TestStream;
use event_audit::config::{Settings, SimRates};
use event_audit::test_support::dev::simulator::server::Platform;
use event_audit::test_support::dev::simulator::Simulator;
use event_audit::test_support::reconcile::Manifest;

pub(crate) const TOKEN: &str = "tok-Rec0ncile-S3cret-7f2a9";

/// Every anomaly flag and the verdict it must give, stated by hand (the simulator's ground
/// truth is checked against these too).
pub(crate) const ANOMALIES: [(&str, &str); 12] = [
    ("--drop-completion", "missing_event"),
    ("--wrong-identifier", "identifier_mismatch"),
    ("--error-but-created", "error_but_imported"),
    ("--cancelled", "cancelled"),
    ("--cancelled-but-imported", "cancelled_but_imported"),
    ("--dry-run", "dry_run_only"),
    ("--duplicate-events", "matched"),
    ("--late-events", "matched"),
    ("--left-in-progress", "in_progress"),
    ("--left-pending", "pending"),
    ("--failed", "failed"),
    ("--missing-in-platform", "missing_in_platform"),
];

/// Every registration anomaly and the registration it must give (the import verdict stays
/// `matched`).
pub(crate) const REGISTRATION_ANOMALIES: [(&str, &str); 5] = [
    ("--registration-in-flight", "in_flight"),
    ("--registration-never-requested", "never_requested"),
    ("--registration-stalled", "stalled"),
    ("--registration-cancelled", "cancelled"),
    ("--registration-reversed", "reversed"),
];

pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The platform simulator, in-process: its batch played onto the test's stream, its REST
/// service on a free port with the token [`TOKEN`] (in `token_file`). Stopped when dropped.
pub(crate) struct Sim {
    pub url: String,
    pub expected: Value,
    /// The batch's manifest (accounts and orders).
    pub manifest: Manifest,
    pub token_file: PathBuf,
    pub platform: Arc<Platform>,
    subject: String,
    seed: u64,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

/// Simulator settings for a test's stream: `accounts` of `supplier`, seeded.
pub(crate) fn sim_settings(
    ts: &TestStream,
    supplier: &str,
    accounts: usize,
    seed: u64,
) -> Settings {
    let mut s = ts.settings();
    s.simulator.supplier = supplier.into();
    s.simulator.accounts = accounts;
    s.simulator.seed = Some(seed);
    s.simulator.subject = ts.subject("platform");
    s
}

impl Sim {
    /// Starts a simulator with `tweak` applied to its settings (anomaly rates, faults).
    pub(crate) async fn start_with(
        ts: &TestStream,
        supplier: &str,
        accounts: usize,
        seed: u64,
        tweak: impl FnOnce(&mut Settings),
    ) -> Sim {
        let dir = tempfile::tempdir().expect("tempdir");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token file");
        let mut s = sim_settings(ts, supplier, accounts, seed);
        s.simulator.token_file = Some(token_file.clone());
        tweak(&mut s);
        let sim = Simulator::start(&s).await.expect("start the simulator");
        let url = format!("http://{}", sim.addr());
        let expected = sim.expected.clone();
        let manifest = sim.manifest.clone();
        let platform = sim.platform();
        let stop = CancellationToken::new();
        tokio::spawn(sim.serve(stop.clone()));
        Sim {
            url,
            expected,
            manifest,
            token_file,
            platform,
            subject: s.simulator.subject.clone(),
            seed,
            stop,
            _dir: dir,
        }
    }

    /// The platform finishes these accounts (imported now); their outcome, `account.created`
    /// and registration events are published to the simulator's subject of `ts`.
    pub(crate) async fn fix(&self, ts: &TestStream, accounts: &[String]) {
        for ext in accounts {
            let events = self
                .platform
                .fix(ext, self.seed)
                .unwrap_or_else(|| panic!("{ext} is not an account of the batch"));
            for e in events {
                ts.publish(&self.subject, &[], &e).await;
            }
        }
    }

    /// The manifest as a file in `dir`.
    pub(crate) fn manifest_file(&self, dir: &std::path::Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.manifest.render()).expect("write the manifest");
        path
    }

    /// Starts a simulator with the given anomaly rates.
    pub(crate) async fn start(
        ts: &TestStream,
        supplier: &str,
        accounts: usize,
        seed: u64,
        rates: SimRates,
    ) -> Sim {
        Sim::start_with(ts, supplier, accounts, seed, |s| s.simulator.rates = rates).await
    }

    pub(crate) fn counts(&self) -> BTreeMap<String, u64> {
        counts(&self.expected)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The rate of an anomaly in `r`, by its flag name.
fn rate_of<'a>(r: &'a mut SimRates, flag: &str) -> &'a mut f64 {
    match flag {
        "--drop-completion" => &mut r.drop_completion,
        "--wrong-identifier" => &mut r.wrong_identifier,
        "--error-but-created" => &mut r.error_but_created,
        "--cancelled" => &mut r.cancelled,
        "--cancelled-but-imported" => &mut r.cancelled_but_imported,
        "--dry-run" => &mut r.dry_run,
        "--duplicate-events" => &mut r.duplicate_events,
        "--late-events" => &mut r.late_events,
        "--left-in-progress" => &mut r.left_in_progress,
        "--left-pending" => &mut r.left_pending,
        "--failed" => &mut r.failed,
        "--missing-in-platform" => &mut r.missing_in_platform,
        "--registration-in-flight" => &mut r.registration_in_flight,
        "--registration-never-requested" => &mut r.registration_never_requested,
        "--registration-stalled" => &mut r.registration_stalled,
        "--registration-cancelled" => &mut r.registration_cancelled,
        "--registration-reversed" => &mut r.registration_reversed,
        other => panic!("unknown anomaly {other}"),
    }
}

/// Rates with one anomaly (by its flag name) set to `rate`.
pub(crate) fn one_anomaly(flag: &str, rate: f64) -> SimRates {
    let mut r = SimRates::default();
    *rate_of(&mut r, flag) = rate;
    r
}

/// Rates with every anomaly of [`ANOMALIES`] set to `rate`.
pub(crate) fn every_anomaly(rate: f64) -> SimRates {
    let mut r = SimRates::default();
    for (flag, _) in ANOMALIES {
        *rate_of(&mut r, flag) = rate;
    }
    r
}

pub(crate) fn counts(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v["counts"].clone()).expect("counts")
}

/// `verdict → n` with the given non-zero entries and zeros for the rest of the vocabulary.
pub(crate) fn stated(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = [
        "matched",
        "identifier_mismatch",
        "missing_in_platform",
        "missing_event",
        "awaiting_event",
        "error_but_imported",
        "failed",
        "cancelled",
        "cancelled_but_imported",
        "dry_run_only",
        "pending",
        "in_progress",
        "not_found",
        "unverified",
        "erased",
    ]
    .iter()
    .map(|v| (v.to_string(), 0))
    .collect();
    for (v, n) in pairs {
        *m.get_mut(*v).expect("a verdict of the vocabulary") += n;
    }
    m
}

/// Verdicts by external account number.
pub(crate) fn verdicts(v: &Value) -> BTreeMap<String, String> {
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["external_account_number"]
                    .as_str()
                    .expect("number")
                    .to_owned(),
                r["verdict"].as_str().expect("verdict").to_owned(),
            )
        })
        .collect()
}

/// Every account's verdict is the simulator's ground truth.
pub(crate) fn assert_per_account(report: &Value, sim: &Sim) {
    let got = verdicts(report);
    let want = verdicts(&sim.expected);
    assert_eq!(got.len(), want.len(), "accounts");
    for (ext, v) in &want {
        assert_eq!(got.get(ext), Some(v), "account {ext}");
    }
}
