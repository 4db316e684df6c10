//! The store's contract, one test body run against every driver (as Tessera's storage tests
//! are): a temporary directory, s3s-fs (SigV4 checked with the test credentials) and moto (Object
//! Lock emulated), both started by scripts/services.sh. A round trip, a create that keeps what
//! is there (the same bytes fine, other bytes refused, two racing creates: one wins where the
//! store makes the check and the write one step), a replace,
//! Cache-Control stored, a missing key, reads bounded, bad keys refused. Then what only a server
//! shows: a wrong secret refused in one clear line, a silent server named as a timeout, a
//! server that sends more than it said refused, Object Lock honoured (moto) or refused as
//! unsupported, and no credential in any error text or `Debug`.

use std::sync::Arc;

use bytes::Bytes;
use event_audit::test_support::blobs::{BlobError, Location, Mode, Put, Store, Wrote};

use crate::support::s3::{self, Server, TestBucket, ACCESS_KEY, SECRET_KEY};

const TILE_CACHE: &str = "public, max-age=604800, immutable";
const CHECKPOINT_CACHE: &str = "public, max-age=2";

fn create(cache: &str) -> Put<'_> {
    Put {
        mode: Mode::Create,
        cache_control: Some(cache),
        ..Put::default()
    }
}

/// Whether the driver stores `Cache-Control` (a directory does not: its server sets it).
fn keeps_metadata(store: &Store) -> bool {
    matches!(store, Store::S3(_))
}

/// The contract every driver keeps; `key` names (and remembers) a key of the test.
/// `atomic_create`: two racing creates cannot both succeed (false for s3s-fs and moto, whose
/// `If-None-Match` check and write are two steps: a second create after the first is refused,
/// but two at once may both be taken; AWS S3 documents one winner, a 412 to the other).
async fn contract(store: &Store, key: impl Fn(&str) -> String, atomic_create: bool) {
    let tile = key("tile/0/000");
    assert_eq!(store.get(&tile, 1024).await.expect("get missing"), None);
    assert_eq!(store.head(&tile).await.expect("head missing"), None);

    let a = Bytes::from(vec![7u8; 8192]);
    let b = Bytes::from(vec![8u8; 8192]);
    let put = store.put(&tile, a.clone(), &create(TILE_CACHE)).await;
    assert_eq!(put.expect("create"), Wrote::New);
    assert_eq!(store.get(&tile, 8192).await.expect("get"), Some(a.clone()));
    let head = store.head(&tile).await.expect("head").expect("there");
    assert_eq!(head.len, 8192);
    let cache = keeps_metadata(store).then(|| TILE_CACHE.to_owned());
    assert_eq!(head.cache_control, cache, "{}", store.place());
    assert_eq!(head.lock_until, None);

    // A create keeps what is there: the same bytes are fine, other bytes refused.
    let same = store.put(&tile, a.clone(), &create(TILE_CACHE)).await;
    assert_eq!(same.expect("same bytes"), Wrote::Same);
    let other = store.put(&tile, b.clone(), &create(TILE_CACHE)).await;
    let e = other.expect_err("other bytes refused");
    assert!(matches!(e, BlobError::Conflict { .. }), "{e}");
    assert!(
        e.to_string().contains("tile/0/000") && e.to_string().contains("other bytes"),
        "{e}"
    );
    let longer = store
        .put(&tile, Bytes::from(vec![7u8; 8193]), &create(TILE_CACHE))
        .await;
    assert!(
        matches!(longer, Err(BlobError::Conflict { .. })),
        "{longer:?}"
    );
    assert_eq!(store.get(&tile, 8192).await.expect("kept"), Some(a.clone()));

    // A replace replaces.
    let cp = key("checkpoint");
    let replace = Put {
        mode: Mode::Replace,
        cache_control: Some(CHECKPOINT_CACHE),
        content_type: Some("text/plain; charset=utf-8"),
        lock_until: None,
    };
    for text in ["origin\n1\n", "origin\n2\n"] {
        let w = store.put(&cp, Bytes::from(text), &replace).await;
        assert_eq!(w.expect("replace"), Wrote::New);
    }
    assert_eq!(
        store.get(&cp, 64).await.expect("get"),
        Some(Bytes::from("origin\n2\n"))
    );
    let head = store.head(&cp).await.expect("head").expect("there");
    let cache = keeps_metadata(store).then(|| CHECKPOINT_CACHE.to_owned());
    assert_eq!(head.cache_control, cache);

    // Reads are bounded: one byte over the bound is refused.
    let big = key("tile/entries/001");
    store
        .put(&big, Bytes::from(vec![1u8; 65_536]), &create(TILE_CACHE))
        .await
        .expect("big");
    let e = store.get(&big, 65_535).await.expect_err("over the bound");
    assert!(matches!(e, BlobError::TooLarge { max: 65_535, .. }), "{e}");
    assert_eq!(
        store
            .get(&big, 65_536)
            .await
            .expect("at the bound")
            .map(|b| b.len()),
        Some(65_536)
    );

    // Two creates racing with other bytes: exactly one wins, the other is refused.
    let race = key("tile/1/000");
    let how = create(TILE_CACHE);
    let (x, y) = tokio::join!(
        store.put(&race, a.clone(), &how),
        store.put(&race, b.clone(), &how),
    );
    let won = [&x, &y]
        .iter()
        .filter(|r| matches!(r, Ok(Wrote::New)))
        .count();
    if !atomic_create {
        assert!(won >= 1, "{x:?} {y:?}");
    }
    let lost = [&x, &y]
        .iter()
        .filter(|r| matches!(r, Err(BlobError::Conflict { .. })))
        .count();
    if atomic_create {
        assert_eq!((won, lost), (1, 1), "{x:?} {y:?}");
    }
    let kept = store.get(&race, 8192).await.expect("get").expect("there");
    assert!(kept == a || kept == b);

    // Keys stay inside the store.
    for bad in ["../escape", "/abs", "a//b", ""] {
        let e = store.get(bad, 10).await.expect_err(bad);
        assert!(matches!(e, BlobError::Key { .. }), "{e}");
    }

    store.sync().await.expect("sync");
    store.delete(&tile).await.expect("delete");
    assert_eq!(store.get(&tile, 8192).await.expect("get deleted"), None);
    store
        .delete(&tile)
        .await
        .expect("deleting nothing is no error");
}

