//! A database restored from a base backup behind the witnessed checkpoint: a `pg_basebackup` of
//! the case's private PostgreSQL taken when 30 events were signed, its recovery then ended (the
//! point in time the backup reaches), while the primary goes on to sign 50. The primary is lost;
//! the daemon, started on the restored copy, brings the signed leaves back from its tiles,
//! records the restore, records again from the bus what the copy lacks, and signs again under the
//! same origin: every sequence once, and `verify --public-key` names the restore.

use std::time::Duration;

use crate::common::witness::{signing_args, write_keys};
use crate::daemon::{run_args, Daemon};
use crate::env::{AuditDb, Env, DB};

const CHECKPOINTS: &str = "CHECKPOINTS";
const ORIGIN: &str = "event-audit/faults-restore";

#[tokio::test]
async fn a_base_backup_behind_the_signed_checkpoint_resumes_under_the_same_origin() {
    let env = Env::start().await;
    let tmp = tempfile::tempdir().expect("tmp");
    let (private, public, _) = write_keys(tmp.path(), ORIGIN, 71);
    let tiles = tmp.path().join("tiles");
    let mut args = signing_args(&private, CHECKPOINTS);
    args.extend(
        [
            "--tiles-dir",
            tiles.to_str().expect("utf-8"),
            "--exit-when-idle",
        ]
        .map(str::to_owned),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let once = |db: &str| {
        let addr = crate::common::free_addr();
        Daemon::spawn_at(
            db,
            &env.nats_url(),
            addr.clone(),
            run_args(&addr, &args),
            &[],
        )
    };
    env.publish_load(30, 1).await;
    let mut d = once(&env.db_url());
    assert!(
        d.wait(Duration::from_secs(90)).await.success(),
        "{}",
        d.log()
    );

    // The base backup, its recovery ended now: the database as it was at 30 events.
    let restored = env.pg.standby().await;
    restored.promote().await;
    env.publish_load(20, 2).await;
    let mut d = once(&env.db_url());
    assert!(
        d.wait(Duration::from_secs(90)).await.success(),
        "{}",
        d.log()
    );
    let signed = std::fs::read_to_string(tiles.join("checkpoint")).expect("checkpoint");
    assert_eq!(signed.lines().nth(1), Some("50"), "{signed}");

    // The primary is lost; the daemon starts on the restored copy.
    let url = restored.url_at(restored.addr(), DB);
    env.publish_load(5, 3).await;
    let mut d = once(&url);
    assert!(
        d.wait(Duration::from_secs(90)).await.success(),
        "{}",
        d.log()
    );
    let log = d.log();
    assert!(log.contains("leaves 30..49 restored from"), "{log}");
    assert!(
        log.contains("the log lacked 20 sequence(s) the stream still holds (31..50)"),
        "{log}"
    );
    assert_eq!(
        AuditDb::new(url.clone()).seq_stats().await,
        (55, 55, Some(1), Some(55))
    );
    let signed = std::fs::read_to_string(tiles.join("checkpoint")).expect("checkpoint");
    assert_eq!(signed.lines().nth(1), Some("76"), "{signed}");

    let home = tempfile::tempdir().expect("home");
    let out = crate::common::bin()
        .args([
            "verify",
            "--public-key",
            public.to_str().expect("utf-8"),
            "--checkpoint-stream",
            CHECKPOINTS,
        ])
        .env("DATABASE_URL", &url)
        .env("NATS_URL", env.nats.url())
        .env("HOME", home.path())
        .output()
        .await
        .expect("verify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("restore 1 at"), "{stderr}");
}
