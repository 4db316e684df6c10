//! The S3-compatible servers the store's tests run against, started by `scripts/services.sh`:
//! s3s-fs on 127.0.0.1:9000 (a directory behind the S3 API, checking SigV4 with the test
//! credentials below; `EVENT_AUDIT_TEST_S3` overrides its address) and moto on 127.0.0.1:9001
//! (in memory, emulating Object Lock; `EVENT_AUDIT_TEST_S3_LOCK`). Each test makes a bucket of
//! its own, and its guard removes the keys the test named and the bucket, also on a panic.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use event_audit::config::Settings;
use event_audit::test_support::blobs::{Location, Store};

/// The test servers' credentials (scripts/services.sh starts s3s-fs with the same).
pub(crate) const ACCESS_KEY: &str = "event-audit-test";
pub(crate) const SECRET_KEY: &str = "event-audit-test-secret";

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Server {
    /// s3s-fs: conditional put, SigV4 checked, no Object Lock.
    S3sFs,
    /// moto: conditional put and Object Lock emulated, signatures not checked.
    Moto,
}

impl Server {
    pub(crate) fn endpoint(self) -> String {
        let (var, default) = match self {
            Server::S3sFs => ("EVENT_AUDIT_TEST_S3", "http://127.0.0.1:9000"),
            Server::Moto => ("EVENT_AUDIT_TEST_S3_LOCK", "http://127.0.0.1:9001"),
        };
        std::env::var(var).unwrap_or_else(|_| default.into())
    }
}

/// The object store settings of a test: `endpoint`, path-style, the credentials in files of
/// `dir` (the secret given), a timeout of `timeout_ms`.
pub(crate) fn settings(
    dir: &std::path::Path,
    endpoint: &str,
    secret: &str,
    timeout_ms: u64,
) -> event_audit::config::Settings {
    let id = dir.join("access-key-id");
    let key = dir.join("secret-access-key");
    std::fs::write(&id, ACCESS_KEY).expect("write the key id file");
    std::fs::write(&key, secret).expect("write the secret file");
    let mut s = Settings::default();
    s.object_store.endpoint = Some(endpoint.to_owned());
    s.object_store.path_style = true;
    s.object_store.access_key_id_file = Some(id);
    s.object_store.secret_access_key_file = Some(key);
    s.object_store.request_timeout = event_audit::config::Dur::millis(timeout_ms);
    s.validate().expect("valid settings");
    s
}

/// A bucket name no other test (or run) uses.
pub(crate) fn unique_bucket() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "ea-test-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A bucket of this test's, removed with the keys it named when dropped.
pub(crate) struct TestBucket {
    pub store: Store,
    /// Where it is, for a second store on the same bucket.
    pub location: Location,
    pub settings: Settings,
    pub server: Server,
    keys: Mutex<Vec<String>>,
    _creds: tempfile::TempDir,
}

impl TestBucket {
    /// A new bucket on `server` (with Object Lock when `lock`), under `prefix/`.
    pub(crate) async fn new(server: Server, lock: bool) -> TestBucket {
        let creds = tempfile::tempdir().expect("tempdir");
        let settings = settings(creds.path(), &server.endpoint(), SECRET_KEY, 10_000);
        let location =
            Location::parse(&format!("s3://{}/log/tiles", unique_bucket())).expect("location");
        let store = Store::open(&location, &settings.object_store).expect("open the store");
        let Store::S3(s3) = &store else {
            unreachable!("an s3:// location opens an S3 store")
        };
        s3.create_bucket(lock).await.unwrap_or_else(|e| {
            panic!("{e}\n(is the test server up? scripts/services.sh starts it)")
        });
        TestBucket {
            store,
            location,
            settings,
            server,
            keys: Mutex::new(Vec::new()),
            _creds: creds,
        }
    }

    /// The bucket's location, `s3://bucket/log/tiles/`.
    pub(crate) fn url(&self) -> String {
        self.location.to_string()
    }

