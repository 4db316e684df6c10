//! The object store as it is in the field (issue 47): a store that ignores `If-None-Match: *`
//! (moto behind a proxy that drops the header, as Garage does) refused by the probe before the
//! first write, or used with `object_store.conditional_writes = "read-first"`, where other bytes
//! at a key are still never replaced; the daemon's repair pass writing a deleted tile again from
//! the database and naming (never overwriting) other bytes at a published one; and `tiles fsck`
//! over a whole copy, a copy with a tile missing and one with a changed bundle, in a directory,
//! a bucket and the daemon's `/log/`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use event_audit::config::ConditionalWrites;
use event_audit::test_support::blobs::{BlobError, Mode, Proof, Put, Store, Wrote};
use event_audit::test_support::log::tiles::Tiles;

use crate::support::cli::event_audit;
use crate::support::process::{run_until_idle, Daemon, RunOpts};
use crate::support::proxy::DroppingProxy;
use crate::support::s3::{Server, TestBucket};
use crate::support::witness::{signing_args, write_keys, Witness};
use crate::support::{TestDb, TestStream};
use crate::tiles_interop::logs;

fn create() -> Put<'static> {
    Put {
        mode: Mode::Create,
        ..Put::default()
    }
}

#[tokio::test]
async fn a_store_that_ignores_conditional_creates_is_refused_or_read_first() {
    let bucket = TestBucket::new(Server::Moto, false).await;
    let proxy = DroppingProxy::start(&Server::Moto.endpoint(), "if-none-match").await;
    assert_eq!(
        bucket.store.prove("tiles").await.expect("probe moto"),
        Proof::Honoured,
        "moto itself refuses a second create"
    );
    let mut s = bucket.settings.clone();
    s.object_store.endpoint = Some(proxy.endpoint.clone());
    let ignoring = Store::open(&bucket.location, &s.object_store).expect("open");
    // Through the proxy a create replaces other bytes: what the probe is for.
    let k1 = bucket.key("k1");
    let (a, b) = (Bytes::from_static(b"first"), Bytes::from_static(b"other"));
    assert_eq!(
        ignoring.put(&k1, a.clone(), &create()).await.expect("put"),
        Wrote::New
    );
    assert_eq!(
        ignoring.put(&k1, b.clone(), &create()).await.expect("put"),
        Wrote::New
    );
    assert_eq!(ignoring.get(&k1, 64).await.expect("get"), Some(b.clone()));
    assert!(proxy.dropped() >= 2, "the proxy dropped the header");
    let e = ignoring.prove("tiles").await.expect_err("refused");
    let line = e.to_string();
    assert!(
        line.contains("If-None-Match")
            && line.contains("object_store.conditional_writes = \"read-first\"")
            && line.contains(&bucket.name()),
        "{line}"
    );
    s.object_store.conditional_writes = ConditionalWrites::ReadFirst;
    let reading = Store::open(&bucket.location, &s.object_store).expect("open");
    assert_eq!(
        reading.prove("tiles").await.expect("probe"),
        Proof::ReadFirst
    );
    let k2 = bucket.key("k2");
    assert_eq!(
        reading.put(&k2, a.clone(), &create()).await.expect("put"),
        Wrote::New
    );
    let e = reading
        .put(&k2, b.clone(), &create())
        .await
        .expect_err("conflict");
    assert!(matches!(e, BlobError::Conflict { .. }), "{e}");
    assert_eq!(
        reading.get(&k2, 64).await.expect("get"),
        Some(a.clone()),
        "kept"
    );
    assert_eq!(
        reading.put(&k2, a, &create()).await.expect("put"),
        Wrote::Same
    );
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}

/// A log, a bucket (its endpoint direct or through a header-dropping proxy) and the daemon's
/// settings file for it.
struct Setup {
    db: TestDb,
    ts: TestStream,
    _witness: Witness,
    tmp: tempfile::TempDir,
    key: PathBuf,
    public_file: PathBuf,
    cps: String,
    bucket: TestBucket,
}

