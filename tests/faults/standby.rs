//! A PostgreSQL hot standby (`pg_basebackup -R` of the case's private primary): auditors run
//! `verify`, `verify --public-key`, `prove`, `drift`, `reconcile diff` and `event_log`
//! queries on it as the auditor role; `reconcile`, which stores a run, refuses there; `verify`
//! says how far the standby's view reaches and does not record its run. Then the standby is
//! promoted behind the daemon's stable address, and the daemon goes on writing: nothing lost
//! with a synchronous standby, nothing doubled.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use event_audit::test_support::dev::simulator::Simulator;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::common::witness::{signing_args, write_keys};
use crate::daemon::{drain, Daemon};
use crate::env::{settings_for, AuditDb, Env, DB, STREAM};
use crate::harness::nats::NatsConfig;
use crate::harness::postgres::{PgOptions, PrivatePostgres};

const CHECKPOINTS: &str = "CHECKPOINTS";
const ORIGIN: &str = "event-audit/faults-standby";
/// A login role with the auditor's rights (created on the primary, replicated).
const AUDITOR: &str = "alice";
/// The simulated platform's REST token.
const REST_TOKEN: &str = "standby-rest-token";

/// `event-audit ARGS` against `db_url` and the case's NATS, with `HOME` in a temporary
/// directory: (exit code, stdout, stderr).
async fn run(env: &Env, db_url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let home = tempfile::tempdir().expect("home");
    let out = crate::common::bin()
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("NATS_URL", env.nats.url())
        .env("HOME", home.path())
        .env("RUST_LOG", "warn")
        .env("EVENT_AUDIT_REST_TOKEN", REST_TOKEN)
        .output()
        .await
        .expect("run event-audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits until the standby has replayed everything the primary has written so far.
async fn caught_up(primary: &PrivatePostgres, standby: &PrivatePostgres) {
    let mut p = primary.admin().await;
    // The insert position: with asynchronous commit, the write position may lag behind.
    let lsn: String = sqlx::query_scalar("SELECT pg_current_wal_insert_lsn()::text")
        .fetch_one(&mut p)
        .await
        .expect("primary LSN");
    let mut s = standby.admin().await;
    for _ in 0..300 {
        let done: bool = sqlx::query_scalar("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn")
            .bind(&lsn)
            .fetch_one(&mut s)
            .await
            .expect("standby LSN");
        if done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the standby did not replay up to {lsn} in 30 s");
}

const SUPPLIER: &str = "S1";

/// The platform simulator on the case's bus: a batch of `SUPPLIER` accounts played onto the
/// stream, and its REST service (the token in the environment of [`run`]) until dropped.
struct Platform {
    url: String,
    served: Arc<event_audit::test_support::dev::simulator::server::Platform>,
    _stop: DropGuard,
}

impl Platform {
    async fn start(env: &Env, dir: &std::path::Path) -> Platform {
        let token = dir.join("rest-token");
        std::fs::write(&token, format!("{REST_TOKEN}\n")).expect("token file");
        let mut s = settings_for(env.nats.url());
        s.simulator.supplier = SUPPLIER.into();
        s.simulator.accounts = 12;
        s.simulator.seed = Some(74);
        s.simulator.subject = "events.platform".into();
        s.simulator.listen = "127.0.0.1:0".parse().expect("address");
        s.simulator.token_file = Some(token);
        let sim = Simulator::start(&s).await.expect("start the simulator");
        let url = format!("http://{}", sim.addr());
        let served = sim.platform();
        let stop = CancellationToken::new();
        tokio::spawn(sim.serve(stop.clone()));
        Platform {
            url,
            served,
            _stop: stop.drop_guard(),
        }
    }

    /// Requests the REST service answered so far, whatever the answer.
    fn requests(&self) -> u64 {
        self.served.served.load(Ordering::SeqCst) + self.served.failed.load(Ordering::SeqCst)
    }
}

/// The log on the primary for the standby cases: a platform batch and the load mix, drained by
/// a daemon signing checkpoints, then two reconciliations (for `reconcile diff`). Returns the
/// rows and the two runs' ids.
async fn primary_log(env: &Env, rest: &Platform, key: &std::path::Path) -> (i64, [String; 2]) {
    env.publish_load(3000, 71).await;
    let n = env.stream_messages().await;
    let signing = signing_args(key, CHECKPOINTS);
    let signing: Vec<&str> = signing.iter().map(String::as_str).collect();
    drain(env, &signing).await;
    let primary = env.direct_db_url();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let args = ["reconcile", "--rest-url", &rest.url, "--supplier", SUPPLIER];
        let (code, out, err) =
            run(env, &primary, &[&args[..], &["--format", "json"]].concat()).await;
        assert!(matches!(code, Some(0 | 1)), "{out}\n{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
        runs.push(report["run_id"].as_i64().expect("run id").to_string());
    }
    (n, [runs[0].clone(), runs[1].clone()])
}

#[tokio::test]
async fn auditors_read_a_hot_standby_and_writing_commands_refuse_there() {
    let env = Env::start().await;
    let keys = tempfile::tempdir().expect("keys");
    let (key, public, _) = write_keys(keys.path(), ORIGIN, 9);
    let pub_key = public.to_str().expect("utf-8");
    let rest = Platform::start(&env, keys.path()).await;
    let (n, runs) = primary_log(&env, &rest, &key).await;
    // The role is made after the standby: a transaction it replays (for the lag it reports).
    let standby = env.pg.standby().await;
    env.pg
        .execute(&format!("CREATE ROLE {AUDITOR} LOGIN"))
        .await;
    env.pg
        .execute(&format!("GRANT event_audit_auditor TO {AUDITOR}"))
        .await;
    caught_up(&env.pg, &standby).await;
    let url = format!("postgres://{AUDITOR}@{}/{DB}", standby.addr());
    let verify_runs = "SELECT count(*) FROM audit.verify_runs";
    let runs_before: i64 = sqlx::query_scalar(verify_runs)
        .fetch_one(&env.pool().await)
        .await
        .expect("runs");

    // verify: intact, the standby's view named, the run not recorded (no write there).
    let (code, out, err) = run(&env, &url, &["verify"]).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON report");
    assert_eq!(
        (&report["ok"], &report["rows"]),
        (&true.into(), &n.into()),
        "{out}"
    );
    let view = &report["standby"];
    assert_eq!(view["last_link"], report["head_link_seq"], "{out}");
    assert!(view["replay_lag_seconds"].is_number(), "{out}");
    assert_eq!(view["last_checkpoint_size"], n, "{out}");
    assert!(err.contains("read-only standby"), "{err}");
    assert!(err.contains("not recorded"), "{err}");

    // verify against the witnessed checkpoints: the checkpoint size it checked is named.
    let witnessed = ["--public-key", pub_key, "--checkpoint-stream", CHECKPOINTS];
    let (code, out, err) = run(
        &env,
        &url,
        &[&["verify", "--no-state"], &witnessed[..]].concat(),
    )
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(err.contains(&format!("up to size {n}")), "{err}");

    // prove one event from the standby.
    let one = ["prove", "--stream", STREAM, "--seq", "17"];
    let (code, out, err) = run(&env, &url, &[&one[..], &witnessed[..]].concat()).await;
    assert_eq!(code, Some(0), "{err}");
    let compact: String = out.split_whitespace().collect();
    assert!(compact.contains("\"stream_seq\":17"), "{out}");

    // drift, the event log view, and reconcile diff (stored runs), as the auditor.
    let (code, out, err) = run(&env, &url, &["drift", "--format", "json"]).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let auditor = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("connect to the standby as the auditor");
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM event_log")
        .fetch_one(&auditor)
        .await
        .expect("event_log on the standby");
    assert_eq!(seen, n);
    let diff = ["reconcile", "diff", &runs[0], &runs[1], "--format", "json"];
    let (code, out, err) = run(&env, &url, &diff).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let diff: serde_json::Value = serde_json::from_str(&out).expect("a JSON diff");
    assert_eq!(diff["to_run"].to_string(), runs[1], "{out}");

    // reconcile stores its run: refused in one line, exit 2, before any REST call.
    let calls = rest.requests();
    let again = ["reconcile", "--rest-url", &rest.url, "--supplier", SUPPLIER];
    let (code, _, err) = run(&env, &url, &again).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("read-only standby"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(
        rest.requests(),
        calls,
        "a refused reconcile called the REST service"
    );

    let runs_after: i64 = sqlx::query_scalar(verify_runs)
        .fetch_one(&env.pool().await)
        .await
        .expect("runs");
    assert_eq!(
        runs_before, runs_after,
        "nothing was recorded through the standby"
    );
}

#[tokio::test]
async fn a_synchronous_standby_promoted_behind_the_daemons_address_loses_and_doubles_nothing() {
    // Synchronous commit to a synchronous standby: a commit the daemon acks on is on both.
    let pg = PgOptions {
        settings: vec![("synchronous_commit".into(), "on".into())],
        ..PgOptions::default()
    };
    let mut env = Env::start_with(pg, NatsConfig::default()).await;
    let n = 6000;
    env.publish_load(n / 2, 72).await;
    let mut d = Daemon::spawn(&env, &[]);
    env.wait_rows(500, Duration::from_secs(60), || d.log())
        .await;
    let standby = env.pg.standby().await;
    env.pg
        .execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        .await;
    env.pg.execute("SELECT pg_reload_conf()").await;
    caught_up(&env.pg, &standby).await;
    env.publish_load(n / 2, 73).await;
    env.wait_rows(n as i64 / 2 + 500, Duration::from_secs(60), || d.log())
        .await;

    // The primary dies mid-ingest; the standby is promoted; the daemon's address moves to it.
    env.pg.kill().await;
    d.wait_ready(503, Duration::from_secs(30)).await;
    standby.promote().await;
    env.pg_proxy.retarget(standby.addr()).await;
    d.wait_ready(200, Duration::from_secs(60)).await;

    let log = AuditDb::new(standby.url_at(standby.addr(), DB));
    log.wait_rows(n as i64, Duration::from_secs(90), || d.log())
        .await;
    assert!(d.running(), "the daemon restarted:\n{}", d.log());
    d.stop_cleanly(Duration::from_secs(30)).await;
    log.assert_exact(n as i64).await;
}