    /// The bucket's name.
    pub(crate) fn name(&self) -> String {
        match &self.location {
            Location::S3 { bucket, .. } => bucket.clone(),
            Location::Dir(_) => unreachable!("a test bucket is in S3"),
        }
    }

    /// A settings file in `dir` holding this bucket's `[object_store]` (for the commands).
    pub(crate) fn config_file(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let o = &self.settings.object_store;
        let text = format!(
            "[object_store]\nendpoint = {:?}\npath_style = true\naccess_key_id_file = {:?}\nsecret_access_key_file = {:?}\n",
            o.endpoint.as_deref().unwrap_or_default(),
            o.access_key_id_file.as_ref().expect("key id file"),
            o.secret_access_key_file.as_ref().expect("secret file"),
        );
        let path = dir.join(format!("{}.toml", self.name()));
        std::fs::write(&path, text).expect("write the settings file");
        path
    }

    /// Remembers every key a command wrote under the prefix, to be removed at the end: listed
    /// by moto (which answers an unsigned list), or read from s3s-fs's directory.
    pub(crate) async fn name_every_key(&self) {
        let bucket = self.name();
        let keys: Vec<String> = match self.server {
            Server::Moto => {
                let url = format!(
                    "{}/{bucket}?list-type=2&max-keys=100000",
                    self.server.endpoint()
                );
                let xml = reqwest::get(&url)
                    .await
                    .expect("list")
                    .text()
                    .await
                    .expect("list body");
                xml.split("<Key>")
                    .skip(1)
                    .filter_map(|k| k.split("</Key>").next())
                    .map(str::to_owned)
                    .collect()
            }
            Server::S3sFs => {
                let root = std::path::Path::new("/var/lib/event-audit-s3s").join(&bucket);
                let (mut out, mut todo) = (Vec::new(), vec![root.clone()]);
                while let Some(d) = todo.pop() {
                    for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                        let path = e.path();
                        if path.is_dir() {
                            todo.push(path);
                        } else if let Ok(rel) = path.strip_prefix(&root) {
                            out.push(rel.to_string_lossy().into_owned());
                        }
                    }
                }
                out
            }
        };
        for k in keys {
            if let Some(rel) = k.strip_prefix("log/tiles/") {
                self.key(rel);
            }
        }
    }

    /// `key`, remembered to be removed at the end.
    pub(crate) fn key(&self, key: &str) -> String {
        self.keys.lock().expect("keys").push(key.to_owned());
        key.to_owned()
    }

    /// Removes the keys (every version of each, in a bucket that keeps them) and the bucket;
    /// also done on drop, which cannot report a failure.
    pub(crate) async fn remove(&self) -> Result<(), String> {
        let keys = std::mem::take(&mut *self.keys.lock().expect("keys"));
        for k in keys {
            for _ in 0..16 {
                if self
                    .store
                    .head(&k)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_none()
                {
                    break;
                }
                self.store.delete(&k).await.map_err(|e| e.to_string())?;
            }
        }
        let Store::S3(s3) = &self.store else {
            return Ok(());
        };
        s3.delete_bucket().await.map_err(|e| e.to_string())
    }
}

impl Drop for TestBucket {
    fn drop(&mut self) {
        let store = Store::open(&self.location, &self.settings.object_store);
        let keys = std::mem::take(&mut *self.keys.lock().unwrap_or_else(|p| p.into_inner()));
        let Ok(Store::S3(s3)) = store else { return };
        // Its own thread and runtime: the test's runtime may be shutting down.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let store = Store::S3(s3);
                for k in keys {
                    for _ in 0..16 {
                        if !matches!(store.head(&k).await, Ok(Some(_))) {
                            break;
                        }
                        let _ = store.delete(&k).await;
                    }
                }
                if let Store::S3(s3) = &store {
                    let _ = s3.delete_bucket().await;
                }
            });
        })
        .join();
    }
}
