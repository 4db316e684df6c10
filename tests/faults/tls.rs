//! TLS to PostgreSQL and NATS, each a server of the test's: a PostgreSQL that accepts TLS only
//! (`hostssl` lines alone, `scram-sha-256`, a client certificate required) with a server
//! certificate from a CA the test makes, and a nats-server with TLS and client certificates.
//! For each: the daemon and a reading command work with the CA given (`verify-full`, the
//! password from a file, the connection counted as encrypted), and a server whose certificate
//! another CA signed (a man in the middle) is refused at once in one line naming TLS and the
//! setting to change. Plain connections to the TLS-only database are refused by the server.

use std::time::Duration;

use crate::common::free_addr;
use crate::daemon::{command, run_args, Daemon};
use crate::env::{metric, AuditDb, Env, DB};
use crate::harness::nats::NatsConfig;
use crate::harness::postgres::{PgAuth, PgOptions};
use crate::harness::{random_secret, url_encode, write_tls_files, write_tls_files_of};

async fn publish_some(env: &Env, n: usize) {
    for i in 0..n {
        let body = format!(
            r#"{{"event":"account.occupied-v1","id":"t{i}-{}","payload":{{"account_number":"A-{i}"}}}}"#,
            random_secret(6)
        );
        env.publish("events.load", body.into_bytes()).await;
    }
}

