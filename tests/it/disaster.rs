//! Honest disasters against real PostgreSQL, NATS, a witness process and the daemon: a
//! database restored from an older `pg_dump` behind the witnessed checkpoint gets its lost
//! leaves back from the daemon's tiles (in a directory or a bucket; with the tiles lost too,
//! from an auditor's mirror), records the restore, then the events the bus still holds; every sequence is recorded once,
//! the witness cosigns the next checkpoint, the auditor's state from before verifies with the
//! restore named, and the mirror from before takes the new checkpoint. Two daemons starting
//! together restore once. The account index gets the updates it lost back from the deltas
//! beside the tiles. A copy that is not the signed log is refused; rows removed with no
//! record are still a break.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use event_audit::test_support::blobs::Put;

use crate::support::app::{run_until_idle, settings};
use crate::support::cli::{event_audit, Run};
use crate::support::db::as_superuser;
use crate::support::s3::{Server, TestBucket};
use crate::support::sim::Sim;
use crate::support::witness::{verify_witness, witness_with_policy, write_keys, Witness};
use crate::support::{seq_stats, TestDb, TestStream};
use event_audit::config::{Dur, Settings, SimRates};

/// The daemon's settings: signing into `cps`, the witness `policy`, tiles in `dir/tiles`.
fn signing(db: &TestDb, ts: &TestStream, dir: &Path, cps: &str, policy: &Path) -> Settings {
    let mut s = settings(db, ts);
    s.witness.signing_key_file = Some(dir.join("log.key"));
    s.witness.signer_state = Some(dir.join("signer.state"));
    s.witness.checkpoint_stream = cps.to_owned();
    s.witness.checkpoint_interval = Dur::secs(3600);
    s.witness.witness_policy = Some(policy.to_owned());
    s.witness.tiles_dir = Some(dir.join("tiles"));
    s
}

/// An auditor's `verify --public-key --witness-policy --state-file`.
async fn audit(db: &TestDb, public: &Path, cps: &str, policy: &Path, state: &Path) -> Run {
    let (p, st) = (
        policy.to_str().expect("utf-8"),
        state.to_str().expect("utf-8"),
    );
    verify_witness(
        &db.url,
        public,
        cps,
        &["--witness-policy", p, "--state-file", st],
    )
    .await
}

