//! A private S3 server for one test: `s3s-fs` (SigV4 checked with the suite's test credentials)
//! on a free port of 127.0.0.1, its objects in a temporary directory; killed by its PID and the
//! directory removed on `Drop`. `None` when `s3s-fs` is not installed (`scripts/test-deps.sh`
//! installs it).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::{free_port, greets, spawn_logged, tail, terminate_blocking};
use crate::common::s3::{ACCESS_KEY, SECRET_KEY};

pub(crate) struct PrivateS3 {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

fn binary() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([home.join(".cargo/bin")])
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
}

impl PrivateS3 {
    pub(crate) async fn start() -> Option<PrivateS3> {
        let bin = binary()?;
        let dir = tempfile::Builder::new()
            .prefix("fault-s3s-")
            .tempdir_in(super::scratch_base())
            .expect("temporary directory");
        std::fs::create_dir(dir.path().join("data")).expect("data directory");
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(dir.path().join("data"));
        let log = dir.path().join("s3s.log");
        let child = spawn_logged(cmd, &log);
        let s3 = PrivateS3 {
            dir,
            port,
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !greets(port, b"").await {
            assert!(
                Instant::now() < deadline,
                "s3s-fs did not listen in 20 s:\n{}",
                tail(&log, 4000)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Some(s3)
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Where its buckets are kept.
    pub(crate) fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for PrivateS3 {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate_blocking(&mut child, "TERM", Duration::from_secs(5));
        }
    }
}
