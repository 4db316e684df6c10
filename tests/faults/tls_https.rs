//! HTTPS peers signed by the company's own CA, each a real server behind a TLS proxy of the
//! test's: the REST service (the platform simulator) as `reconcile` reaches it, with the CA as
//! `--rest-tls-ca` or in `SSL_CERT_FILE`, and with a client certificate; s3s-fs as the object
//! store, in-process and as the daemon writes its tiles there; the daemon's `/log/` over HTTPS
//! as an auditor's `mirror` reads it (`--witness-tls-ca`). For each, a server whose
//! certificate another CA signed (a man in the middle) is refused at once in one line naming
//! TLS, the peer, the reason and the setting. And the daemon's own listener over HTTPS, its
//! certificate rotated in place: new connections get the new one, an open one is kept.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::common::s3::{settings as s3_settings, SECRET_KEY};
use crate::common::witness::{signing_args, write_keys};
use crate::daemon::{command, drain, run_args, Daemon};
use crate::env::{settings_for, Env};
use crate::harness::s3s::PrivateS3;
use crate::harness::tls_proxy::TlsProxy;
use crate::harness::{write_tls_files, write_tls_files_of};
use event_audit::test_support::blobs::{BlobError, Location, Put, Store};

const REST_TOKEN: &str = "tls-case-token";
const MITM_CA: &str = "a man in the middle's CA";

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A command of the binary against the env's database; exit code, stderr, time taken.
async fn cli(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> (Option<i32>, String, Duration) {
    let home = tempfile::tempdir().expect("home");
    let began = Instant::now();
    let mut cmd = command();
    cmd.args(args)
        .env("DATABASE_URL", env.direct_db_url())
        .env("HOME", home.path())
        .env("RUST_LOG", "warn")
        .env("EVENT_AUDIT_REST_TOKEN", REST_TOKEN)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("run event-audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        began.elapsed(),
    )
}

#[tokio::test]
async fn the_rest_service_over_https_is_verified_with_the_company_ca() {
    let env = Env::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("rest-token");
    std::fs::write(&token, REST_TOKEN).expect("token file");
    let mut s = settings_for(env.nats.url());
    s.simulator.supplier = "TLS".into();
    s.simulator.accounts = 4;
    s.simulator.subject = "events.platform".into();
    s.simulator.listen = "127.0.0.1:0".parse().expect("address");
    s.simulator.token_file = Some(token);
    let sim = event_audit::test_support::dev::simulator::Simulator::start(&s)
        .await
        .expect("start the simulator");
    let upstream = sim.addr();
    let stop = CancellationToken::new();
    tokio::spawn(sim.serve(stop.clone()));
    let _stop = stop.drop_guard();
    drain(&env, &[]).await;
    let (company, mitm) = (dir.path().join("company"), dir.path().join("mitm"));
    std::fs::create_dir(&company).expect("mkdir");
    std::fs::create_dir(&mitm).expect("mkdir");
    write_tls_files(&company);
    write_tls_files_of(&mitm, MITM_CA);
    let ca = path(&company.join("ca.pem"));
    let https = TlsProxy::start(upstream, &company, false).await;
    let url = https.url();
    let reconcile = [
        "reconcile",
        "--rest-url",
        &url,
        "--supplier",
        "TLS",
        "--format",
        "json",
    ];

    // The company's CA as the REST setting, or in SSL_CERT_FILE.
    let with_ca = [&reconcile[..], &["--rest-tls-ca", &ca]].concat();
    let (code, err, _) = cli(&env, &with_ca, &[]).await;
    assert!(matches!(code, Some(0 | 1)), "{err}");
    let (code, err, _) = cli(&env, &reconcile, &[("SSL_CERT_FILE", &ca)]).await;
    assert!(matches!(code, Some(0 | 1)), "{err}");

    // Trusting only the system's store, the company's CA is unknown: refused, not retried.
    let (code, err, took) = cli(&env, &reconcile, &[]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}: retried?");
    assert!(err.contains("rest.tls_ca_file"), "{err}");

    // A man in the middle: its certificate for the same names, from another CA.
    let middle = TlsProxy::start(upstream, &mitm, false).await;
    let url = middle.url();
    let args = [
        "reconcile",
        "--rest-url",
        &url,
        "--supplier",
        "TLS",
        "--rest-tls-ca",
        &ca,
    ];
    let (code, err, took) = cli(&env, &args, &[]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}: retried?");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let place = format!("TLS refused with the REST service at {}", middle.addr());
    for says in [
        place.as_str(),
        "signed by a CA this client does not trust",
        "issued by CN=a man in the middle's CA",
        "for localhost",
        "rest.tls_ca_file",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }

    // A service that requires a client certificate: given one its CA signed, it answers.
    let mutual = TlsProxy::start(upstream, &company, true).await;
    let url = mutual.url();
    let (cert, key) = (
        path(&company.join("client-cert.pem")),
        path(&company.join("client-key.pem")),
    );
    let args = [
        "reconcile",
        "--rest-url",
        &url,
        "--supplier",
        "TLS",
        "--rest-tls-ca",
        &ca,
    ];
    let with_cert = [
        &args[..],
        &["--rest-tls-cert", &cert, "--rest-tls-key", &key],
    ]
    .concat();
    let (code, err, _) = cli(&env, &with_cert, &[]).await;
    assert!(matches!(code, Some(0 | 1)), "{err}");
    let (code, err, _) = cli(&env, &args, &[]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("TLS"), "{err}");
}

/// The object store at `endpoint` with the test credentials and `ca` trusted.
fn store_settings(dir: &Path, endpoint: &str, ca: Option<&Path>) -> event_audit::config::Settings {
    let mut s = s3_settings(dir, endpoint, SECRET_KEY, 10_000);
    s.object_store.tls_ca_file = ca.map(Path::to_path_buf);
    s
}

#[tokio::test]
async fn the_object_store_over_https_is_verified_with_the_company_ca() {
    let Some(s3) = PrivateS3::start().await else {
        eprintln!("skipped: s3s-fs is not installed (scripts/test-deps.sh installs it)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (company, mitm) = (dir.path().join("company"), dir.path().join("mitm"));
    std::fs::create_dir(&company).expect("mkdir");
    std::fs::create_dir(&mitm).expect("mkdir");
    write_tls_files(&company);
    write_tls_files_of(&mitm, MITM_CA);
    let ca = company.join("ca.pem");
    let bucket = format!("tls-{}", std::process::id());
    let location = Location::parse(&format!("s3://{bucket}/log")).expect("location");
    let plain = store_settings(dir.path(), &format!("http://{}", s3.addr()), None);
    let direct = Store::open(&location, &plain.object_store).expect("open");
    let Store::S3(s3_store) = &direct else {
        unreachable!("an s3:// location")
    };
    s3_store
        .create_bucket(false)
        .await
        .expect("create the bucket");

    let https = TlsProxy::start(s3.addr(), &company, false).await;
    let s = store_settings(dir.path(), &https.url(), Some(&ca));
    let store = Store::open(&location, &s.object_store).expect("open over HTTPS");
    let bytes = Bytes::from_static(b"over TLS");
    store
        .put("checkpoint", bytes.clone(), &Put::default())
        .await
        .expect("put over HTTPS");
    assert_eq!(store.get("checkpoint", 64).await.expect("get"), Some(bytes));

    let middle = TlsProxy::start(s3.addr(), &mitm, false).await;
    let s = store_settings(dir.path(), &middle.url(), Some(&ca));
    let store = Store::open(&location, &s.object_store).expect("open");
    let began = Instant::now();
    let e = store
        .get("checkpoint", 64)
        .await
        .expect_err("a man in the middle");
    assert!(began.elapsed() < Duration::from_secs(5));
    assert!(matches!(e, BlobError::Tls { .. }), "{e}");
    let line = e.to_string();
    for says in [
        "TLS refused with the object store",
        MITM_CA,
        "object_store.tls_ca_file",
    ] {
        assert!(line.contains(says), "{says}: {line}");
    }

    // The daemon writes its tiles there over HTTPS, its CA in the settings file.
    let env = Env::start().await;
    let keys = tempfile::tempdir().expect("keys");
    let (key, _, _) = write_keys(keys.path(), "event-audit/tls/1", 3);
    let o = &s.object_store;
    let config = dir.path().join("settings.toml");
    std::fs::write(
        &config,
        format!(
            "[object_store]\nendpoint = {:?}\npath_style = true\naccess_key_id_file = {:?}\nsecret_access_key_file = {:?}\ntls_ca_file = {:?}\n",
            https.url(),
            o.access_key_id_file.as_ref().expect("id file"),
            o.secret_access_key_file.as_ref().expect("secret file"),
            ca,
        ),
    )
    .expect("settings file");
    env.publish_load(50, 5).await;
    let signing = signing_args(&key, "CHECKPOINTS");
    let mut args: Vec<&str> = signing.iter().map(String::as_str).collect();
    let (tiles, cfg) = (format!("s3://{bucket}/tiles"), path(&config));
    args.extend(["--tiles-url", &tiles, "--config", &cfg, "--exit-when-idle"]);
    let addr = crate::common::free_addr();
    let mut d = Daemon::spawn_args(&env, addr.clone(), run_args(&addr, &args), &[]);
    let status = d.wait(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(0), "{}", d.log());
    let written = Location::parse(&format!("s3://{bucket}/tiles")).expect("location");
    let written = Store::open(&written, &plain.object_store).expect("open");
    let note = written
        .get("checkpoint", 4096)
        .await
        .expect("read the checkpoint");
    let note = String::from_utf8(note.unwrap_or_default().to_vec()).expect("text");
    assert!(
        note.starts_with("event-audit/tls/1\n"),
        "{note}\n{}",
        d.log()
    );
}

/// A client trusting only `ca`, its connections kept in its pool.
fn client_of(ca: &Path) -> reqwest::Client {
    let pem = std::fs::read(ca).expect("read the CA");
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a CA"))
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client")
}

/// Replaces `to`'s server certificate and key with `from`'s, each file by a rename.
fn rotate(from: &Path, to: &Path) {
    for f in ["server-cert.pem", "server-key.pem"] {
        let tmp = to.join(format!("{f}.new"));
        std::fs::copy(from.join(f), &tmp).expect("copy");
        std::fs::rename(&tmp, to.join(f)).expect("rename");
    }
}

#[tokio::test]
async fn the_listener_serves_https_and_reads_a_rotated_certificate_keeping_open_connections() {
    let env = Env::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (live, first, second) = (
        dir.path().join("live"),
        dir.path().join("a"),
        dir.path().join("b"),
    );
    for d in [&live, &first, &second] {
        std::fs::create_dir(d).expect("mkdir");
    }
    write_tls_files(&first);
    write_tls_files_of(&second, "the next CA");
    rotate(&first, &live);
    let (cert, key) = (
        path(&live.join("server-cert.pem")),
        path(&live.join("server-key.pem")),
    );
    let mut d = Daemon::spawn(&env, &["--http-tls-cert", &cert, "--http-tls-key", &key]);
    let healthz = format!("https://{}/healthz", d.addr);
    let old = client_of(&first.join("ca.pem"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match old.get(&healthz).send().await {
            Ok(r) if r.status() == 200 => break,
            _ if Instant::now() < deadline && d.running() => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            other => panic!("no HTTPS answer: {other:?}\n{}", d.log()),
        }
    }
    // Plain HTTP is not served there.
    let plain = reqwest::Client::new()
        .get(format!("http://{}/healthz", d.addr))
        .send()
        .await;
    assert!(plain.map_or(true, |r| r.status() != 200));

    rotate(&second, &live);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The open connection (the old certificate, which only `old` trusts) still answers...
    let r = old
        .get(&healthz)
        .send()
        .await
        .expect("the open connection was kept");
    assert_eq!(r.status(), 200);
    // ...and new connections get the new certificate.
    let new = client_of(&second.join("ca.pem"));
    let r = new
        .get(&healthz)
        .send()
        .await
        .expect("the rotated certificate");
    assert_eq!(r.status(), 200);
    let fresh_old = client_of(&first.join("ca.pem"));
    assert!(
        fresh_old.get(&healthz).send().await.is_err(),
        "still the old certificate"
    );
    d.stop_cleanly(Duration::from_secs(30)).await;
}

#[tokio::test]
async fn an_auditor_mirrors_the_log_over_https_and_refuses_a_man_in_the_middle() {
    let env = Env::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (company, mitm) = (dir.path().join("company"), dir.path().join("mitm"));
    std::fs::create_dir(&company).expect("mkdir");
    std::fs::create_dir(&mitm).expect("mkdir");
    write_tls_files(&company);
    write_tls_files_of(&mitm, MITM_CA);
    let (key, public, _) = write_keys(dir.path(), "event-audit/tls-mirror/1", 4);
    let tiles = dir.path().join("tiles");
    env.publish_load(40, 6).await;
    let (cert, tls_key) = (
        path(&company.join("server-cert.pem")),
        path(&company.join("server-key.pem")),
    );
    let mut args = signing_args(&key, "CHECKPOINTS");
    args.extend(["--tiles-dir".into(), path(&tiles)]);
    args.extend([
        "--http-tls-cert".into(),
        cert,
        "--http-tls-key".into(),
        tls_key,
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut d = Daemon::spawn(&env, &args);
    let checkpoint = format!("https://{}/log/checkpoint", d.addr);
    let client = client_of(&company.join("ca.pem"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ok = match client.get(&checkpoint).send().await {
            Ok(r) if r.status() == 200 => r.text().await.unwrap_or_default().contains("\n40\n"),
            _ => false,
        };
        if ok {
            break;
        }
        assert!(
            Instant::now() < deadline && d.running(),
            "no checkpoint of 40 leaves\n{}",
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log_url = format!("https://{}/log", d.addr);
    let copy = dir.path().join("mirror");
    let (ca, other_ca) = (path(&company.join("ca.pem")), path(&mitm.join("ca.pem")));
    let env = &env;
    let mirror = |ca: String| {
        let (log_url, public, copy) = (log_url.clone(), path(&public), path(&copy));
        async move {
            let args = [
                "mirror",
                "--log-url",
                &log_url,
                "--public-key",
                &public,
                "--dir",
                &copy,
                "--witness-tls-ca",
                &ca,
            ];
            cli(env, &args, &[]).await
        }
    };
    let (code, err, _) = mirror(ca).await;
    assert_eq!(code, Some(0), "{err}");
    let (code, err, took) = mirror(other_ca).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("TLS refused") && err.contains("witness.tls_ca_file"),
        "{err}"
    );
    d.stop_cleanly(Duration::from_secs(30)).await;
}
