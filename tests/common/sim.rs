//! Helpers of the reconciliation tests (`tests/reconcile.rs`, `tests/reconcile_http.rs`): the
//! platform simulator as a real subprocess with its ground truth, and `event-audit reconcile`
//! runs. Included with `#[path]` by those files only; not part of `common`'s module tree.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;
use tokio::process::{Child, Command};

use super::common::{nats_url, TestStream, BIN};

pub const TOKEN: &str = "tok-Rec0ncile-S3cret-7f2a9";

/// Every anomaly flag and the verdict it must give, stated by hand (the simulator's ground
/// truth is checked against these too).
pub const ANOMALIES: [(&str, &str); 12] = [
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

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A running simulator: its URL and its ground truth. Killed when dropped.
pub struct Sim {
    _child: Child,
    pub url: String,
    pub expected: Value,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sim {
    pub async fn start(
        ts: &TestStream,
        supplier: &str,
        accounts: usize,
        seed: u64,
        extra: &[String],
    ) -> Sim {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, format!("{TOKEN}\n")).expect("token file");
        let expected = dir.path().join("expected.json");
        let log = dir.path().join("sim.log");
        let mut cmd = Command::new(BIN);
        cmd.args([
            "simulate-platform",
            "--listen",
            "127.0.0.1:0",
            "--supplier",
            supplier,
        ])
        .args([
            "--accounts",
            &accounts.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .args([
            "--nats-url",
            &nats_url(),
            "--stream",
            &ts.name,
            "--subjects",
            &ts.subjects(),
        ])
        .args(["--subject", &ts.subject("platform")])
        .arg("--expected")
        .arg(&expected)
        .arg("--token-file")
        .arg(&token)
        .args(extra)
        .env("RUST_LOG", "info")
        .env_remove("EVENT_AUDIT_REST_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .kill_on_drop(true);
        let child = cmd.spawn().expect("spawn the simulator");
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("batch played:") {
                let url = text
                    .lines()
                    .find_map(|l| l.strip_prefix("simulator listening on "))
                    .expect("the simulator names its address")
                    .trim()
                    .to_owned();
                let expected: Value =
                    serde_json::from_slice(&std::fs::read(&expected).expect("expected file"))
                        .expect("expected JSON");
                return Sim {
                    _child: child,
                    url,
                    expected,
                    log,
                    _dir: dir,
                };
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the simulator did not play its batch:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn counts(&self) -> BTreeMap<String, u64> {
        counts(&self.expected)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

pub fn counts(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v["counts"].clone()).expect("counts")
}

/// `verdict → n` with the given non-zero entries and zeros for the rest of the vocabulary.
pub fn stated(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
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
    ]
    .iter()
    .map(|v| (v.to_string(), 0))
    .collect();
    for (v, n) in pairs {
        *m.get_mut(*v).expect("a verdict of the vocabulary") += n;
    }
    m
}

/// One `event-audit reconcile`.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

pub async fn reconcile(db: &str, url: &str, token: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["reconcile", "--database-url", db, "--rest-url", url])
        .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("EVENT_AUDIT_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .env("EVENT_AUDIT_REST_TOKEN", token)
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run event-audit reconcile");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Verdicts by external account number.
pub fn verdicts(v: &Value) -> BTreeMap<String, String> {
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
pub fn assert_per_account(report: &Value, sim: &Sim) {
    let got = verdicts(report);
    let want = verdicts(&sim.expected);
    assert_eq!(got.len(), want.len(), "accounts");
    for (ext, v) in &want {
        assert_eq!(got.get(ext), Some(v), "account {ext}");
    }
}