/// An auditor's `mirror` of the tiles directory `from` into `dir`.
async fn mirror(from: &Path, public: &Path, dir: &Path) -> Run {
    event_audit(
        &[
            "mirror",
            "--log-url",
            from.to_str().expect("utf-8"),
            "--public-key",
            public.to_str().expect("utf-8"),
            "--dir",
            dir.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await
}

/// The setting before the disaster: 30 events signed, backed up, 20 more signed; the auditor's
/// state and mirror at 50. Returns the nightly backup.
struct Before {
    db: TestDb,
    ts: TestStream,
    tmp: tempfile::TempDir,
    cps: String,
    public: PathBuf,
    policy: PathBuf,
    nightly: Vec<u8>,
    _witness: crate::support::witness::WitnessProcess,
    _stream: Witness,
}

async fn before(tag: &str, seed: u8) -> Before {
    let db = TestDb::create().await;
    let ts = TestStream::create(tag).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, _) = write_keys(tmp.path(), &origin, seed);
    std::fs::rename(&private, tmp.path().join("log.key")).expect("key in place");
    let cps = format!("{}_CP", ts.name);
    let stream = Witness(cps.clone());
    let (witness, policy) =
        witness_with_policy(tmp.path(), "auditor.example/dr", seed + 1, &public).await;
    ts.publish_load(30, 1).await;
    run_until_idle(signing(&db, &ts, tmp.path(), &cps, &policy)).await;
    let nightly = db.backup();
    ts.publish_load(20, 2).await;
    run_until_idle(signing(&db, &ts, tmp.path(), &cps, &policy)).await;
    let state = tmp.path().join("auditor.json");
    let a = audit(&db, &public, &cps, &policy, &state).await;
    assert_eq!(a.code, Some(0), "{a:?}");
    let m = mirror(
        &tmp.path().join("tiles"),
        &public,
        &tmp.path().join("mirror"),
    )
    .await;
    assert_eq!(m.code, Some(0), "{m:?}");
    assert!(m.stdout.contains("at tree size 50"), "{m:?}");
    Before {
        db,
        ts,
        tmp,
        cps,
        public,
        policy,
        nightly,
        _witness: witness,
        _stream: stream,
    }
}

/// After the restart: every sequence once, the restore from `from` in the daemon's `log` and
/// named by the auditor's state from before. Returns the auditor's run.
async fn recorded_and_audited(b: &Before, restored: &TestDb, log: &str, from: &str) -> Run {
    assert_eq!(
        seq_stats(&restored.pool, &b.ts.name).await,
        (55, 55, Some(1), Some(55))
    );
    assert!(
        log.contains("leaves 30..49 restored from") && log.contains(from),
        "{log}"
    );
    let a = audit(
        restored,
        &b.public,
        &b.cps,
        &b.policy,
        &b.tmp.path().join("auditor.json"),
    )
    .await;
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(
        a.stderr.contains("restore 1 at") && a.stderr.contains("leaves 30..49 restored from"),
        "{a:?}"
    );
    a
}

/// As [`recorded_and_audited`], and the witness cosigned the checkpoint after the restore, and
/// the mirror from before takes it.
async fn resumed(b: &Before, restored: &TestDb, log: &str, from: &str) {
    let a = recorded_and_audited(b, restored, log, from).await;
    assert!(
        a.stderr.contains("checkpoint(s) trusted, up to size 76"),
        "the witness cosigned the checkpoint after the restore: {a:?}"
    );
    let m = mirror(
        &b.tmp.path().join("tiles"),
        &b.public,
        &b.tmp.path().join("mirror"),
    )
    .await;
    assert_eq!(m.code, Some(0), "{m:?}");
    assert!(m.stdout.contains("mirrored at tree size 76"), "{m:?}");
}

#[tokio::test]
async fn a_restored_database_resumes_the_witnessed_evidence_from_its_tiles() {
    let b = before("dr_tiles", 31).await;
    let restored = TestDb::restored(&b.nightly).await;
    b.ts.publish_load(5, 3).await;
    let s = signing(&restored, &b.ts, b.tmp.path(), &b.cps, &b.policy);
    // Two daemons start together on the restored database: one restores, once.
    let (x, y) = tokio::join!(run_until_idle(s.clone()), run_until_idle(s));
    let log = format!("{}{}", x.log, y.log);
    // The 20 restored leaves are in the `stopped` line of the daemon that restored them.
    assert!(log.contains("\"restored_leaves\":20"), "{log}");
    let tiles = b.tmp.path().join("tiles");
    resumed(&b, &restored, &log, tiles.to_str().expect("utf-8")).await;
    let restores: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit.events WHERE stream = 'event-audit.restores'",
    )
    .fetch_one(&restored.pool)
    .await
    .expect("count restores");
    assert_eq!(restores, 1);
}

#[tokio::test]
async fn with_the_tiles_lost_too_the_leaves_come_from_an_auditors_mirror() {
    let b = before("dr_mirror", 41).await;
    let restored = TestDb::restored(&b.nightly).await;
    std::fs::remove_dir_all(b.tmp.path().join("tiles")).expect("the tiles are lost");
    b.ts.publish_load(5, 4).await;
    let mut s = signing(&restored, &b.ts, b.tmp.path(), &b.cps, &b.policy);
    let copy = b.tmp.path().join("mirror");
    s.witness.restore_from = vec![copy.display().to_string()];
    let log = run_until_idle(s).await.log;
    resumed(&b, &restored, &log, copy.to_str().expect("utf-8")).await;
}

/// Every file of the tiles directory `dir` put into `bucket` at the same key.
async fn upload(dir: &Path, bucket: &TestBucket) -> usize {
    let (mut todo, mut n) = (vec![dir.to_owned()], 0);
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read the tiles").flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
                continue;
            }
            let rel = path.strip_prefix(dir).expect("under the tiles");
            let key = bucket.key(rel.to_str().expect("utf-8"));
            let bytes = Bytes::from(std::fs::read(&path).expect("a tile"));
            bucket
                .store
                .put(&key, bytes, &Put::default())
                .await
                .expect("put the tile");
            n += 1;
        }
    }
    n
}