async fn setup(tag: &str, server: Server) -> Setup {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, public_file, _) = write_keys(tmp.path(), &format!("event-audit/{}", db.name), 3);
    let cps = format!("{}_CP", ts.name);
    Setup {
        db,
        ts,
        _witness: Witness(cps.clone()),
        tmp,
        key,
        public_file,
        cps,
        bucket: TestBucket::new(server, false).await,
    }
}

impl Setup {
    /// The settings file: the bucket at `endpoint`, creates as `conditional` says.
    fn config(&self, endpoint: &str, conditional: &str) -> PathBuf {
        let o = &self.bucket.settings.object_store;
        let text = format!(
            "[object_store]\nendpoint = {endpoint:?}\npath_style = true\naccess_key_id_file = {:?}\nsecret_access_key_file = {:?}\nconditional_writes = {conditional:?}\n",
            o.access_key_id_file.as_ref().expect("key id file"),
            o.secret_access_key_file.as_ref().expect("secret file"),
        );
        let path = self.tmp.path().join(format!("{conditional}.toml"));
        std::fs::write(&path, text).expect("write the settings file");
        path
    }

    fn opts(&self, config: &Path, exit_when_idle: bool) -> RunOpts {
        let mut extra = signing_args(&self.key, &self.cps);
        extra.extend([
            "--tiles-url".to_owned(),
            self.bucket.url(),
            "--config".to_owned(),
            config.display().to_string(),
        ]);
        RunOpts {
            extra,
            exit_when_idle,
            ..RunOpts::default()
        }
    }

    async fn object(&self, rel: &str) -> Option<Vec<u8>> {
        let got = self.bucket.store.get(rel, 1 << 20).await.expect("get");
        got.map(|b| b.to_vec())
    }

    async fn replace(&self, rel: &str, bytes: Vec<u8>) {
        let put = Put {
            mode: Mode::Replace,
            ..Put::default()
        };
        let put = self.bucket.store.put(rel, Bytes::from(bytes), &put).await;
        put.expect("replace");
    }

    async fn done(self) {
        self.bucket.name_every_key().await;
        self.bucket.remove().await.expect("remove the bucket");
    }
}

