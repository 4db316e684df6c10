//! `mirror --follow` as a process: its metrics scraped over HTTP while the log grows (the tree
//! size, the pulls by outcome), then forks (the inconsistent gauge, one ERROR line for the pair
//! of notes however many pulls see it, the copy untouched from then on); and the daemon's own
//! read path (`run --tiles-dir`, `GET /log/...`) mirrored end to end.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::log::{copy_of, entries, hash_files, key, serve, write_log};
use super::ORIGIN;

/// The metrics text at `addr`, once it holds every line of `want` (30 s at most).
async fn scrape_until(addr: &str, want: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(r) = reqwest::get(format!("http://{addr}/metrics")).await {
            last = r.text().await.unwrap_or_default();
            if want.iter().all(|w| last.lines().any(|l| l == *w)) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the metrics never showed {want:?}:\n{last}");
}

#[tokio::test]
async fn follow_serves_the_size_then_the_fork_and_keeps_the_copy() {
    let t = tempfile::tempdir().expect("tempdir");
    let (logdir, mdir) = (t.path().join("log"), t.path().join("mirror"));
    let (k, public) = key(t.path(), ORIGIN, 1);
    write_log(&logdir, &k, &entries("a", 300));
    let (url, _served) = serve(&logdir).await;
    let addr = crate::support::free_addr();
    let log = tempfile::NamedTempFile::new().expect("log file");
    let mut child = crate::support::bin()
        .args(["mirror", "--log-url", &url, "--public-key"])
        .arg(&public)
        .arg("--dir")
        .arg(&mdir)
        .args(["--follow", "200ms", "--metrics-listen", &addr])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log.reopen().expect("reopen"))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn event-audit mirror --follow");

    scrape_until(&addr, &["event_audit_mirror_tree_size 300"]).await;
    write_log(&logdir, &k, &entries("a", 700));
    let text = scrape_until(
        &addr,
        &[
            "event_audit_mirror_tree_size 700",
            "event_audit_mirror_inconsistent 0",
            "event_audit_mirror_leaves_added_total 700",
        ],
    )
    .await;
    assert!(
        text.contains("event_audit_mirror_pulls_total{outcome=\"ok\"} 2"),
        "{text}"
    );
    assert!(text.contains("event_audit_mirror_last_success_timestamp_seconds 1"));
    let copy = copy_of(&mdir, ORIGIN);
    let before = hash_files(&copy);

    // The log now signs 900 leaves whose first ones differ: a fork.
    write_log(&logdir, &k, &entries("b", 900));
    scrape_until(
        &addr,
        &[
            "event_audit_mirror_inconsistent 1",
            "event_audit_mirror_tree_size 700",
        ],
    )
    .await;
    // Several pulls see the same pair of notes: one ERROR line.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let text = scrape_until(&addr, &["event_audit_mirror_inconsistent 1"]).await;
    let forks: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("event_audit_mirror_pulls_total{outcome=\"fork\"} "))
        .and_then(|n| n.parse().ok())
        .expect("the fork count");
    assert!(forks >= 3, "{text}");
    assert_eq!(
        hash_files(&copy),
        before,
        "the copy is untouched after the fork"
    );
    assert_eq!(
        child.try_wait().expect("status"),
        None,
        "--follow never exits"
    );
    let _ = child.kill().await;
    let logged = std::fs::read_to_string(log.path()).expect("read the log");
    let errors = logged
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains("FORK"))
        .count();
    assert_eq!(errors, 1, "one ERROR line per pair of notes:\n{logged}");
}

/// The daemon's arguments that sign checkpoints with `key` every second and write the tiles.
fn daemon_args(key: &Path, stream: &str, tiles: &Path) -> Vec<String> {
    let mut args = crate::support::witness::signing_args(key, stream);
    args.extend(["--tiles-dir".into(), tiles.display().to_string()]);
    args
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemons_log_is_mirrored_from_its_read_path() {
    let db = crate::support::TestDb::create().await;
    let ts = crate::support::TestStream::create("mirror_e2e").await;
    let t = tempfile::tempdir().expect("tempdir");
    let name = format!("event-audit/{}", db.name);
    let (private, public, _) = crate::support::witness::write_keys(t.path(), &name, 3);
    let stream = format!("{}_CP", ts.name);
    let _witness = crate::support::witness::Witness(stream.clone());
    let opts = crate::support::process::RunOpts {
        exit_when_idle: false,
        extra: daemon_args(&private, &stream, &t.path().join("tiles")),
        ..Default::default()
    };
    ts.publish_load(300, 61).await;
    let daemon = crate::support::process::Daemon::spawn(&db.url, &ts, &opts);
    let url = format!("http://{}/log", daemon.addr);
    let deadline = Instant::now() + Duration::from_secs(60);
    let size = loop {
        let text = match reqwest::get(format!("{url}/checkpoint")).await {
            Ok(r) if r.status().is_success() => r.text().await.unwrap_or_default(),
            _ => String::new(),
        };
        let n: u64 = text
            .lines()
            .nth(1)
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        if n >= 300 {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint of 300 rows served; the daemon's log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let mdir = t.path().join("mirror");
    let out = super::mirror(&url, &public, &mdir, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "{name}: mirrored at tree size {size} ({size} leaves added)"
        )),
        "the mirror holds the daemon's checkpoint of {size}: {out:?}"
    );
    let kept = std::fs::read_to_string(copy_of(&mdir, &name).join("checkpoint"))
        .expect("the mirror checkpoint");
    assert_eq!(kept.lines().nth(1), Some(size.to_string().as_str()));
    daemon.term().await;
}
