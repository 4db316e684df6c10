//! The log's tiles in an S3 bucket (`run --tiles-url s3://bucket/prefix`), written by the daemon
//! (a real process, real PostgreSQL and NATS) to s3s-fs (SigV4 checked) and moto: an existing
//! log backfilled there, every object with the `Cache-Control` `/log/` sends, `/log/` serving
//! from the bucket and Go's x/mod tlog reading the log through it (neither test server answers
//! an unsigned GET, so Go reads through the daemon's signed client; a bucket served directly
//! is the operator's choice, docs/object-store.md); a SIGKILL between the tiles and the
//! checkpoint (the tiles there, the old checkpoint served, the next run resuming); and a full
//! tile holding other bytes refused by the conditional put, kept as it was. With
//! `witness.tiles_lock_for`, full tiles and bundles are put under Object Lock (moto), partial
//! ones and the checkpoint not.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use event_audit::test_support::blobs::{Mode, Put};
use event_audit::tlog::note::{self, Checkpoint, PublicKey};
use event_audit::tlog::tile::{tiles_between, Kind, TileId};

use crate::support::process::{run_until_idle, Daemon, RunOpts};
use crate::support::s3::{Server, TestBucket};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use crate::tiles_interop::go;

const TILE_CACHE: &str = "public, max-age=604800, immutable";
const CHECKPOINT_CACHE: &str = "public, max-age=2";

struct Setup {
    db: TestDb,
    ts: TestStream,
    _witness: Witness,
    /// Holds the keys and the settings file.
    _tmp: tempfile::TempDir,
    key: PathBuf,
    public_file: PathBuf,
    public: PublicKey,
    cps: String,
    bucket: TestBucket,
    config: PathBuf,
}

async fn setup(tag: &str, server: Server) -> Setup {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public_file, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 3);
    let text = std::fs::read_to_string(&public_file).expect("pub");
    let cps = format!("{}_CP", ts.name);
    let bucket = TestBucket::new(server, false).await;
    let config = bucket.config_file(tmp.path());
    Setup {
        db,
        ts,
        _witness: Witness(cps.clone()),
        public: PublicKey::parse(text.trim()).expect("public key"),
        public_file,
        _tmp: tmp,
        key,
        cps,
        bucket,
        config,
    }
}

impl Setup {
    fn opts(&self, tiles: bool) -> RunOpts {
        let mut extra = signing_args(&self.key, &self.cps);
        if tiles {
            extra.extend([
                "--tiles-url".to_owned(),
                self.bucket.url(),
                "--config".to_owned(),
                self.config.display().to_string(),
            ]);
        }
        RunOpts {
            extra,
            ..RunOpts::default()
        }
    }

    async fn run(&self, tiles: bool) -> Daemon {
        run_until_idle(&self.db.url, &self.ts, &self.opts(tiles)).await
    }

    /// An object of the log in the bucket.
    async fn object(&self, rel: &str) -> Option<Vec<u8>> {
        let got = self.bucket.store.get(rel, 1 << 20).await.expect("get");
        got.map(|b| b.to_vec())
    }

    /// The checkpoint the bucket serves.
    async fn served(&self) -> Option<Checkpoint> {
        let text = String::from_utf8(self.object("checkpoint").await?).expect("utf-8");
        Some(note::open(&text, &self.public).expect("opens with the log's key"))
    }

    /// Waits until the bucket serves a checkpoint of `size`.
    async fn wait_served(&self, size: u64, d: &Daemon) {
        let started = Instant::now();
        while self.served().await.is_none_or(|c| c.size < size) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no checkpoint of {size} in the bucket; log:\n{}",
                d.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn done(self) {
        self.bucket.name_every_key().await;
        self.bucket.remove().await.expect("remove the bucket");
    }
}

/// Backfilled into the bucket, served from it at /log/, and read by Go's x/mod tlog.
async fn backfilled_served_and_read_by_go(server: Server, tag: &str) {
    let s = setup(tag, server).await;
    s.ts.publish_load(700, 61).await;
    s.run(false).await;
    s.ts.publish_load(600, 62).await;
    let d = Daemon::spawn(
        &s.db.url,
        &s.ts,
        &RunOpts {
            exit_when_idle: false,
            ..s.opts(true)
        },
    );
    s.wait_served(1300, &d).await;
    // Every tile and bundle of the tree is there, with the cache headers /log/ sends.
    for id in tiles_between(0, 1300) {
        let head = s.bucket.store.head(&id.path()).await.expect("head");
        let head = head.unwrap_or_else(|| panic!("{} is in the bucket", id.path()));
        assert_eq!(head.cache_control.as_deref(), Some(TILE_CACHE));
    }
    let head = s.bucket.store.head("checkpoint").await.expect("head");
    assert_eq!(
        head.expect("checkpoint").cache_control.as_deref(),
        Some(CHECKPOINT_CACHE)
    );
    // The daemon's /log/ serves the bucket; Go reads every tile through it.
    let url = format!("http://{}/log", d.addr);
    let r = reqwest::get(format!("{url}/tile/0/000"))
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some(TILE_CACHE)
    );
    let summary = go::check(&url, &s.public_file, None).await.summary();
    assert_eq!(summary["size"], 1300, "{summary}");
    assert_eq!(summary["root_ok"], true, "{summary}");
    assert_eq!(summary["bundles_read"], 6, "{summary}");
    drop(d);
    s.done().await;
}