/// Waits until `ok` holds of the daemon's log and metrics.
async fn wait_until(d: &Daemon, what: &str, ok: impl Fn(&str, &str) -> bool) -> String {
    let started = Instant::now();
    loop {
        let metrics = crate::support::observe::get(&format!("http://{}/metrics", d.addr))
            .await
            .unwrap_or_default();
        if ok(&d.log(), &metrics) {
            return metrics;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{what}; the daemon's log:\n{}\nmetrics:\n{metrics}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn the_daemon_refuses_a_store_that_ignores_conditional_writes() {
    let s = setup("fieldrefuse", Server::Moto).await;
    let proxy = DroppingProxy::start(&Server::Moto.endpoint(), "if-none-match").await;
    s.ts.publish_load(10, 71).await;
    let config = s.config(&proxy.endpoint, "require");
    let mut d = Daemon::spawn(&s.db.url, &s.ts, &s.opts(&config, true));
    let status = d.wait(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(2), "{}", d.log());
    let log = d.log();
    assert!(
        log.contains("If-None-Match") && log.contains("conditional_writes"),
        "{log}"
    );
    assert!(s.object("checkpoint").await.is_none(), "nothing published");
    s.done().await;
}

/// Read-first on a store that ignores the condition: the signer's round never replaces other
/// bytes at the next full tile, and the repair pass writes a deleted tile again and names the
/// one holding other bytes, leaving it as it is.
#[tokio::test]
async fn read_first_never_overwrites_and_the_repair_pass_names_other_bytes() {
    let s = setup("fieldread", Server::Moto).await;
    let proxy = DroppingProxy::start(&Server::Moto.endpoint(), "if-none-match").await;
    let config = s.config(&proxy.endpoint, "read-first");
    s.ts.publish_load(700, 72).await;
    let d = run_until_idle(&s.db.url, &s.ts, &s.opts(&config, true)).await;
    assert!(
        d.log().contains("ignores conditional writes"),
        "{}",
        d.log()
    );
    let first = s.object("tile/0/000").await.expect("tile/0/000");
    s.bucket.store.delete("tile/0/000").await.expect("delete");
    let mut other = s.object("tile/0/001").await.expect("tile/0/001");
    other[7] ^= 1;
    s.replace("tile/0/001", other.clone()).await;
    let planted = vec![9u8; 256 * 32];
    s.replace("tile/0/002", planted.clone()).await;
    s.ts.publish_load(100, 73).await;
    let d = Daemon::spawn(&s.db.url, &s.ts, &s.opts(&config, false));
    let metrics = wait_until(&d, "the repair pass and the round", |log, m| {
        log.contains("a full tile is never rewritten")
            && metric(m, "event_audit_tiles_mismatched") == Some(1.0)
            && metric(m, "event_audit_tiles_repaired_total") == Some(1.0)
    })
    .await;
    assert_eq!(
        metric(&metrics, "event_audit_tiles_store_conditional_writes"),
        Some(0.0)
    );
    let log = d.log();
    assert!(
        log.contains("holds other bytes than the log's tree") && log.contains("tile/0/001"),
        "{log}"
    );
    assert!(
        log.contains("found_sha256") && log.contains("published_sha256"),
        "{log}"
    );
    assert_eq!(
        s.object("tile/0/000").await,
        Some(first),
        "written again, byte for byte"
    );
    assert_eq!(s.object("tile/0/001").await, Some(other), "kept as it was");
    assert_eq!(
        s.object("tile/0/002").await,
        Some(planted),
        "never replaced"
    );
    drop(d);
    s.done().await;
}

/// A full tile and a bundle deleted from a bucket that keeps the condition: both come back from
/// the database; `tiles fsck` then finds the bucket and the daemon's `/log/` whole.
#[tokio::test]
async fn a_tile_deleted_from_the_bucket_is_written_again() {
    let s = setup("fieldlost", Server::S3sFs).await;
    let config = s.bucket.config_file(s.tmp.path());
    s.ts.publish_load(700, 74).await;
    run_until_idle(&s.db.url, &s.ts, &s.opts(&config, true)).await;
    let tile = s.object("tile/0/001").await.expect("tile");
    let bundle = s.object("tile/entries/000").await.expect("bundle");
    s.bucket.store.delete("tile/0/001").await.expect("delete");
    s.bucket
        .store
        .delete("tile/entries/000")
        .await
        .expect("delete");
    let d = Daemon::spawn(&s.db.url, &s.ts, &s.opts(&config, false));
    let metrics = wait_until(&d, "both written again", |_, m| {
        metric(m, "event_audit_tiles_repaired_total") == Some(2.0)
    })
    .await;
    assert_eq!(metric(&metrics, "event_audit_tiles_missing"), Some(0.0));
    assert_eq!(
        metric(&metrics, "event_audit_tiles_store_conditional_writes"),
        Some(1.0)
    );
    assert_eq!(s.object("tile/0/001").await, Some(tile));
    assert_eq!(s.object("tile/entries/000").await, Some(bundle));
    assert!(
        d.log().contains("written again from the database"),
        "{}",
        d.log()
    );
    let public = s.public_file.display().to_string();
    let cfg = config.display().to_string();
    let url = s.bucket.url();
    let run = event_audit(
        &[
            "tiles",
            "fsck",
            &url,
            "--public-key",
            &public,
            "--config",
            &cfg,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("whole at tree size 700"), "{run:?}");
    let log_url = format!("http://{}/log", d.addr);
    let run = event_audit(&["tiles", "fsck", &log_url, "--public-key", &public], &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    drop(d);
    s.done().await;
}

/// 32-byte entries, as the daemon's row hashes.
fn row_hashes(n: u64) -> Vec<Vec<u8>> {
    use sha2::{Digest, Sha256};
    (0..n)
        .map(|i| Sha256::digest(i.to_be_bytes()).to_vec())
        .collect()
}

#[tokio::test]
async fn fsck_checks_a_copy_tile_by_tile() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("copy");
    let tiles = Tiles::dir(&dir);
    logs::extend(&tiles, 0, &row_hashes(70_000)).await;
    let public = logs::write_pub(tmp.path()).display().to_string();
    let at = dir.display().to_string();
    let fsck =
        || async { event_audit(&["tiles", "fsck", &at, "--public-key", &public], &[]).await };
    let run = fsck().await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("whole at tree size 70000"), "{run:?}");
    // A tile missing: named, exit 1.
    let lost = dir.join("tile/0/001");
    let kept = std::fs::read(&lost).expect("tile");
    std::fs::remove_file(&lost).expect("remove");
    let run = fsck().await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout.contains(&format!("MISSING {}", lost.display())),
        "{run:?}"
    );
    std::fs::write(&lost, kept).expect("put back");
    // A changed bundle: named as the changed one, exit 1.
    let bundle = dir.join("tile/entries/002");
    let mut b = std::fs::read(&bundle).expect("bundle");
    b[34 * 3 + 2 + 5] ^= 1;
    std::fs::write(&bundle, &b).expect("change");
    let run = fsck().await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stdout.contains(&format!("WRONG {}", bundle.display()))
            && run.stdout.contains("the bundle was changed"),
        "{run:?}"
    );
    assert!(run.stdout.contains("does not make the root"), "{run:?}");
    // Another key of the same name: exit 2, one line.
    let other = tmp.path().join("other.pub");
    let key = event_audit::tlog::note::PrivateKey::from_seed(logs::ORIGIN, &[8; 32]).expect("key");
    std::fs::write(&other, format!("{}\n", key.public().encode())).expect("write");
    let other = other.display().to_string();
    let run = event_audit(&["tiles", "fsck", &at, "--public-key", &other], &[]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.stderr.trim().lines().count(), 1, "{run:?}");
}

