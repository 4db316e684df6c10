//! The witnessed log in tests: a key pair written to files, the checkpoint stream of a test
//! (deleted at the end), and `verify --public-key` against it as a subprocess.

use std::path::{Path, PathBuf};

use event_audit::audit::note::PrivateKey;

use super::cli::{event_audit, Run};
use super::nats_url;

/// The witness stream of a test, deleted when dropped.
pub struct Witness(pub String);

impl Drop for Witness {
    fn drop(&mut self) {
        let name = self.0.clone();
        super::blocking(move || {
            Box::pin(async move {
                let client = async_nats::connect(nats_url()).await.ok()?;
                async_nats::jetstream::new(client)
                    .delete_stream(&name)
                    .await
                    .ok()
                    .map(|_| ())
            })
        });
    }
}

/// A key pair named `name` from a fixed seed, written to `dir/k<seed>.key` and `.pub`.
pub fn write_keys(dir: &Path, name: &str, seed: u8) -> (PathBuf, PathBuf, PrivateKey) {
    let k = PrivateKey::from_seed(name, &[seed; 32]).expect("key");
    let (private, public) = (
        dir.join(format!("k{seed}.key")),
        dir.join(format!("k{seed}.pub")),
    );
    std::fs::write(&private, k.encode()).expect("write key");
    std::fs::write(&public, k.public().encode()).expect("write pub");
    (private, public, k)
}

/// The `run` arguments that sign checkpoints with `key` into `stream`, every second.
pub fn signing_args(key: &Path, stream: &str) -> Vec<String> {
    [
        "--signing-key-file",
        key.to_str().expect("utf-8"),
        "--checkpoint-stream",
        stream,
        "--checkpoint-interval",
        "1s",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// `event-audit verify --public-key PUBLIC --checkpoint-stream STREAM EXTRA…` (HOME in the
/// temporary directory).
pub async fn verify_witness(db_url: &str, public: &Path, stream: &str, extra: &[&str]) -> Run {
    let p = public.to_str().expect("utf-8");
    let nats = nats_url();
    let mut args = vec![
        "verify",
        "--database-url",
        db_url,
        "--public-key",
        p,
        "--checkpoint-stream",
        stream,
        "--nats-url",
        &nats,
    ];
    args.extend_from_slice(extra);
    // The default state file lives under HOME: keep it out of the real one.
    let home = std::env::temp_dir().join("event-audit-test-home");
    event_audit(&args, &[("HOME", home.to_str().expect("utf-8"))]).await
}
