//! The CLI commands whose exit codes and output are the point, as subprocesses: `verify`,
//! `reconcile`, and any other command ([`event_audit`]).

use serde_json::Value;

use super::bin;

/// The outcome of `event-audit verify`.
#[derive(Debug)]
pub(crate) struct Verify {
    pub code: Option<i32>,
    pub report: serde_json::Value,
    /// Shown when an assertion fails (the report is parsed from it).
    #[allow(dead_code)]
    pub stdout: String,
    pub stderr: String,
}

impl Verify {
    /// What the command said about the first break (its report and its message).
    pub(crate) fn first_break(&self) -> String {
        self.report["first_break"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

pub(crate) async fn verify(db_url: &str) -> Verify {
    let out = bin()
        .args(["verify", "--database-url", db_url])
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("run event-audit verify");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    Verify {
        code: out.status.code(),
        report,
        stdout,
        stderr,
    }
}

/// Asserts that `event-audit verify` exits 0 and reports `rows` rows.
pub(crate) async fn assert_verifies(db_url: &str, rows: i64) {
    let v = verify(db_url).await;
    assert_eq!(v.code, Some(0), "verify failed: {v:?}");
    assert_eq!(v.report["ok"], true, "{v:?}");
    assert_eq!(v.report["rows"], rows, "{v:?}");
    assert!(v.stderr.contains("chain intact"), "{v:?}");
    // Nothing unverifiable is said when there is none.
    assert!(
        !v.stderr.contains("0 erased, contents unverifiable"),
        "{v:?}"
    );
}

/// The outcome of `event-audit reconcile`.
#[derive(Debug)]
pub(crate) struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// `event-audit reconcile` on database `db` against the REST service at `url`, the token in
/// the environment (never argv), with `args`; no other `EVENT_AUDIT_*` setting leaks in.
pub(crate) async fn reconcile(db: &str, url: &str, token: &str, args: &[&str]) -> Run {
    let out = bin()
        .args(["reconcile", "--database-url", db, "--rest-url", url])
        .args(args)
        .env("EVENT_AUDIT_REST_TOKEN", token)
        .env("RUST_LOG", "debug")
        .output()
        .await
        .expect("run event-audit reconcile");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `event-audit ARGS` with `envs` (no other `EVENT_AUDIT_*` setting leaks in).
pub(crate) async fn event_audit(args: &[&str], envs: &[(&str, &str)]) -> Run {
    let mut cmd = bin();
    cmd.args(args).env("RUST_LOG", "warn");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("run event-audit");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `event-audit batch register` of `manifest` as `name` of `supplier` on database `db`.
pub(crate) async fn register_batch(
    db: &str,
    supplier: &str,
    name: &str,
    manifest: &std::path::Path,
) -> Run {
    let m = manifest.to_str().expect("a UTF-8 path");
    event_audit(
        &[
            "batch",
            "register",
            "--database-url",
            db,
            "--supplier",
            supplier,
            "--name",
            name,
            "--accounts",
            m,
        ],
        &[],
    )
    .await
}