/// The daemon's tiles in a bucket (`--tiles-url`): a database restored from the backup gets its
/// lost leaves back from the bucket, read with the object store's signed client at start-up
/// (the bucket answers no unsigned read), and the auditor's state from before verifies.
#[tokio::test]
async fn a_restored_database_resumes_from_its_tiles_in_a_bucket() {
    let b = before("dr_bucket", 61).await;
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let tiles = b.tmp.path().join("tiles");
    assert!(
        upload(&tiles, &bucket).await > 2,
        "the tiles and the checkpoint"
    );
    std::fs::remove_dir_all(&tiles).expect("the directory is not the copy");
    let restored = TestDb::restored(&b.nightly).await;
    // By hand first, dry: `restore-leaves --from s3://...` with the settings file's store.
    let config = bucket.config_file(b.tmp.path());
    let (url, from) = (bucket.url(), config.display().to_string());
    let key = b.tmp.path().join("log.key").display().to_string();
    let d = event_audit(
        &[
            "restore-leaves",
            "--database-url",
            &restored.url,
            "--config",
            &from,
            "--from",
            &url,
            "--signing-key-file",
            &key,
            "--dry-run",
        ],
        &[],
    )
    .await;
    assert_eq!(d.code, Some(0), "{d:?}");
    assert!(
        d.stdout
            .contains("leaves 30..49 would be restored from s3://"),
        "{d:?}"
    );
    b.ts.publish_load(5, 5).await;
    let mut s = signing(&restored, &b.ts, b.tmp.path(), &b.cps, &b.policy);
    s.witness.tiles_dir = None;
    s.witness.tiles_url = Some(bucket.url());
    s.object_store = bucket.settings.object_store.clone();
    let log = run_until_idle(s).await.log;
    recorded_and_audited(&b, &restored, &log, &bucket.url()).await;
    bucket.name_every_key().await;
    bucket.remove().await.expect("remove the bucket");
}

#[tokio::test]
async fn a_copy_of_another_log_is_refused_and_an_unrecorded_removal_is_a_break() {
    let b = before("dr_refuse", 51).await;
    let other = before("dr_other", 61).await;
    let restored = TestDb::restored(&b.nightly).await;
    let key = b.tmp.path().join("log.key");
    let state = b.tmp.path().join("signer.state");
    let args = |from: &Path| {
        vec![
            "restore-leaves".to_owned(),
            "--database-url".to_owned(),
            restored.url.clone(),
            "--from".to_owned(),
            from.display().to_string(),
            "--signing-key-file".to_owned(),
            key.display().to_string(),
            "--signer-state".to_owned(),
            state.display().to_string(),
        ]
    };
    let wrong = args(&other.tmp.path().join("tiles"));
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let r = event_audit(&wrong, &[]).await;
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr.contains("no copy holds the lost leaves")
            && r.stderr.contains("does not open with the log's key"),
        "{r:?}"
    );
    // The right copy, dry: says what it would do and writes nothing.
    let mut dry = args(&b.tmp.path().join("tiles"));
    dry.push("--dry-run".to_owned());
    let dry: Vec<&str> = dry.iter().map(String::as_str).collect();
    let d = event_audit(&dry, &[]).await;
    assert_eq!(d.code, Some(0), "{d:?}");
    assert!(
        d.stdout.contains("leaves 30..49 would be restored"),
        "{d:?}"
    );
    // A restore that is not recorded: rows removed, no record. Still a break.
    let removed = format!(
        "DELETE FROM audit.events WHERE stream = '{}' AND stream_seq = 20",
        b.ts.name
    );
    assert_eq!(as_superuser(&b.db.pool, &removed).await, 1);
    let v = crate::support::verify(&b.db.url).await;
    assert_eq!(v.code, Some(1), "{v:?}");
}

/// Each stored update: its number, the leaves it covers, its root, its record's leaf.
async fn updates(db: &TestDb) -> Vec<(i64, i64, Vec<u8>, i64)> {
    sqlx::query_as("SELECT seq, version, root, record_leaf FROM audit.index_versions ORDER BY seq")
        .fetch_all(&db.pool)
        .await
        .expect("read the index's updates")
}

