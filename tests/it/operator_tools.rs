//! The small things an operator hit, against real NATS JetStream and Postgres: `publish --rate`
//! paces every message; `publish` and `simulate-platform` without `--seed` never reuse envelope
//! ids across runs (with the same `--seed` they do, deterministically); files holding account
//! numbers (`--expected`, `--manifest`) are written with mode 0600; `run` checks its files (a
//! signing key missing, readable by others or of another origin; the tiles' place), its port
//! and that PostgreSQL and NATS answer before it creates a database, a stream or a consumer.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

use crate::support::cli::event_audit;
use crate::support::sim::sim_settings;
use crate::support::{run_until_idle, settings, TestDb, TestStream};
use event_audit::test_support::dev::simulator::Simulator;

/// `event-audit publish` to the test's stream, with `extra` arguments.
async fn publish(ts: &TestStream, extra: &[&str]) -> crate::support::cli::Run {
    let (subjects, subject, url) = (
        ts.subjects(),
        ts.subject("load"),
        crate::support::nats_url(),
    );
    let mut args = vec![
        "publish",
        "--stream",
        ts.name.as_str(),
        "--subjects",
        subjects.as_str(),
        "--subject",
        subject.as_str(),
        "--nats-url",
        url.as_str(),
    ];
    args.extend_from_slice(extra);
    event_audit(&args, &[]).await
}

#[tokio::test]
async fn publish_paces_every_message() {
    let ts = TestStream::create("pace").await;
    let started = Instant::now();
    let run = publish(&ts, &["-n", "20", "--rate", "10"]).await;
    let took = started.elapsed();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("published 20 messages"),
        "{}",
        run.stderr
    );
    // The 20th message is due 19/10 s after the first: a lower bound, whatever the machine.
    assert!(
        took.as_secs_f64() >= 1.9,
        "20 messages at 10/s took {took:?}"
    );
}

#[tokio::test]
async fn publish_without_a_subject_uses_one_of_the_streams_and_names_a_wrong_one() {
    let ts = TestStream::create("pubsubj").await;
    let (subjects, url) = (ts.subjects(), crate::support::nats_url());
    let base = [
        "publish",
        "--stream",
        ts.name.as_str(),
        "--subjects",
        subjects.as_str(),
        "--nats-url",
        url.as_str(),
        "-n",
        "3",
    ];
    let run = event_audit(&base, &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("published 3 messages to {}", ts.subject("load"))),
        "{run:?}"
    );
    let mut wrong = base.to_vec();
    wrong.extend(["--subject", "elsewhere.load"]);
    let run = event_audit(&wrong, &[]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("`elsewhere.load`")
            && run.stderr.contains(&subjects)
            && run.stderr.contains("--subject"),
        "{run:?}"
    );
    assert_eq!(run.stderr.trim().lines().count(), 1, "{run:?}");
}

async fn ids(pool: &sqlx::PgPool) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT count(*), count(DISTINCT event_id), \
           count(*) FILTER (WHERE id_status IN ('duplicate', 'conflict')) \
         FROM event_log WHERE event_id IS NOT NULL",
    )
    .fetch_one(pool)
    .await
    .expect("ids")
}

#[tokio::test]
async fn without_a_seed_reruns_never_reuse_envelope_ids() {
    let test_db = TestDb::create().await;
    let ts = TestStream::create("seeds").await;
    for _ in 0..2 {
        assert_eq!(publish(&ts, &["-n", "60"]).await.code, Some(0));
    }
    // simulate-platform, in process, twice without a seed.
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "sim-token").expect("token");
    let mut accounts = Vec::new();
    for k in 0..2 {
        let mut s = sim_settings(&ts, "SEEDLESS", 15, 0);
        s.simulator.seed = None;
        s.simulator.token_file = Some(token.clone());
        s.simulator.expected = Some(dir.path().join(format!("expected-{k}.json")));
        s.simulator.manifest = Some(dir.path().join(format!("manifest-{k}.txt")));
        let sim = Simulator::start(&s).await.expect("simulator");
        accounts.push(sim.manifest.accounts.clone());
        for f in [format!("expected-{k}.json"), format!("manifest-{k}.txt")] {
            let mode = std::fs::metadata(dir.path().join(&f))
                .expect("written")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
    }
    let (a, b): (HashSet<_>, HashSet<_>) =
        (accounts[0].iter().collect(), accounts[1].iter().collect());
    assert!(a.is_disjoint(&b), "two seedless batches share accounts");
    run_until_idle(settings(&test_db, &ts)).await;
    let (n, distinct, findings) = ids(&test_db.pool).await;
    assert!(n > 120, "{n}");
    assert_eq!(
        (distinct, findings),
        (n, 0),
        "envelope ids reused across runs"
    );

    // With the same seed, the same ids: deterministic, and every id of the second run is a
    // finding in the log.
    for _ in 0..2 {
        assert_eq!(
            publish(&ts, &["-n", "30", "--seed", "5"]).await.code,
            Some(0)
        );
    }
    run_until_idle(settings(&test_db, &ts)).await;
    let (after, _, findings) = ids(&test_db.pool).await;
    assert!(findings > 20, "{findings}");
    assert_eq!(2 * findings, after - n, "every repeated id is a finding");
}

