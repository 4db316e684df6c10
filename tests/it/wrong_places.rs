//! A daemon pointed at the wrong place, against the real PostgreSQL and NATS: a database URL
//! whose port is another service's (NATS, an HTTP server) says so in one line, not sqlx's
//! `expected to read 1414811696 bytes`; a database a newer event-audit migrated (an applied
//! migration this release does not know) names its schema version and says to run that
//! release, not sqlx's "previously applied but is missing"; nothing is migrated then.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::TestDb;
use event_audit::config::DatabaseSettings;
use event_audit::test_support::db::Db;

/// A server on a free port that answers every connection as an HTTP server does.
async fn http_server() -> std::net::SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            let mut buf = [0u8; 512];
            let _ = c.read(&mut buf).await;
            let _ = c
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    });
    addr
}

fn at(url: String) -> DatabaseSettings {
    DatabaseSettings {
        url,
        connect_timeout: event_audit::config::Dur::secs(5),
        ..DatabaseSettings::default()
    }
}

#[tokio::test]
async fn a_database_url_on_another_services_port_says_it_is_not_postgresql() {
    let http = http_server().await;
    let nats = crate::support::nats_url();
    let nats = nats.trim_start_matches("nats://");
    for place in [http.to_string(), nats.to_owned()] {
        let url = format!("postgres://postgres@{place}/x");
        let why = match Db::open_writer(&at(url)).await {
            Ok(_) => panic!("{place} opened as PostgreSQL"),
            Err(e) => e.to_string(),
        };
        assert!(
            why.contains("not as PostgreSQL") && why.contains(&place) && why.contains("port"),
            "{why}"
        );
        assert!(!why.contains("expected to read"), "{why}");
        assert_eq!(why.lines().count(), 1, "{why}");
    }
}

#[tokio::test]
async fn a_database_a_newer_release_migrated_names_its_schema_version() {
    let db = TestDb::create().await;
    sqlx::query(
        "INSERT INTO public._sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (20991231000001, 'from a later release', true, '\\x00', 1)",
    )
    .execute(&db.pool)
    .await
    .expect("a later release's migration");
    let why = match Db::open_writer(&db.settings()).await {
        Ok(_) => panic!("an older release migrated a newer database"),
        Err(e) => e.to_string(),
    };
    assert!(
        why.contains("upgraded by a newer event-audit")
            && why.contains("20991231000001")
            && why.contains("from a later release")
            && why.contains(&db.name),
        "{why}"
    );
    assert!(!why.contains("previously applied"), "{why}");
    // What the daemon says on start-up, through its own error.
    let ts = crate::support::TestStream::create("newer_schema").await;
    let s = crate::support::settings(&db, &ts);
    let started = event_audit::app::App::build(s).await;
    let why = started.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        why.contains("run the event-audit release that upgraded it"),
        "{why}"
    );
}
