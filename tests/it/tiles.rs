//! The log as C2SP tlog-tiles, written and served by the daemon (a real process, real
//! PostgreSQL and NATS): every tile and bundle of the checkpoint's tree and nothing else, the
//! entries the database's row hashes, full tiles byte-identical as the log grows, the old
//! checkpoint's root read back from the new tiles, caching and CORS headers and 404s over HTTP,
//! an existing log backfilled and a backfill resumed, a SIGKILL between the tiles and the
//! checkpoint, and a full tile never rewritten with other bytes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use event_audit::tlog::note::{self, Checkpoint, PublicKey};
use event_audit::tlog::tile::build::TileBuilder;
use event_audit::tlog::tile::read::TileReader;
use event_audit::tlog::tile::{parse_bundle, parse_hashes, tiles_between, Kind, TileId};

use crate::support::process::{run_until_idle, Daemon, RunOpts};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{count_rows, TestDb, TestStream};

/// Every file under `dir` (relative path → bytes), hidden ones (temporary files, the
/// backfill's mark) left out.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    crate::support::files::files(dir)
        .into_iter()
        .filter(|(path, _)| !path.split('/').any(|part| part.starts_with('.')))
        .collect()
}

fn public_key(path: &Path) -> PublicKey {
    PublicKey::parse(std::fs::read_to_string(path).expect("pub").trim()).expect("public key")
}

fn served(dir: &Path, key: &PublicKey) -> Option<Checkpoint> {
    let text = std::fs::read_to_string(dir.join("checkpoint")).ok()?;
    Some(note::open(&text, key).expect("the served checkpoint opens with the log's key"))
}

/// Checks the directory is exactly the log of its checkpoint: every tile and bundle of the
/// tree, rebuilt from the bundles' entries byte for byte, with the checkpoint's root; returns
/// the entries.
fn check_log(dir: &Path, key: &PublicKey) -> (Checkpoint, Vec<Vec<u8>>) {
    let cp = served(dir, key).expect("a checkpoint is served");
    let on_disk = files(dir);
    let mut want: Vec<String> = tiles_between(0, cp.size).map(|t| t.path()).collect();
    want.push("checkpoint".into());
    want.sort();
    // Besides the tree's tiles, only the partial tiles of earlier checkpoints (kept: C2SP lets
    // a log delete them once the full tile is there, and clients of old sizes may ask).
    let older: Vec<TileId> = on_disk
        .keys()
        .filter(|p| !want.contains(p))
        .map(|p| TileId::parse(p).unwrap_or_else(|_| panic!("{p} is not a tile")))
        .collect();
    for id in &older {
        assert!(
            !id.is_full() && id.within(cp.size),
            "{} is outside the tree",
            id.path()
        );
    }
    let names: Vec<String> = on_disk
        .keys()
        .filter(|p| want.contains(p))
        .cloned()
        .collect();
    assert_eq!(names, want, "the directory holds the tree's tiles");
    let mut entries = Vec::new();
    for id in tiles_between(0, cp.size).filter(|t| t.kind == Kind::Entries) {
        let bytes = &on_disk[&id.path()];
        entries.extend(
            parse_bundle(&id, bytes)
                .expect("bundle")
                .iter()
                .map(|e| e.to_vec()),
        );
    }
    let mut b = TileBuilder::new();
    let mut rebuilt = HashMap::new();
    for e in &entries {
        assert_eq!(e.len(), 32, "an entry is a row hash");
        b.push(e).expect("push");
        rebuilt.extend(b.take_full());
    }
    rebuilt.extend(b.partials());
    assert_eq!(b.root(), cp.root, "the entries make the checkpoint's root");
    for (id, bytes) in &rebuilt {
        assert_eq!(
            &on_disk[&id.path()],
            bytes,
            "{} as rebuilt from the entries",
            id.path()
        );
    }
    for id in &older {
        let wider = rebuilt
            .iter()
            .find(|(w, _)| w.kind == id.kind && w.index == id.index)
            .map(|(_, b)| b)
            .expect("a wider tile at the same place");
        let old = &on_disk[&id.path()];
        assert_eq!(
            &wider[..old.len()],
            &old[..],
            "{} is a prefix of its wider tile",
            id.path()
        );
    }
    (cp, entries)
}