#[tokio::test]
async fn a_directory_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("tiles");
    let loc = Location::parse(root.to_str().expect("utf-8")).expect("location");
    let store =
        Store::open(&loc, &event_audit::config::Settings::default().object_store).expect("open");
    contract(&store, str::to_owned, true).await;
    // No temporary file is left behind.
    let mut names = Vec::new();
    for d in ["tile/0", "tile/1", "tile/entries", "."] {
        for e in std::fs::read_dir(root.join(d)).expect("read dir") {
            names.push(e.expect("entry").file_name().to_string_lossy().into_owned());
        }
    }
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    let e = store
        .put(
            "locked",
            Bytes::from("x"),
            &Put {
                lock_until: Some(chrono::Utc::now()),
                ..Put::default()
            },
        )
        .await
        .expect_err("a directory cannot lock");
    assert!(matches!(e, BlobError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("Object Lock"), "{e}");
    // Tiles are readable by any web server; a private store's files (archives) by their owner.
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&root.join("checkpoint")), 0o644);
    let private = Store::open(&loc, &event_audit::config::Settings::default().object_store)
        .expect("open")
        .private();
    let w = private
        .put("2026-01.jsonl", Bytes::from("row\n"), &Put::default())
        .await;
    assert_eq!(w.expect("put"), Wrote::New);
    assert_eq!(mode(&root.join("2026-01.jsonl")), 0o600);
}