#[tokio::test]
async fn tiles_backfilled_into_s3s_fs_are_served_and_read_by_go() {
    backfilled_served_and_read_by_go(Server::S3sFs, "s3tiles").await;
}

#[tokio::test]
async fn tiles_backfilled_into_moto_are_served_and_read_by_go() {
    backfilled_served_and_read_by_go(Server::Moto, "s3tilesm").await;
}

#[tokio::test]
async fn a_crash_between_the_tiles_and_the_checkpoint_in_a_bucket_resumes() {
    let s = setup("s3crash", Server::S3sFs).await;
    s.ts.publish_load(700, 63).await;
    s.run(true).await;
    assert_eq!(s.served().await.expect("checkpoint").size, 700);
    s.ts.publish_load(600, 64).await;
    let opts = RunOpts {
        exit_when_idle: false,
        env: vec![("EVENT_AUDIT_DEV_TILES_PAUSE_MS".into(), "120000".into())],
        ..s.opts(true)
    };
    let mut d = Daemon::spawn(&s.db.url, &s.ts, &opts);
    let started = Instant::now();
    while !d.log().contains("pausing before the checkpoint") {
        assert!(started.elapsed() < Duration::from_secs(60), "{}", d.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let new_tile = TileId::parse("tile/0/005.p/20").expect("id");
    assert!(
        s.object(&new_tile.path()).await.is_some(),
        "the tiles are written"
    );
    assert_eq!(
        s.served().await.expect("checkpoint").size,
        700,
        "the old checkpoint"
    );
    let r = reqwest::get(format!("http://{}/log/{}", d.addr, new_tile.path()))
        .await
        .expect("GET");
    assert_eq!(
        r.status(),
        404,
        "a tile past the served checkpoint is not served"
    );
    d.kill9().await;
    let full: Vec<(String, Vec<u8>)> = {
        let mut v = Vec::new();
        for id in tiles_between(0, 1280).filter(TileId::is_full) {
            v.push((id.path(), s.object(&id.path()).await.expect("a full tile")));
        }
        v
    };
    // Restarted, it finishes from what the bucket holds; the full tiles stay as written.
    s.run(true).await;
    assert_eq!(s.served().await.expect("checkpoint").size, 1300);
    for (path, bytes) in full {
        assert_eq!(s.object(&path).await.as_ref(), Some(&bytes), "{path}");
    }
    for id in tiles_between(0, 1300) {
        assert!(s.object(&id.path()).await.is_some(), "{}", id.path());
    }
    let bundles = tiles_between(0, 1300)
        .filter(|t| t.kind == Kind::Entries)
        .count();
    assert_eq!(bundles, 6);
    s.done().await;
}

#[tokio::test]
async fn a_full_tile_in_a_bucket_is_never_rewritten_with_other_bytes() {
    let s = setup("s3rewrite", Server::S3sFs).await;
    s.ts.publish_load(700, 65).await;
    s.run(true).await;
    // Another log's tile in the bucket, and no checkpoint: the writer starts from 0, and its
    // conditional put of that tile is refused.
    let tile = "tile/0/001";
    let mut bytes = s.object(tile).await.expect("tile");
    bytes[100] ^= 1;
    let replace = Put {
        mode: Mode::Replace,
        ..Put::default()
    };
    let other = Bytes::from(bytes.clone());
    s.bucket
        .store
        .put(tile, other, &replace)
        .await
        .expect("replace");
    s.bucket.store.delete("checkpoint").await.expect("delete");
    let d = s.run(true).await;
    assert!(
        d.log().contains("a full tile is never rewritten"),
        "{}",
        d.log()
    );
    assert!(d.log().contains("were not written"), "{}", d.log());
    assert_eq!(
        s.object(tile).await,
        Some(bytes),
        "the tile is kept as it was"
    );
    assert!(
        s.object("checkpoint").await.is_none(),
        "no checkpoint over a tile that is not the tree's"
    );
    s.done().await;
}

#[tokio::test]
async fn full_tiles_are_locked_where_the_bucket_keeps_object_lock() {
    use crate::tiles_interop::logs;
    use event_audit::test_support::blobs::{BlobError, Store};
    use event_audit::test_support::log::tiles::Tiles;
    let bucket = TestBucket::new(Server::Moto, true).await;
    let store = Store::open(&bucket.location, &bucket.settings.object_store).expect("open");
    let tiles = Tiles::new(store).with_lock(Some(Duration::from_secs(8)));
    logs::extend(&tiles, 0, &logs::entries(300)).await;
    let full = bucket
        .store
        .head("tile/0/000")
        .await
        .expect("head")
        .expect("there");
    let until = full.lock_until.expect("a full tile is locked");
    let bundle = bucket.store.head("tile/entries/000").await.expect("head");
    assert!(
        bundle.expect("there").lock_until.is_some(),
        "a full bundle too"
    );
    let partial = bucket.store.head("tile/0/001.p/44").await.expect("head");
    assert_eq!(
        partial.expect("there").lock_until,
        None,
        "a partial tile is not"
    );
    let cp = bucket.store.head("checkpoint").await.expect("head");
    assert_eq!(cp.expect("there").lock_until, None, "nor the checkpoint");
    let e = bucket.store.delete("tile/0/000").await.expect_err("locked");
    assert!(matches!(e, BlobError::Locked { .. }), "{e}");
    let wait = (until - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_secs(1)).await;
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}
