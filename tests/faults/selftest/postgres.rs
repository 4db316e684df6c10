//! The private PostgreSQL: start-up time, queries through the proxy, blackhole and recovery,
//! stop/kill/restart, scram authentication.
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

use crate::harness::postgres::{PgAuth, PgOptions, PrivatePostgres};
use crate::harness::proxy::{FaultProxy, Mode};
use crate::harness::random_secret;

async fn one(conn: &mut PgConnection) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar("SELECT 1").fetch_one(conn).await
}

#[tokio::test]
async fn starts_fast_and_survives_a_blackhole_behind_the_proxy() {
    let began = Instant::now();
    let pg = PrivatePostgres::start().await;
    eprintln!(
        "PrivatePostgres::start took {:?} (postgres itself {:?})",
        began.elapsed(),
        pg.server_start
    );
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "start-up took {:?}",
        began.elapsed()
    );

    let proxy = FaultProxy::start(pg.addr()).await;
    let mut conn = PgConnection::connect(&pg.url_via(proxy.addr()))
        .await
        .unwrap();
    assert_eq!(one(&mut conn).await.unwrap(), 1);

    proxy.set_mode(Mode::Blackhole).await;
    let t = Instant::now();
    let stalled = tokio::time::timeout(Duration::from_millis(800), one(&mut conn)).await;
    assert!(
        stalled.is_err(),
        "a query under Blackhole must hang, got {stalled:?}"
    );
    assert!(t.elapsed() >= Duration::from_millis(800));
    let new = tokio::time::timeout(
        Duration::from_millis(800),
        PgConnection::connect(&pg.url_via(proxy.addr())),
    )
    .await;
    assert!(new.is_err(), "a new connection under Blackhole must hang");

    proxy.set_mode(Mode::Pass).await;
    // The connection whose query was cancelled client-side is in an unknown state: drop it.
    drop(conn);
    let mut conn = PgConnection::connect(&pg.url_via(proxy.addr()))
        .await
        .unwrap();
    assert_eq!(one(&mut conn).await.unwrap(), 1);

    // Stall: the existing connection hangs, a new one works.
    proxy.set_mode(Mode::Stall).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(500), one(&mut conn))
            .await
            .is_err()
    );
    let mut fresh = PgConnection::connect(&pg.url_via(proxy.addr()))
        .await
        .unwrap();
    assert_eq!(one(&mut fresh).await.unwrap(), 1);

    // Reset: the existing connection fails at once with an I/O error.
    proxy.set_mode(Mode::Reset).await;
    let err = one(&mut fresh).await.unwrap_err();
    assert!(matches!(err, sqlx::Error::Io(_)), "{err:?}");
}

#[tokio::test]
async fn stop_kill_and_restart_keep_the_data() {
    let mut pg = PrivatePostgres::start().await;
    pg.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)")
        .await;
    let count = |url: String| async move {
        let mut c = PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM t")
            .fetch_one(&mut c)
            .await
            .unwrap()
    };
    // An open connection must not block a stop (fast shutdown, not smart).
    let mut held = PgConnection::connect(&pg.url()).await.unwrap();
    let t = Instant::now();
    pg.restart().await;
    eprintln!("PrivatePostgres::restart took {:?}", t.elapsed());
    assert!(one(&mut held).await.is_err(), "the old session is gone");
    assert_eq!(count(pg.url()).await, 2);

    let pid = pg.pid().unwrap();
    pg.kill().await;
    assert!(!crate::harness::alive(pid));
    assert!(
        PgConnection::connect(&pg.url()).await.is_err(),
        "down after kill"
    );
    let t = Instant::now();
    pg.start_again().await;
    eprintln!(
        "PrivatePostgres start after SIGKILL (crash recovery) took {:?}",
        t.elapsed()
    );
    assert_eq!(count(pg.url()).await, 2);
}

#[tokio::test]
async fn scram_auth_accepts_the_password_and_refuses_others() {
    let password = random_secret(24);
    let pg = PrivatePostgres::start_with(PgOptions {
        auth: PgAuth::Scram {
            user: "auditor".into(),
            password: password.clone(),
        },
        ..Default::default()
    })
    .await;
    assert!(pg.url().contains(&password));
    let mut c = PgConnection::connect(&pg.url()).await.unwrap();
    assert_eq!(one(&mut c).await.unwrap(), 1);
    let wrong = pg.url().replace(&password, "wrong");
    let err = PgConnection::connect(&wrong).await.unwrap_err();
    let code = err
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(code.as_deref(), Some("28P01"), "{err}");
    let nopass = format!("postgres://auditor@{}/postgres", pg.addr());
    assert!(PgConnection::connect(&nopass).await.is_err());
}

#[tokio::test]
async fn drop_kills_the_server_and_removes_the_directory() {
    let pg = PrivatePostgres::start().await;
    let (pid, dir) = (pg.pid().unwrap(), pg.data_dir());
    let children = crate::harness::children_of(pid);
    assert!(
        !children.is_empty(),
        "postgres forks its auxiliary processes"
    );
    drop(pg);
    assert!(!crate::harness::alive(pid));
    for (child, _) in children {
        assert!(!crate::harness::alive(child));
    }
    assert!(!dir.exists());
}