/// A pass stopped halfway goes on from its mark: the tree at the mark is taken from the
/// database's stored subtrees (the level-1 partial tile compared against it holds), objects
/// below the mark are left to the next pass, those after it are checked and written again.
#[tokio::test]
async fn a_pass_stopped_halfway_goes_on_from_its_mark() {
    let s = setup("fieldmark", Server::S3sFs).await;
    let config = s.bucket.config_file(s.tmp.path());
    s.ts.publish_load(700, 75).await;
    run_until_idle(&s.db.url, &s.ts, &s.opts(&config, true)).await;
    let partial = s.object("tile/0/002.p/188").await.expect("partial tile");
    s.bucket.store.delete("tile/0/000").await.expect("delete");
    s.bucket
        .store
        .delete("tile/0/002.p/188")
        .await
        .expect("delete");
    let mark = s.bucket.key(".event-audit-tiles-repair");
    s.replace(&mark, b"512".to_vec()).await;
    let d = Daemon::spawn(&s.db.url, &s.ts, &s.opts(&config, false));
    let metrics = wait_until(&d, "the pass from its mark", |log, m| {
        log.contains("repair pass done")
            && metric(m, "event_audit_tiles_repaired_total") == Some(1.0)
    })
    .await;
    assert_eq!(
        metric(&metrics, "event_audit_tiles_mismatched"),
        Some(0.0),
        "{}",
        d.log()
    );
    assert_eq!(s.object("tile/0/002.p/188").await, Some(partial));
    assert_eq!(
        s.object("tile/0/000").await,
        None,
        "below the mark: the next pass's"
    );
    assert_eq!(
        s.object(&mark).await,
        None,
        "the mark is removed at the end"
    );
    drop(d);
    s.done().await;
}
