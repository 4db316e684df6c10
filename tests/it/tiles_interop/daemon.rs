//! Go's check of the daemon's own log: `event-audit run --tiles-dir` (a real process, real
//! PostgreSQL and NATS) served at `GET /log/...`, checked over HTTP at one checkpoint and again
//! after more events, the old checkpoint proved consistent with the new through the served
//! tiles and every full tile served byte-identical before and after; the read path's caching
//! and CORS headers and its 404s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use event_audit::tlog::note::{self, PublicKey};
use event_audit::tlog::tile::{tiles_between, TileId};

use super::go;
use crate::support::process::{Daemon, RunOpts};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{TestDb, TestStream};

/// GETs a URL: (status, headers, body).
async fn get(url: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    try_get(url)
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
}

async fn try_get(url: &str) -> reqwest::Result<(u16, reqwest::header::HeaderMap, Vec<u8>)> {
    let r = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await?;
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    Ok((status, headers, r.bytes().await?.to_vec()))
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// The `max-age` of a Cache-Control value.
fn max_age(cache: &str) -> u64 {
    cache
        .split(',')
        .find_map(|p| p.trim().strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no max-age in {cache:?}"))
}

/// Waits until the daemon serves a checkpoint of `size` leaves; returns its text.
async fn wait_for_checkpoint(base: &str, key: &PublicKey, size: u64, d: &Daemon) -> String {
    let started = Instant::now();
    loop {
        // The daemon may not listen yet: a refused connection is waited out like a 404.
        if let Ok((200, _, body)) = try_get(&format!("{base}/checkpoint")).await {
            let text = String::from_utf8(body).expect("a UTF-8 checkpoint");
            let cp = note::open(&text, key).expect("the checkpoint opens with the log's key");
            if cp.size >= size {
                assert_eq!(cp.size, size, "more leaves than events published");
                return text;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no checkpoint of {size} served at {base}; the daemon's log:\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every full tile and bundle of a tree of `size` leaves, as served.
async fn full_tiles(base: &str, size: u64) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for id in tiles_between(0, size).filter(TileId::is_full) {
        let (status, _, body) = get(&format!("{base}/{}", id.path())).await;
        assert_eq!(status, 200, "{}", id.path());
        out.insert(id.path(), body);
    }
    out
}

/// The read path's headers: tiles immutable and cached for a day or more, the checkpoint for a
/// few seconds, CORS open; 404 beyond the tree and for an empty partial tile.
async fn assert_headers(base: &str) {
    let (status, h, _) = get(&format!("{base}/tile/0/000")).await;
    assert_eq!(status, 200);
    let cache = header(&h, "cache-control");
    assert!(
        cache.contains("immutable") && max_age(cache) >= 86_400,
        "a full tile: {cache}"
    );
    assert_eq!(header(&h, "access-control-allow-origin"), "*");
    let (status, h, _) = get(&format!("{base}/checkpoint")).await;
    assert_eq!(status, 200);
    assert!(
        max_age(header(&h, "cache-control")) <= 5,
        "the checkpoint: {h:?}"
    );
    assert_eq!(header(&h, "access-control-allow-origin"), "*");
    for beyond in [
        "tile/0/005",
        "tile/0/009",
        "tile/entries/006",
        "tile/0/000.p/0",
    ] {
        let (status, _, _) = get(&format!("{base}/{beyond}")).await;
        assert_eq!(status, 404, "{beyond}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn go_checks_the_daemons_log_over_http_across_two_checkpoints() {
    let db = TestDb::create().await;
    let ts = TestStream::create("tiles_interop").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 5);
    let log_key = PublicKey::parse(std::fs::read_to_string(&public).expect("pub").trim())
        .expect("the log's key");
    let cps = format!("{}_CP", ts.name);
    let _witness = Witness(cps.clone());
    let mut extra = signing_args(&key, &cps);
    extra.extend([
        "--tiles-dir".into(),
        tmp.path().join("tiles").display().to_string(),
    ]);
    let opts = RunOpts {
        exit_when_idle: false,
        extra,
        ..RunOpts::default()
    };
    ts.publish_load(700, 51).await;
    let d = Daemon::spawn(&db.url, &ts, &opts);
    let base = format!("http://{}/log", d.addr);

    let first = wait_for_checkpoint(&base, &log_key, 700, &d).await;
    let s = go::check(&base, &public, None).await.summary();
    assert_eq!(
        (s["size"].as_u64(), &s["root_ok"]),
        (Some(700), &true.into()),
        "{s}"
    );
    assert_eq!(s["tiles_compared"], 4, "{s}");
    let old = tmp.path().join("old.checkpoint");
    std::fs::write(&old, &first).expect("keep the first checkpoint");
    let before = full_tiles(&base, 700).await;
    assert_eq!(before.len(), 4, "two full tiles, two full bundles");

    ts.publish_load(600, 52).await;
    wait_for_checkpoint(&base, &log_key, 1300, &d).await;
    let s = go::check(&base, &public, Some(&old)).await.summary();
    assert_eq!(s["size"], 1300, "{s}");
    assert_eq!(
        (s["old_size"].as_u64(), &s["old_consistent"]),
        (Some(700), &true.into()),
        "{s}"
    );
    let after = full_tiles(&base, 1300).await;
    for (path, bytes) in &before {
        assert!(
            after.get(path) == Some(bytes),
            "{path} changed as the log grew"
        );
    }
    assert_headers(&base).await;
    check_dir_too(&tmp.path().join("tiles"), &public).await;
    d.term().await;
}

/// The directory the daemon wrote passes the same check read as files.
async fn check_dir_too(dir: &Path, public: &Path) {
    let s = go::check(dir.to_str().expect("utf-8"), public, None)
        .await
        .summary();
    assert_eq!(s["size"], 1300, "{s}");
}
