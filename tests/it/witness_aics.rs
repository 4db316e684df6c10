//! An outside witness in the suite: aics-witness (PyPI, 0.1.0, another author's C2SP
//! tlog-witness), configured with the daemon's log key, cosigns the daemon's checkpoints: the
//! signer runs with a policy whose quorum needs its cosignature (and the project's own
//! witness's) and publishes what that quorum cosigned; `verify --witness-policy` counts the aics
//! witness's cosignature (a policy naming it alone holds; one giving its name another key trusts
//! nothing). scripts/aics-witness.sh installs it when missing, on a Python >= 3.12 (its
//! Requires-Python), else on a 3.11 with pip's --ignore-requires-python (it runs there
//! unchanged); with an older Python the test prints one line saying why it is skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::app::run_until_idle;
use crate::support::observe::repo;
use crate::support::witness::{
    signing, verify_witness, write_keys, write_policy, write_witness_key, Witness, WitnessProcess,
};
use crate::support::{free_addr, TestDb, TestStream};

const NAME: &str = "aics.example/w1";

/// `scripts/aics-witness.sh ARGS` (installing aics-witness when missing): its stdout, or None
/// with the printed reason when the machine has no Python new enough (exit 3).
fn aics(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(repo().join("scripts/aics-witness.sh"))
        .args(args)
        .output()
        .expect("run scripts/aics-witness.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        println!("skipped: {}", stderr.trim());
        return None;
    }
    assert!(out.status.success(), "aics-witness {args:?}: {stderr}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `aics-witness serve` as a process of its own, ended by its PID when dropped.
struct Aics {
    child: tokio::process::Child,
    log: PathBuf,
}

impl Aics {
    /// A witness named NAME in `dir` trusting the log `origin` with the vkey `log_vkey`,
    /// listening on `addr`; its own vkey (what `init` prints) beside it.
    async fn start(dir: &Path, addr: &str, origin: &str, log_vkey: &str) -> Option<(Aics, String)> {
        let config = dir.join("witness.json");
        let c = config.to_str().expect("utf-8");
        let vkey = aics(&["init", "--config", c, "--name", NAME, "--listen", addr])?;
        aics(&[
            "add-log", "--config", c, "--origin", origin, "--vkey", log_vkey,
        ])?;
        let log = dir.join("serve.log");
        let child = tokio::process::Command::new(repo().join("scripts/aics-witness.sh"))
            .args(["serve", "--config", c])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the witness's log"))
            .kill_on_drop(true)
            .spawn()
            .expect("start aics-witness");
        let started = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "aics-witness did not listen on {addr}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Some((Aics { child, log }, vkey.trim().to_owned()))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Aics {
    fn drop(&mut self) {
        // By its PID: the script execs the witness, so this is the Python process itself.
        let _ = self.child.start_kill();
    }
}

/// The tree size aics-witness holds cosigned for `origin` (`status --json`).
fn cosigned_size(dir: &Path, origin: &str) -> Option<u64> {
    let c = dir.join("witness.json");
    let status = aics(&["status", "--config", c.to_str()?, "--json"])?;
    let doc: serde_json::Value = serde_json::from_str(&status).expect("status --json");
    doc["logs"]
        .as_array()?
        .iter()
        .find(|l| l["origin"] == origin)?["size"]
        .as_u64()
}

#[tokio::test]
async fn aics_witness_cosigns_and_verify_counts_its_cosignature() {
    if aics(&["--install"]).is_none() {
        return;
    }
    let db = TestDb::create().await;
    let ts = TestStream::create("aics").await;
    let cps = format!("{}_CP", ts.name);
    let _cp_guard = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let origin = format!("example.com/logs/{}", db.name);
    let (key, public, _) = write_keys(dir, &origin, 61);
    let log_vkey = std::fs::read_to_string(&public).expect("vkey");
    let state = dir.join("aics");
    std::fs::create_dir_all(&state).expect("mkdir");
    let addr = free_addr();
    let Some((aics_witness, aics_vkey)) =
        Aics::start(&state, &addr, &origin, log_vkey.trim()).await
    else {
        return;
    };
    assert!(aics_vkey.starts_with(&format!("{NAME}+")), "{aics_vkey}");

    // The project's own witness beside it; the signer's quorum needs both.
    let (wkey, wpub, _) = write_witness_key(dir, "own.example/w1", 62);
    let own = WitnessProcess::start(&wkey, std::slice::from_ref(&public), &dir.join("own")).await;
    let own_vkey = std::fs::read_to_string(&wpub).expect("vkey");
    let aics_url = format!("http://{addr}");
    let both = write_policy(
        &dir.join("both"),
        &[
            (aics_vkey.clone(), aics_url.clone()),
            (own_vkey.trim().to_owned(), own.url.clone()),
        ],
        2,
    );
    let alone = write_policy(&dir.join("alone"), &[(aics_vkey, aics_url.clone())], 1);
    let (_, stranger_pub, _) = write_witness_key(dir, NAME, 63);
    let stranger_vkey = std::fs::read_to_string(&stranger_pub).expect("vkey");
    let stranger = write_policy(
        &dir.join("stranger"),
        &[(stranger_vkey.trim().to_owned(), aics_url)],
        1,
    );

    ts.publish_load(30, 61).await;
    let mut s = signing(&db, &ts, &key, &cps, &dir.join("checkpoints"));
    s.witness.witness_policy = Some(both.clone());
    s.witness.signer_state = Some(dir.join("signer.state"));
    run_until_idle(s).await;
    let published: Vec<(i64, bool)> = sqlx::query_as(
        "SELECT tree_size, published FROM audit.checkpoints WHERE log = 'events' ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .expect("checkpoints");
    assert_eq!(published, vec![(30, true)], "{}", aics_witness.log());
    assert_eq!(
        cosigned_size(&state, &origin),
        Some(30),
        "{}",
        aics_witness.log()
    );

    let verify_under = |policy: &std::path::Path| {
        let p = policy.to_str().expect("utf-8").to_owned();
        let (url, public, cps) = (db.url.clone(), public.clone(), cps.clone());
        async move { verify_witness(&url, &public, &cps, &["--witness-policy", &p, "--no-state"]).await }
    };
    for policy in [&both, &alone] {
        let v = verify_under(policy).await;
        assert_eq!(v.code, Some(0), "{policy:?}: {v:?}");
        assert!(
            v.stderr.contains("1 checkpoint(s) trusted, up to size 30"),
            "{policy:?}: {v:?}"
        );
    }
    // The same name under another key: its cosignature is not there, nothing is trusted.
    let v = verify_under(&stranger).await;
    assert_eq!(v.code, Some(1), "{v:?}");
    assert!(
        v.stderr.contains("do not meet the witness policy's quorum")
            && v.stderr.contains("(cosigned by: none)"),
        "{v:?}"
    );
}
