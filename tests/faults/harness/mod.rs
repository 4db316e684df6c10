//! Fault-suite harness: a TCP fault proxy, a private PostgreSQL and a private nats-server.
//!
//! Every server here is started by the test itself, on a free port of 127.0.0.1, with its data in
//! a temporary directory; the machine's shared PostgreSQL and NATS are never touched. Processes
//! are ended only by the PID this harness started (never by name), also when a test panics: each
//! server type has a `Drop` that kills what it started and removes its directory.
//!
//! - [`proxy::FaultProxy`]: pass, refuse, blackhole, stall, latency, reset, switchable at run time.
//! - [`postgres::PrivatePostgres`]: `initdb` + `postgres` as the `postgres` OS user.
//! - [`nats::PrivateNats`]: `nats-server` with JetStream and optional auth (user/password, token,
//!   NKey, JWT `.creds`) and TLS (own CA, optional client certificates).
//! - [`cluster::NatsCluster`]: three of those forming a JetStream cluster on loopback.
//! - [`s3s::PrivateS3`]: an `s3s-fs` of the test's (a temporary directory, a free port).
//! - [`tls_proxy::TlsProxy`]: HTTPS in front of a plain HTTP server (the REST simulator,
//!   s3s-fs), with a certificate of the test's CA.
#![allow(dead_code)]

pub(crate) mod cluster;
pub(crate) mod nats;
pub(crate) mod postgres;
pub(crate) mod proxy;
pub(crate) mod s3s;
pub(crate) mod tls_proxy;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that was free a moment ago, outside the ephemeral range (see
/// `common::free_port`).
pub(crate) fn free_port() -> u16 {
    crate::common::free_port()
}

/// Where servers keep their data: /dev/shm when it is a world-writable tmpfs (writes there are
/// 10-25x faster than to /tmp on this machine's disk), else the system's temporary directory.
/// Each server removes its own directory on `Drop`.
pub(crate) fn scratch_base() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shm = Path::new("/dev/shm");
    match std::fs::metadata(shm) {
        Ok(m) if m.is_dir() && m.permissions().mode() & 0o1777 == 0o1777 => shm.to_path_buf(),
        _ => std::env::temp_dir(),
    }
}

/// Spawns `cmd` with stdin closed and stdout/stderr appended to the file `log`.
pub(crate) fn spawn_logged(mut cmd: Command, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the server log");
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {:?}: {e}", cmd.get_program()))
}

/// True once a server on 127.0.0.1:`port` sends `banner` first (nats-server's `INFO `, sent in
/// plain text on 2.9 also when TLS is on).
pub(crate) async fn greets(port: u16, banner: &[u8]) -> bool {
    use tokio::io::AsyncReadExt;
    let attempt = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        let mut buf = vec![0u8; banner.len()];
        s.read_exact(&mut buf).await?;
        Ok::<_, std::io::Error>(buf == banner)
    };
    let limit = Duration::from_millis(500);
    matches!(tokio::time::timeout(limit, attempt).await, Ok(Ok(true)))
}

/// Sends `signal` (a name such as `TERM`, `INT`, `QUIT`, `KILL`) to one PID, with `kill(1)`.
/// Returns whether the signal was delivered.
pub(crate) fn signal(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Waits (async, polling) until `child` has exited; `false` if it still runs after `limit`.
pub(crate) async fn wait_exit(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Blocking variant of [`wait_exit`], for `Drop`.
pub(crate) fn wait_exit_blocking(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends a child for good: `first` signal, up to `grace` to exit, then SIGKILL and reap.
pub(crate) fn terminate_blocking(child: &mut Child, first: &str, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    signal(child.id(), first);
    if !wait_exit_blocking(child, grace) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The direct children of `pid` as `(pid, start time)` pairs, read from `/proc`. The start time
/// lets a later kill make sure the PID still names the same process.
pub(crate) fn children_of(pid: u32) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, start)) = stat_of(child) {
            if ppid == pid {
                out.push((child, start));
            }
        }
    }
    out
}

/// `(parent pid, start time in clock ticks)` of a process, from `/proc/PID/stat`.
pub(crate) fn stat_of(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): ppid is field 4, starttime field 22.
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// Whether `pid` names a live process (a zombie waiting to be reaped counts as gone).
pub(crate) fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some(s) if s != "Z" && s != "X")
}

/// SIGKILLs processes listed by [`children_of`], skipping any PID reused since.
pub(crate) fn kill_listed(procs: &[(u32, u64)]) {
    for &(pid, start) in procs {
        if stat_of(pid).map(|(_, s)| s) == Some(start) {
            signal(pid, "KILL");
        }
    }
}

/// The last `max` bytes of a log file, for failure messages.
pub(crate) fn tail(path: &Path, max: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let from = text.len().saturating_sub(max);
    String::from_utf8_lossy(&text[from..]).into_owned()
}

/// Percent-encodes everything but RFC 3986 unreserved characters (for user info in URLs).
pub(crate) fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A random alphanumeric secret of `len` characters (passwords, tokens).
pub(crate) fn random_secret(len: usize) -> String {
    use rand::distributions::{Alphanumeric, DistString};
    Alphanumeric.sample_string(&mut rand::thread_rng(), len)
}

/// Writes TLS material into `dir`, all PEM: `ca.pem` (a fresh CA), `server-cert.pem` and
/// `server-key.pem` (for 127.0.0.1 and localhost), `client-cert.pem` and `client-key.pem`
/// (client authentication), both signed by the CA.
pub(crate) fn write_tls_files(dir: &Path) {
    write_tls_files_of(dir, "fault suite test CA")
}

/// As [`write_tls_files`], the CA named `ca_name` (a man in the middle's, in the TLS cases).
pub(crate) fn write_tls_files_of(dir: &Path, ca_name: &str) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose as Eku};
    use rcgen::{IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).expect("self-sign the CA");
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |names: Vec<String>, eku: Eku, cn: &str| {
        let key = KeyPair::generate().expect("leaf key");
        let mut params = CertificateParams::new(names).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        let cert = params.signed_by(&key, &issuer).expect("sign leaf");
        (cert.pem(), key.serialize_pem())
    };
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let (server_cert, server_key) = leaf(names, Eku::ServerAuth, "127.0.0.1");
    let (client_cert, client_key) = leaf(vec![], Eku::ClientAuth, "fault-suite-client");
    for (file, pem) in [
        ("ca.pem", ca_cert.pem()),
        ("server-cert.pem", server_cert),
        ("server-key.pem", server_key),
        ("client-cert.pem", client_cert),
        ("client-key.pem", client_key),
    ] {
        std::fs::write(dir.join(file), pem).expect("write a PEM file");
    }
}
