//! The witnessed log in tests: a key pair written to files, the checkpoint stream of a test
//! (deleted at the end), and `verify --public-key` against it as a subprocess.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use event_audit::tlog::note::PrivateKey;

use super::app::settings;
use super::cli::{event_audit, Run};
use super::{nats_url, TestDb, TestStream};
use event_audit::config::{Dur, Settings};
use event_audit::test_support::bus::Bus;
use event_audit::test_support::db::Db;
use event_audit::test_support::telemetry::metrics::Registry;
use event_audit::test_support::witnessed::metrics::WitnessMetrics;
use event_audit::test_support::witnessed::signer::Signer;

/// The daemon's settings for a test, signing with `key` into the checkpoint stream `stream` and
/// the directory `dir`, a checkpoint at the end of a run (the interval an hour).
pub(crate) fn signing(
    db: &TestDb,
    ts: &TestStream,
    key: &Path,
    stream: &str,
    dir: &Path,
) -> Settings {
    let mut s = settings(db, ts);
    s.witness.signing_key_file = Some(key.to_owned());
    s.witness.checkpoint_stream = stream.to_owned();
    s.witness.checkpoint_dir = Some(dir.to_owned());
    s.witness.checkpoint_interval = Dur::secs(3600);
    s
}

/// The witness stream of a test, deleted when dropped.
pub(crate) struct Witness(pub String);

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
pub(crate) fn write_keys(dir: &Path, name: &str, seed: u8) -> (PathBuf, PathBuf, PrivateKey) {
    let k = PrivateKey::from_seed(name, &[seed; 32]).expect("key");
    let (private, public) = (
        dir.join(format!("k{seed}.key")),
        dir.join(format!("k{seed}.pub")),
    );
    std::fs::write(&private, k.encode()).expect("write key");
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod 600");
    std::fs::write(&public, k.public().encode()).expect("write pub");
    (private, public, k)
}

/// The `run` arguments that sign checkpoints with `key` into `stream`, every second.
pub(crate) fn signing_args(key: &Path, stream: &str) -> Vec<String> {
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
pub(crate) async fn verify_witness(
    db_url: &str,
    public: &Path,
    stream: &str,
    extra: &[&str],
) -> Run {
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

/// A witness's cosigning key from a fixed seed, written to `dir/w<seed>.key` (0600) and `.pub`.
pub(crate) fn write_witness_key(
    dir: &Path,
    name: &str,
    seed: u8,
) -> (PathBuf, PathBuf, event_audit::tlog::cosign::WitnessSigner) {
    use std::os::unix::fs::PermissionsExt;
    let k = event_audit::tlog::cosign::WitnessSigner::from_seed(name, &[seed; 32]).expect("key");
    let (private, public) = (
        dir.join(format!("w{seed}.key")),
        dir.join(format!("w{seed}.pub")),
    );
    std::fs::write(&private, k.encode()).expect("write key");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(&public, k.public().encode()).expect("write pub");
    (private, public, k)
}

/// A C2SP tlog-policy file naming `witnesses` (vkey, submission URL) by their key names, in one group
/// of `quorum`, the policy's quorum.
pub(crate) fn write_policy(path: &Path, witnesses: &[(String, String)], quorum: usize) -> PathBuf {
    let mut text = String::from("# test witnesses\n");
    let mut names = Vec::new();
    for (vkey, url) in witnesses {
        let name = vkey.split('+').next().unwrap_or_default();
        text.push_str(&format!("witness {name} {vkey} {url}\n"));
        names.push(name.to_owned());
    }
    text.push_str(&format!(
        "group test-witnesses {quorum} {}\nquorum test-witnesses\n",
        names.join(" ")
    ));
    std::fs::write(path, text).expect("write policy");
    path.to_owned()
}

/// A witness process of its own for the log whose public key is `public` (its key `name` from
/// `seed`, its state under `dir`), and a policy file naming it alone with quorum 1.
pub(crate) async fn witness_with_policy(
    dir: &Path,
    name: &str,
    seed: u8,
    public: &Path,
) -> (WitnessProcess, PathBuf) {
    let (wkey, wpub, _) = write_witness_key(dir, name, seed);
    let witness = WitnessProcess::start(&wkey, &[public.to_owned()], &dir.join("witness")).await;
    let vkey = std::fs::read_to_string(&wpub)
        .expect("vkey")
        .trim()
        .to_owned();
    let policy = write_policy(&dir.join("policy"), &[(vkey, witness.url.clone())], 1);
    (witness, policy)
}

/// `event-audit witness serve` as a process of its own (the point: a witness that shares
/// nothing with the daemon), ended by its PID when dropped.
pub(crate) struct WitnessProcess {
    child: Option<tokio::process::Child>,
    pub addr: String,
    pub url: String,
    key: PathBuf,
    logs: Vec<PathBuf>,
    pub state_dir: PathBuf,
    pub stderr: PathBuf,
}

impl WitnessProcess {
    /// Starts a witness with `key`, trusting `logs`, keeping its state in `state_dir`.
    pub(crate) async fn start(key: &Path, logs: &[PathBuf], state_dir: &Path) -> WitnessProcess {
        let mut w = WitnessProcess {
            child: None,
            addr: super::free_addr(),
            url: String::new(),
            key: key.to_owned(),
            logs: logs.to_vec(),
            state_dir: state_dir.to_owned(),
            stderr: state_dir.with_extension("log"),
        };
        w.url = format!("http://{}", w.addr);
        w.spawn().await;
        w
    }

    async fn spawn(&mut self) {
        let mut cmd = super::bin();
        cmd.args(["witness", "serve", "--key"])
            .arg(&self.key)
            .arg("--state-dir")
            .arg(&self.state_dir)
            .args(["--listen", &self.addr]);
        for l in &self.logs {
            cmd.arg("--log-key").arg(l);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr)
            .expect("witness log");
        cmd.stdout(std::process::Stdio::null())
            .stderr(log)
            .env("RUST_LOG", "info")
            .kill_on_drop(true);
        self.child = Some(cmd.spawn().expect("start the witness"));
        let started = std::time::Instant::now();
        while tokio::net::TcpStream::connect(&self.addr).await.is_err() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the witness did not listen on {}: {}",
                self.addr,
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Ends the process (SIGKILL, by PID) and starts it again on the same address and state.
    pub(crate) async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }

    pub(crate) async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
    }

    /// Its process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// What it logged.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// A checkpoint signer in-process over the test's database, signing as `key` under `origin`
/// with the witness settings of `s` (its checkpoint stream and memory file), with its own
/// metrics and bus connection (returned for the test's checks).
pub(crate) async fn in_process_signer(
    db: &TestDb,
    key: PrivateKey,
    origin: &str,
    s: &Settings,
) -> (Signer, Arc<WitnessMetrics>, Bus) {
    let metrics = Arc::new(WitnessMetrics::new(&Registry::new()));
    let bus = Bus::connect(&s.nats).await.expect("nats");
    let signer = Signer::new(
        key,
        origin.to_owned(),
        Db::from_pool(db.pool.clone()),
        bus.clone(),
        &s.witness,
        metrics.clone(),
    )
    .expect("signer");
    (signer, metrics, bus)
}