async fn row_hashes(pool: &sqlx::PgPool) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = sqlx::query_scalar("SELECT row_hash FROM audit.events")
        .fetch_all(pool)
        .await
        .expect("row hashes");
    v.sort();
    v
}

struct Setup {
    db: TestDb,
    ts: TestStream,
    _witness: Witness,
    tmp: tempfile::TempDir,
    key: PathBuf,
    public: PublicKey,
    cps: String,
}

async fn setup(tag: &str) -> Setup {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 3);
    let cps = format!("{}_CP", ts.name);
    Setup {
        db,
        ts,
        _witness: Witness(cps.clone()),
        public: public_key(&public),
        tmp,
        key,
        cps,
    }
}

impl Setup {
    fn opts(&self, tiles: Option<&Path>) -> RunOpts {
        let mut extra = signing_args(&self.key, &self.cps);
        if let Some(t) = tiles {
            extra.extend(["--tiles-dir".to_owned(), t.display().to_string()]);
        }
        RunOpts {
            extra,
            ..RunOpts::default()
        }
    }

    async fn run(&self, tiles: Option<&Path>) -> Daemon {
        run_until_idle(&self.db.url, &self.ts, &self.opts(tiles)).await
    }
}

async fn get(url: &str) -> reqwest::Response {
    reqwest::get(url).await.expect("GET")
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn max_age(cache: &str) -> u64 {
    cache
        .split(',')
        .find_map(|p| p.trim().strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .expect("a max-age")
}

/// Waits until the directory serves a checkpoint of `size`.
async fn wait_served(dir: &Path, key: &PublicKey, size: u64, d: &Daemon) {
    let started = Instant::now();
    while served(dir, key).is_none_or(|c| c.size < size) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no checkpoint of {size} served; log:\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_daemon_writes_and_serves_its_log_as_tiles() {
    let s = setup("tiles").await;
    let dir = s.tmp.path().join("tiles");
    s.ts.publish_load(700, 11).await;
    s.run(Some(&dir)).await;
    let (cp, entries) = check_log(&dir, &s.public);
    assert_eq!(cp.size as i64, count_rows(&s.db.pool).await);
    let mut sorted = entries.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        row_hashes(&s.db.pool).await,
        "the entries are the rows' hashes"
    );
    let before = files(&dir);

    // More events, served by a running daemon.
    s.ts.publish_load(600, 12).await;
    let opts = RunOpts {
        exit_when_idle: false,
        ..s.opts(Some(&dir))
    };
    let d = Daemon::spawn(&s.db.url, &s.ts, &opts);
    wait_served(&dir, &s.public, 1300, &d).await;
    let (new, _) = check_log(&dir, &s.public);
    for (path, bytes) in &before {
        let id = TileId::parse(path);
        if id.is_ok_and(|id| id.is_full()) {
            assert_eq!(&files(&dir)[path], bytes, "{path} changed as the log grew");
        }
    }
    // The old checkpoint's root, read back from the new tiles: the new tree extends it.
    let mut hashes = HashMap::new();
    for id in tiles_between(0, new.size).filter(|t| t.kind != Kind::Entries) {
        let bytes = std::fs::read(dir.join(id.path())).expect("tile");
        hashes.insert(id, parse_hashes(&id, &bytes).expect("hashes"));
    }
    assert_eq!(
        TileReader::new(new.size, &hashes)
            .root(cp.size)
            .expect("root"),
        cp.root
    );

    let base = format!("http://{}/log", d.addr);
    let r = get(&format!("{base}/checkpoint")).await;
    assert_eq!(r.status(), 200);
    assert!(max_age(header(&r, "cache-control")) <= 5);
    assert_eq!(header(&r, "access-control-allow-origin"), "*");
    assert!(header(&r, "content-type").starts_with("text/plain"));
    let body = r.text().await.expect("body");
    assert_eq!(note::open(&body, &s.public).expect("opens").size, new.size);
    for path in [
        "tile/0/000",
        "tile/entries/005.p/20",
        "tile/0/005.p/20",
        "tile/1/000.p/5",
    ] {
        let r = get(&format!("{base}/{path}")).await;
        assert_eq!(r.status(), 200, "{path}");
        let cache = header(&r, "cache-control").to_owned();
        assert!(
            cache.contains("immutable") && max_age(&cache) >= 86_400,
            "{path}: {cache}"
        );
        assert_eq!(header(&r, "access-control-allow-origin"), "*");
        assert_eq!(header(&r, "content-type"), "application/octet-stream");
        assert_eq!(
            r.bytes().await.expect("body").as_ref(),
            &files(&dir)[path][..]
        );
    }
    // Outside the tree, empty, not a tile, or not the one spelling: 404.
    for path in [
        "tile/0/005",
        "tile/0/006.p/1",
        "tile/0/005.p/21",
        "tile/1/001.p/1",
        "tile/0/000.p/0",
        "tile/2/000.p/1",
        "tile/0/0",
        ".event-audit-tiles-progress",
        "tile/entries/x000/005.p/20",
    ] {
        let r = get(&format!("{base}/{path}")).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(header(&r, "access-control-allow-origin"), "*");
    }
    // A browser's CORS preflight: answered, with what may be asked.
    let r = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}/tile/0/000"))
        .header("origin", "https://auditor.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .expect("OPTIONS");
    assert_eq!(r.status(), 204);
    assert_eq!(header(&r, "access-control-allow-origin"), "*");
    assert!(header(&r, "access-control-allow-methods").contains("GET"));
    assert_eq!(header(&r, "access-control-allow-headers"), "*");
    // A dot segment sent as it is (an HTTP client would remove it before sending).
    let raw = raw_get(&d.addr, "/log/tile/../checkpoint").await;
    assert!(raw.starts_with("HTTP/1.1 404"), "{raw}");
    d.term().await;
}

/// One GET over a plain TCP connection, the path sent byte for byte; the answer's text.
async fn raw_get(addr: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    c.write_all(req.as_bytes()).await.expect("send");
    let mut out = String::new();
    c.read_to_string(&mut out).await.expect("read");
    out
}

#[tokio::test]
async fn an_existing_log_gets_its_tiles_and_a_backfill_resumes() {
    let s = setup("tiles_backfill").await;
    s.ts.publish_load(1300, 21).await;
    s.run(None).await;
    let a = s.tmp.path().join("a");
    assert!(!a.exists());
    s.run(Some(&a)).await;
    let (cp, _) = check_log(&a, &s.public);
    assert_eq!(cp.size, 1300, "the first round wrote the log's tiles");

    // A backfill stopped after two full tiles: its mark, the full tiles below it, nothing else.
    let b = s.tmp.path().join("b");
    for (path, bytes) in files(&a) {
        let keep =
            TileId::parse(&path).is_ok_and(|id| id.is_full() && id.level() == 0 && id.index < 2);
        if keep {
            let p = b.join(&path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, bytes).expect("write");
        }
    }
    std::fs::write(b.join(".event-audit-tiles-progress"), "512").expect("mark");
    let d = s.run(Some(&b)).await;
    assert!(d.log().contains("resuming the backfill"), "{}", d.log());
    assert_eq!(
        files(&b),
        files(&a),
        "the resumed backfill wrote the same log"
    );
}

#[tokio::test]
async fn a_checkpoint_is_never_served_without_its_tiles() {
    let s = setup("tiles_crash").await;
    let dir = s.tmp.path().join("tiles");
    s.ts.publish_load(700, 31).await;
    s.run(Some(&dir)).await;
    s.ts.publish_load(600, 32).await;
    let opts = RunOpts {
        exit_when_idle: false,
        env: vec![("EVENT_AUDIT_DEV_TILES_PAUSE_MS".into(), "120000".into())],
        ..s.opts(Some(&dir))
    };
    let mut d = Daemon::spawn(&s.db.url, &s.ts, &opts);
    let started = Instant::now();
    // The tiles of 1,300 are written; the daemon waits before the checkpoint.
    while !d.log().contains("pausing before the checkpoint") {
        assert!(started.elapsed() < Duration::from_secs(60), "{}", d.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        dir.join("tile/0/005.p/20").exists(),
        "the new tiles are written"
    );
    let r = get(&format!("http://{}/log/tile/0/005.p/20", d.addr)).await;
    assert_eq!(
        r.status(),
        404,
        "a tile past the served checkpoint is not served"
    );
    let r = get(&format!("http://{}/log/checkpoint", d.addr)).await;
    let body = r.text().await.expect("body");
    assert_eq!(note::open(&body, &s.public).expect("opens").size, 700);
    d.kill9().await;

    // What is on disk: the old checkpoint, with every one of its tiles.
    let cp = served(&dir, &s.public).expect("checkpoint");
    assert_eq!(cp.size, 700);
    let mut hashes = HashMap::new();
    for id in tiles_between(0, 700).filter(|t| t.kind != Kind::Entries) {
        let bytes = std::fs::read(dir.join(id.path())).expect("every tile of the served tree");
        hashes.insert(id, parse_hashes(&id, &bytes).expect("hashes"));
    }
    assert_eq!(
        TileReader::new(700, &hashes).root(700).expect("root"),
        cp.root
    );
    let killed = files(&dir);

    // Restarted, it finishes: the checkpoint of 1,300, the full tiles as they were written.
    s.run(Some(&dir)).await;
    let (cp, _) = check_log(&dir, &s.public);
    assert_eq!(cp.size, 1300);
    for (path, bytes) in killed {
        if TileId::parse(&path).is_ok_and(|id| id.is_full()) {
            assert_eq!(files(&dir)[&path], bytes, "{path}");
        }
    }
}

#[tokio::test]
async fn a_full_tile_is_never_rewritten_with_other_bytes() {
    let s = setup("tiles_rewrite").await;
    let dir = s.tmp.path().join("tiles");
    s.ts.publish_load(700, 41).await;
    s.run(Some(&dir)).await;
    // Another log's tile in the directory, and no checkpoint: the writer starts from 0.
    let tile = dir.join("tile/0/001");
    let mut bytes = std::fs::read(&tile).expect("tile");
    bytes[100] ^= 1;
    std::fs::write(&tile, &bytes).expect("write");
    std::fs::remove_file(dir.join("checkpoint")).expect("rm checkpoint");
    let d = s.run(Some(&dir)).await;
    assert!(
        d.log().contains("a full tile is never rewritten"),
        "{}",
        d.log()
    );
    assert_eq!(
        std::fs::read(&tile).expect("tile"),
        bytes,
        "the tile is kept as it was"
    );
    assert!(
        !dir.join("checkpoint").exists(),
        "no checkpoint over a tile that is not the tree's"
    );
    let metrics = d.log();
    assert!(
        metrics.contains("were not written"),
        "the failure is logged"
    );
}

#[tokio::test]
async fn tiles_lost_under_the_served_checkpoint_are_named_and_nothing_is_served_over_them() {
    let s = setup("tiles_damaged").await;
    let dir = s.tmp.path().join("tiles");
    s.ts.publish_load(700, 51).await;
    s.run(Some(&dir)).await;
    // What a power loss can leave: the checkpoint on disk, its partial tile's data not.
    let partial = dir.join("tile/0/002.p/188");
    std::fs::write(&partial, b"").expect("truncate");
    s.ts.publish_load(100, 52).await;
    let d = s.run(Some(&dir)).await;
    assert!(
        d.log().contains("do not make that checkpoint's root") || d.log().contains("bytes, but"),
        "{}",
        d.log()
    );
    assert_eq!(
        served(&dir, &s.public).expect("checkpoint").size,
        700,
        "not advanced over damaged tiles"
    );
    // Moved away, the next round writes the log's tiles again.
    std::fs::rename(&dir, s.tmp.path().join("damaged")).expect("move");
    s.run(Some(&dir)).await;
    let (cp, _) = check_log(&dir, &s.public);
    assert_eq!(cp.size, 800);
}