#[tokio::test]
async fn s3s_fs_keeps_the_contract_with_signatures_checked() {
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    contract(&bucket.store, |k| bucket.key(k), false).await;
    // s3s-fs has no Object Lock and ignores its headers: the put is refused as unsupported
    // after the fact (the object is there, unlocked), never taken for a lock.
    let k = bucket.key("archive/2026-01.jsonl");
    let until = chrono::Utc::now() + chrono::Duration::days(1);
    let put = Put {
        lock_until: Some(until),
        ..Put::default()
    };
    let e = bucket
        .store
        .put(&k, Bytes::from("row\n"), &put)
        .await
        .expect_err("no lock");
    assert!(matches!(e, BlobError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("ignores Object Lock"), "{e}");
    let head = bucket.store.head(&k).await.expect("head").expect("there");
    assert_eq!(head.lock_until, None);
    bucket.remove().await.expect("remove the bucket");
}

#[tokio::test]
async fn moto_keeps_the_contract_and_locks_objects() {
    let bucket = TestBucket::new(Server::Moto, true).await;
    contract(&bucket.store, |k| bucket.key(k), false).await;
    // Compliance mode for three seconds: the delete is refused, then allowed.
    let k = bucket.key("archive/2026-01.jsonl");
    let until = chrono::Utc::now() + chrono::Duration::seconds(3);
    let put = Put {
        lock_until: Some(until),
        ..Put::default()
    };
    let w = bucket
        .store
        .put(&k, Bytes::from("row\n"), &put)
        .await
        .expect("locked put");
    assert_eq!(w, Wrote::New);
    let head = bucket.store.head(&k).await.expect("head").expect("there");
    let kept = head.lock_until.expect("a retention date");
    assert!(
        (kept - until).num_milliseconds().abs() < 1000,
        "{kept} vs {until}"
    );
    let e = bucket.store.delete(&k).await.expect_err("locked");
    assert!(matches!(e, BlobError::Locked { .. }), "{e}");
    assert!(e.to_string().contains("archive/2026-01.jsonl"), "{e}");
    assert_eq!(
        bucket.store.get(&k, 64).await.expect("still there"),
        Some(Bytes::from("row\n"))
    );
    tokio::time::sleep((until - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    bucket
        .store
        .delete(&k)
        .await
        .expect("deleted once the retention ended");
    bucket.remove().await.expect("remove the bucket");
}

/// No error text and no `Debug` holds the key id or the secret.
fn no_credentials(text: &str, secret: &str) {
    assert!(!text.contains(secret), "the secret in: {text}");
    assert!(!text.contains(ACCESS_KEY), "the access key id in: {text}");
}

#[tokio::test]
async fn a_wrong_secret_is_refused_in_one_line_without_credentials() {
    let bucket = TestBucket::new(Server::S3sFs, false).await;
    let creds = tempfile::tempdir().expect("tempdir");
    let wrong = "wrong-S3cret-of-the-test";
    let settings = s3::settings(creds.path(), &Server::S3sFs.endpoint(), wrong, 10_000);
    let store = Store::open(&bucket.location, &settings.object_store).expect("open");
    no_credentials(&format!("{store:?}"), wrong);
    no_credentials(&format!("{:?}", bucket.store), SECRET_KEY);
    let k = bucket.key("checkpoint");
    let errors = [
        store.get(&k, 64).await.expect_err("get"),
        store
            .put(&k, Bytes::from("x"), &Put::default())
            .await
            .expect_err("put"),
        store.head(&k).await.expect_err("head"),
    ];
    for e in &errors {
        assert!(matches!(e, BlobError::Denied { .. }), "{e}");
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("refused the request's credentials"), "{text}");
        assert!(text.contains("AWS_SECRET_ACCESS_KEY"), "{text}");
        no_credentials(&text, wrong);
        no_credentials(&format!("{e:?}"), wrong);
    }
    assert_eq!(
        bucket.store.get(&k, 64).await.expect("nothing written"),
        None
    );
    bucket.remove().await.expect("remove the bucket");
}

/// A server on the loopback interface that reads each request and then, per connection,
/// answers with `reply` (or never answers when it is empty).
async fn hostile_server(reply: &'static [u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let held = Arc::new(tokio::sync::Mutex::new(Vec::new()));
        while let Ok((mut conn, _)) = listener.accept().await {
            let held = held.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                if !reply.is_empty() {
                    let _ = conn.write_all(reply).await;
                }
                held.lock().await.push(conn);
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_silent_server_is_a_timeout_and_an_overlong_body_is_refused() {
    let creds = tempfile::tempdir().expect("tempdir");
    let silent = hostile_server(b"").await;
    let settings = s3::settings(creds.path(), &silent, SECRET_KEY, 300);
    let loc = Location::parse("s3://ea-test-silent/x").expect("location");
    let store = Store::open(&loc, &settings.object_store).expect("open");
    let started = std::time::Instant::now();
    let e = store.get("checkpoint", 64).await.expect_err("silent");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(matches!(e, BlobError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("timed out after 300ms"), "{e}");
    no_credentials(&e.to_string(), SECRET_KEY);

    // Chunked, no length announced: refused once more than the bound has arrived.
    let chunk = ".".repeat(1024);
    let reply = format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n400\r\n{chunk}\r\n");
    let reply: &'static [u8] = Box::leak(reply.into_bytes().into_boxed_slice());
    let liar = hostile_server(reply).await;
    let settings = s3::settings(creds.path(), &liar, SECRET_KEY, 2000);
    let store = Store::open(&loc, &settings.object_store).expect("open");
    let e = store
        .get("tile/0/000", 100)
        .await
        .expect_err("over the bound");
    assert!(matches!(e, BlobError::TooLarge { max: 100, .. }), "{e}");

    // Nothing listening: unreachable, naming the setting to check.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let settings = s3::settings(
        creds.path(),
        &format!("http://127.0.0.1:{port}"),
        SECRET_KEY,
        2000,
    );
    let store = Store::open(&loc, &settings.object_store).expect("open");
    let e = store.head("checkpoint").await.expect_err("closed");
    assert!(matches!(e, BlobError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("object_store.endpoint"), "{e}");
    no_credentials(&e.to_string(), SECRET_KEY);
}

#[tokio::test]
async fn no_credentials_is_refused_at_open_naming_where_they_come_from() {
    let mut settings = event_audit::config::Settings::default().object_store;
    settings.endpoint = Some(Server::S3sFs.endpoint());
    settings.access_key_id_file = Some("/nonexistent/event-audit/key-id".into());
    settings.secret_access_key_file = Some("/nonexistent/event-audit/secret".into());
    let loc = Location::parse("s3://ea-test-none/x").expect("location");
    let e = Store::open(&loc, &settings).expect_err("no credentials");
    let text = e.to_string();
    assert!(text.contains("/nonexistent/event-audit/key-id"), "{text}");
}