/// A database restored from a backup behind the signed log: at start-up the daemon brings the
/// lost leaves back from its tiles (two daemons starting together: once), then the index
/// updates the backup lacks from the deltas beside them, each held against its (restored)
/// record; the index is again the one whose roots the checkpoints signed, the rows recorded
/// again are indexed by an update numbered after them, `verify` rebuilds it all, and `tiles
/// fsck` finds the tiles' deltas and the log agreeing. `restore-leaves`, by hand, brings back
/// the same updates.
#[tokio::test]
async fn a_restored_database_gets_the_index_updates_it_lost_back_from_the_tiles() {
    let db = TestDb::create().await;
    let ts = TestStream::create("account_index_dr").await;
    let cps = format!("{}_CP", ts.name);
    let _w = Witness(cps.clone());
    let tmp = tempfile::tempdir().expect("tmp");
    let origin = format!("event-audit/{}", db.name);
    let (private, public, _) = write_keys(tmp.path(), &origin, 14);
    let (dir, tiles) = (tmp.path().join("checkpoints"), tmp.path().join("tiles"));
    let signed = |db: &TestDb| {
        let mut s = crate::support::witness::signing(db, &ts, &private, &cps, &dir);
        s.witness.tiles_dir = Some(tiles.clone());
        s.witness.signer_state = Some(tmp.path().join("signer.state"));
        s.witness.no_account_index = false;
        s
    };
    let _sim = Sim::start(&ts, "ACME", 4, 49, SimRates::default()).await;
    run_until_idle(signed(&db)).await;
    let nightly = db.backup();
    // Two more runs after the backup, an update each (their rows name accounts).
    ts.publish_load(20, 50).await;
    run_until_idle(signed(&db)).await;
    ts.publish_load(20, 51).await;
    run_until_idle(signed(&db)).await;
    let before = updates(&db).await;

    let restored = TestDb::restored(&nightly).await;
    let kept = updates(&restored).await.len();
    assert!(
        kept >= 1 && before.len() >= kept + 2,
        "the backup lacks two updates: {kept} of {}",
        before.len()
    );
    let lost: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT delta FROM audit.index_versions WHERE seq > $1 ORDER BY seq")
            .bind(kept as i64)
            .fetch_all(&db.pool)
            .await
            .expect("the lost updates' deltas");
    assert!(
        lost.iter()
            .all(|d| !event_audit::tlog::index::delta::Delta::parse(d)
                .expect("a delta")
                .pairs
                .is_empty()),
        "the lost updates indexed rows"
    );
    let (t, p) = (
        tiles.to_str().expect("utf-8"),
        public.to_str().expect("utf-8"),
    );

    // By hand, into another copy of the backup: `restore-leaves` brings back the same updates.
    let by_hand = TestDb::restored(&nightly).await;
    let state = tmp.path().join("signer.state");
    let r = event_audit(
        &[
            "restore-leaves",
            "--database-url",
            &by_hand.url,
            "--from",
            t,
            "--signing-key-file",
            private.to_str().expect("utf-8"),
            "--signer-state",
            state.to_str().expect("utf-8"),
        ],
        &[],
    )
    .await;
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains(&format!(
            "account index updates {}..{} replayed from",
            kept + 1,
            before.len()
        )),
        "{r:?}"
    );
    assert_eq!(updates(&by_hand).await, before);

    // At start-up, two daemons together: one restores and replays, the other's index waits
    // for the replay (the index's lock) and finds it done.
    let (x, y) = tokio::join!(
        run_until_idle(signed(&restored)),
        run_until_idle(signed(&restored))
    );
    let log = format!("{}{}", x.log, y.log);
    assert!(log.contains("replayed from"), "{log}");
    let after = updates(&restored).await;
    assert!(after.len() > before.len(), "{after:?}");
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the updates the checkpoints signed, replayed as they were"
    );
    assert_eq!(
        after[before.len()].0,
        before.len() as i64 + 1,
        "the rows recorded again are indexed by the next update"
    );
    assert!(after[before.len()].1 > before[before.len() - 1].1);

    let v = crate::support::verify(&restored.url).await;
    assert_eq!(v.code, Some(0), "{v:?}");
    assert_eq!(v.report["index"]["ok"], true, "{v:?}");
    assert_eq!(
        v.report["index"]["updates"].as_u64(),
        Some(after.len() as u64),
        "{v:?}"
    );
    let fsck = event_audit(&["tiles", "fsck", t, "--public-key", p], &[]).await;
    assert_eq!(fsck.code, Some(0), "{fsck:?}");
    assert!(fsck.stdout.contains("account index's"), "{fsck:?}");
}