/// A TLS-only PostgreSQL (scram, client certificates) behind the env's proxy, plain NATS.
async fn tls_only_env(password: &str) -> Env {
    Env::start_with(
        PgOptions {
            auth: PgAuth::Scram {
                user: "ea".into(),
                password: password.into(),
            },
            tls: Some(true),
            ..PgOptions::default()
        },
        NatsConfig::default(),
    )
    .await
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// The last line of a log that is not a JSON log line: what the binary printed as its error.
fn last_line(log: &str) -> String {
    log.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// A command of the binary against `db_url`; its exit code and stderr, and how long it took.
async fn cli(db_url: &str, args: &[&str]) -> (Option<i32>, String, Duration) {
    let home = tempfile::tempdir().expect("home");
    let began = std::time::Instant::now();
    let out = command()
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("HOME", home.path())
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("run event-audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        began.elapsed(),
    )
}

#[tokio::test]
async fn a_tls_only_postgres_is_verified_and_a_man_in_the_middle_is_refused_in_one_line() {
    let password = random_secret(20);
    let env = tls_only_env(&password).await;
    let tls = env.pg.tls_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    let pw_file = dir.path().join("db-password");
    std::fs::write(&pw_file, format!("{password}\n")).expect("password file");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pw_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // The client given another CA than the server's (what a man in the middle's certificate
    // meets), and one named as the server's but with another key.
    let other = tempfile::tempdir().expect("another CA");
    write_tls_files_of(other.path(), "a man in the middle's CA");
    let look_alike = tempfile::tempdir().expect("a look-alike CA");
    write_tls_files(look_alike.path());
    publish_some(&env, 40).await;

    // No password in the URL: it comes from --db-password-file; verify-full against the CA.
    let url = format!(
        "postgres://ea@{}/{DB}?sslmode=verify-full",
        env.pg_proxy.addr()
    );
    let (ca, cert, key) = (
        path(&tls.join("ca.pem")),
        path(&tls.join("client-cert.pem")),
        path(&tls.join("client-key.pem")),
    );
    let pw = path(&pw_file);
    let tls_args = [
        "--db-password-file",
        pw.as_str(),
        "--db-tls-ca",
        &ca,
        "--db-tls-cert",
        &cert,
        "--db-tls-key",
        &key,
    ];
    let addr = free_addr();
    let mut d = Daemon::spawn_at(
        &url,
        &env.nats_url(),
        addr.clone(),
        run_args(&addr, &tls_args),
        &[],
    );
    d.wait_ready(200, Duration::from_secs(60)).await;
    let metrics = d.metrics().await;
    assert_eq!(
        metric(&metrics, "event_audit_connection_tls", r#"peer="database""#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "event_audit_connection_tls", r#"peer="nats""#),
        Some(0.0)
    );
    // The test reads the log over TLS too (the server takes nothing else over TCP).
    let direct = format!(
        "postgres://ea:{}@{}/{DB}?sslmode=verify-full&sslrootcert={ca}&sslcert={cert}&sslkey={key}",
        url_encode(&password),
        env.pg.addr()
    );
    let db = AuditDb::new(direct);
    db.wait_rows(40, Duration::from_secs(60), || d.log()).await;
    d.stop_cleanly(Duration::from_secs(30)).await;
    db.assert_exact(40).await;

    // A reading command takes the same settings.
    let mut verify = vec!["verify", "--skip-completeness"];
    verify.extend_from_slice(&tls_args);
    let (code, err, _) = cli(&url, &verify).await;
    assert_eq!(code, Some(0), "{err}");

    // Plain text is refused by the server (hostssl only), naming the encryption.
    let plain = format!("postgres://ea@{}/{DB}?sslmode=disable", env.pg_proxy.addr());
    let (code, err, _) = cli(&plain, &verify).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no encryption"), "{err}");

    // A man in the middle: a certificate another CA signed. Refused at once, one line, naming
    // TLS, the reason and the setting; in verify-full and in require with a CA (libpq's
    // verify-ca), by the daemon and by a command.
    let other_ca = path(&other.path().join("ca.pem"));
    let mitm_args = [
        "--db-password-file",
        pw.as_str(),
        "--db-tls-ca",
        &other_ca,
        "--db-tls-cert",
        &cert,
        "--db-tls-key",
        &key,
    ];
    let addr = free_addr();
    let mut d = Daemon::spawn_at(
        &url,
        &env.nats_url(),
        addr.clone(),
        run_args(&addr, &mitm_args),
        &[],
    );
    let (status, took) = d.wait_timed(Duration::from_secs(30)).await;
    let log = d.log();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(took < Duration::from_secs(10), "{took:?}: retried?\n{log}");
    let line = last_line(&log);
    for says in [
        "TLS refused",
        "signed by a CA this client does not trust",
        // The server's own, which the client (given another CA) does not trust.
        "it presents one for localhost, issued by CN=fault suite test CA",
        "database.tls_ca_file",
    ] {
        assert!(line.contains(says), "{says}: {line}");
    }
    assert!(!log.contains(&password), "the password was printed");
    let require = format!("postgres://ea@{}/{DB}?sslmode=require", env.pg_proxy.addr());
    let look_alike_ca = path(&look_alike.path().join("ca.pem"));
    let mut verify = vec!["verify", "--skip-completeness"];
    verify.extend_from_slice(&mitm_args);
    verify[5] = &look_alike_ca;
    let (code, err, took) = cli(&require, &verify).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("named as a trusted one"), "{err}");
    // `require` without a CA encrypts without verifying (libpq's meaning): it connects.
    let unverified = [
        "--db-password-file",
        pw.as_str(),
        "--db-tls-cert",
        &cert,
        "--db-tls-key",
        &key,
    ];
    let mut verify = vec!["verify", "--skip-completeness"];
    verify.extend_from_slice(&unverified);
    let (code, err, _) = cli(&require, &verify).await;
    assert_eq!(code, Some(0), "{err}");
}

#[tokio::test]
async fn nats_with_client_certificates_refuses_a_server_another_ca_signed() {
    let env = Env::start_with(PgOptions::default(), NatsConfig::default().tls(true)).await;
    publish_some(&env, 20).await;
    let (cert, key) = env.nats.client_cert_paths();
    let (cert, key) = (path(&cert), path(&key));
    let ca = path(&env.nats.ca_path());
    let args = [
        "--nats-tls-ca",
        &ca,
        "--nats-tls-cert",
        &cert,
        "--nats-tls-key",
        &key,
    ];
    let addr = free_addr();
    let mut d = Daemon::spawn_args(&env, addr.clone(), run_args(&addr, &args), &[]);
    d.wait_ready(200, Duration::from_secs(60)).await;
    let metrics = d.metrics().await;
    assert_eq!(
        metric(&metrics, "event_audit_connection_tls", r#"peer="nats""#),
        Some(1.0),
        "{metrics}"
    );
    env.wait_rows(20, Duration::from_secs(60), || d.log()).await;
    d.stop_cleanly(Duration::from_secs(30)).await;

    let other = tempfile::tempdir().expect("another CA");
    write_tls_files(other.path());
    let other_ca = path(&other.path().join("ca.pem"));
    let args = [
        "--nats-tls-ca",
        &other_ca,
        "--nats-tls-cert",
        &cert,
        "--nats-tls-key",
        &key,
    ];
    let mut d = Daemon::spawn(&env, &args);
    let (status, took) = d.wait_timed(Duration::from_secs(30)).await;
    let log = d.log();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(took < Duration::from_secs(10), "{took:?}\n{log}");
    let line = last_line(&log);
    let place = format!("TLS refused with NATS at {}", env.nats_url());
    for says in [
        place.as_str(),
        "signed by a CA this client does not trust",
        "nats.tls_ca_file",
    ] {
        assert!(line.contains(says), "{says}: {line}");
    }
}