/// Whether the test server has a database named `name`, and whether NATS has stream `stream`.
async fn created(name: &str, stream: &str) -> (bool, bool) {
    let admin = sqlx::PgPool::connect(&crate::support::db::admin_url())
        .await
        .expect("admin");
    let db: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(name)
            .fetch_one(&admin)
            .await
            .expect("pg_database");
    let client = async_nats::connect(crate::support::nats_url())
        .await
        .expect("nats");
    let js = async_nats::jetstream::new(client);
    (db, js.get_stream(stream).await.is_ok())
}

#[tokio::test]
async fn run_checks_its_port_postgresql_and_nats_before_it_creates_anything() {
    use event_audit::app::App;
    let url = TestDb::missing_url();
    let name = url.rsplit('/').next().expect("a database name").to_owned();
    let stream = crate::support::unique("start_order");
    let mut s = event_audit::config::Settings::default();
    s.database.url = url;
    s.nats.url = crate::support::nats_url();
    s.stream.name = stream.clone();
    s.stream.subjects = vec![format!("{stream}.>")];
    s.http.addr = "127.0.0.1:0".parse().expect("addr");
    let fails = |s: event_audit::config::Settings| async move {
        let started = Instant::now();
        match App::build(s).await {
            Ok(_) => panic!("the daemon started"),
            Err(e) => (e.to_string(), started.elapsed()),
        }
    };
    // The HTTP port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut busy = s.clone();
    busy.http.addr = taken.local_addr().expect("addr");
    let (why, _) = fails(busy).await;
    assert!(why.contains("binding the HTTP listener"), "{why}");
    assert_eq!(created(&name, &stream).await, (false, false), "{why}");
    // NATS refuses.
    let mut no_nats = s.clone();
    no_nats.nats.url = "nats://127.0.0.1:1".into();
    let (why, _) = fails(no_nats).await;
    assert!(why.contains("127.0.0.1:1"), "{why}");
    assert_eq!(created(&name, &stream).await, (false, false), "{why}");
    // PostgreSQL refuses: said at once, not after the connect timeout.
    let mut no_pg = s.clone();
    no_pg.database.url = "postgres://postgres@127.0.0.1:1/x".into();
    let (why, took) = fails(no_pg).await;
    assert!(
        why.contains("refused") && why.contains("127.0.0.1:1"),
        "{why}"
    );
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(created(&name, &stream).await, (false, false), "{why}");
    // The signing key is missing, readable by others, or named other than the origin; the
    // tiles' bucket URL is malformed: said before PostgreSQL or NATS is touched.
    let tmp = tempfile::tempdir().expect("tmp");
    let (key, _, _) = crate::support::witness::write_keys(tmp.path(), "example.com/start", 7);
    let open_key = tmp.path().join("open.key");
    std::fs::copy(&key, &open_key).expect("copy the key");
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let signing = |key: &std::path::Path| {
        let mut with = s.clone();
        with.witness.signing_key_file = Some(key.to_owned());
        with.witness.checkpoint_stream = format!("{stream}_CP");
        with
    };
    let mut other_origin = signing(&key);
    other_origin.witness.origin = Some("example.com/other".into());
    let mut bad_tiles = signing(&key);
    bad_tiles.witness.tiles_url = Some("s3://".into());
    for (case, says) in [
        (signing(&tmp.path().join("missing.key")), "missing.key"),
        (signing(&open_key), "open.key"),
        (other_origin, "example.com/other"),
        (bad_tiles, "s3://"),
    ] {
        let (why, _) = fails(case).await;
        assert!(why.contains(says), "{why}");
        assert_eq!(created(&name, &stream).await, (false, false), "{why}");
        assert!(!created(&name, &format!("{stream}_CP")).await.1, "{why}");
    }
    // Everything answers: created.
    let app = App::build(s).await.expect("the daemon starts");
    assert_eq!(created(&name, &stream).await, (true, true));
    drop(app);
    let admin = sqlx::PgPool::connect(&crate::support::db::admin_url())
        .await
        .expect("admin");
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&admin)
        .await
        .expect("drop");
    let client = async_nats::connect(crate::support::nats_url())
        .await
        .expect("nats");
    let _ = async_nats::jetstream::new(client)
        .delete_stream(&stream)
        .await;
}
