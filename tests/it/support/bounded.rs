//! The binary under a memory ceiling, watched: [`run`] starts `event-audit` with its address
//! space capped (`prlimit --as`, and `MALLOC_ARENA_MAX=2` so that glibc's per-thread arenas do
//! not reserve the cap away) under GNU `time`, which reports its own peak resident size (a child
//! of this test binary would count the test's pages too), kills it past a deadline (or stops it
//! with SIGTERM at a set time, for `--follow`), and says how long it ran. [`Sentinel`] is a file outside a folder
//! under test, watched with inotify: any open or read of it by anyone is seen.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::BIN;

/// How a bounded run ended.
#[derive(Debug)]
pub(crate) struct Bounded {
    /// The exit code, `None` when a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it, and what it printed (shown when an assertion fails).
    #[allow(dead_code)]
    pub signal: Option<i32>,
    #[allow(dead_code)]
    pub stdout: String,
    pub stderr: String,
    /// Its peak resident set size, KiB.
    pub max_rss_kib: u64,
    pub elapsed: Duration,
    /// Whether the deadline killed it.
    pub killed: bool,
}

impl Bounded {
    /// The one line a refusal prints: `event-audit: …`, alone on stderr.
    pub(crate) fn one_line(&self) -> &str {
        let line = self.stderr.trim_end();
        assert!(
            line.starts_with("event-audit: ") && !line.contains('\n'),
            "not one line on stderr: {self:?}"
        );
        line
    }

    /// Asserts exit 2 with one line saying `says`, under `mib` MiB resident, within `secs`.
    pub(crate) fn refused(&self, says: &str, mib: u64, secs: u64) {
        assert_eq!(self.code, Some(2), "{self:?}");
        let line = self.one_line();
        assert!(line.contains(says), "the line names {says:?}: {line}");
        self.within(mib, secs);
    }

    /// Asserts the run stayed under `mib` MiB resident and `secs` seconds.
    pub(crate) fn within(&self, mib: u64, secs: u64) {
        eprintln!(
            "MEASURED rss={} KiB t={:?} code={:?} err={}",
            self.max_rss_kib,
            self.elapsed,
            self.code,
            self.stderr.trim_end().lines().last().unwrap_or_default()
        );
        assert!(
            self.max_rss_kib < mib * 1024,
            "peak resident {} KiB, over {mib} MiB: {self:?}",
            self.max_rss_kib
        );
        assert!(
            !self.killed && self.elapsed < Duration::from_secs(secs),
            "ran {:?}, more than {secs} s: {self:?}",
            self.elapsed
        );
    }
}

/// What a bounded run is given.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The address space cap, bytes.
    pub address_space: u64,
    /// Killed (SIGKILL) past this.
    pub deadline: Duration,
    /// Stopped with SIGTERM at this time, if set.
    pub stop_after: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            address_space: 1 << 30,
            deadline: Duration::from_secs(60),
            stop_after: None,
        }
    }
}

/// `event-audit ARGS` under `limits` (no `EVENT_AUDIT_*` of the environment, stdin closed), in
/// a blocking thread so that the test's own servers keep serving meanwhile.
pub(crate) async fn run(args: &[&str], limits: Limits) -> Bounded {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || run_blocking(&args, &limits))
        .await
        .expect("the bounded run")
}

fn run_blocking(args: &[String], limits: &Limits) -> Bounded {
    // GNU time forks the capped binary from its own small process and reports that child's peak
    // resident size: a child forked from this (large) test binary would count the test's pages
    // in its `ru_maxrss`. `prlimit` caps the address space, then execs the binary.
    let report = tempfile::NamedTempFile::new().expect("a report file");
    let mut cmd = Command::new("/usr/bin/time");
    for (k, _) in std::env::vars() {
        if k.starts_with("EVENT_AUDIT_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg("prlimit")
        .arg(format!("--as={}", limits.address_space))
        .arg("--")
        .arg(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .expect("spawn event-audit under time and prlimit");
    let pid = child.id();
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut out);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let (mut killed, mut stopped) = (false, false);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the run") {
            break status;
        }
        let t = started.elapsed();
        if limits.stop_after.is_some_and(|s| t >= s) && !stopped {
            // To the binary itself (time would die of it and leave the binary running).
            for c in children(pid) {
                // SAFETY: signalling a process of the run's own group.
                unsafe { libc::kill(c, libc::SIGTERM) };
            }
            stopped = true;
        }
        if t >= limits.deadline && !killed {
            // SAFETY: the run's own process group (time and the binary).
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let said = std::fs::read_to_string(report.path()).unwrap_or_default();
    let signal = said
        .lines()
        .find_map(|l| l.strip_prefix("Command terminated by signal "))
        .and_then(|n| n.trim().parse().ok());
    let code = if signal.is_some() || (killed && status.code().is_none()) {
        None
    } else {
        status.code()
    };
    Bounded {
        code,
        signal: signal.or(if killed { Some(libc::SIGKILL) } else { None }),
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
        max_rss_kib: said
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(u64::MAX),
        elapsed,
        killed,
    }
}

/// The children of process `pid`.
fn children(pid: u32) -> Vec<libc::pid_t> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A file watched for any open or read (inotify), to show a reader never touched it.
pub(crate) struct Sentinel {
    fd: libc::c_int,
}

impl Sentinel {
    /// Writes `body` at `path` and starts watching it.
    pub(crate) fn new(path: &Path, body: &[u8]) -> Sentinel {
        std::fs::write(path, body).expect("write the sentinel");
        // SAFETY: plain system calls; the path is NUL-terminated.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            assert!(fd >= 0, "inotify_init1");
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
            let w = libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_OPEN | libc::IN_ACCESS);
            assert!(w >= 0, "inotify_add_watch");
            Sentinel { fd }
        }
    }

    /// Whether anything opened or read the file since it was written (or the last call).
    pub(crate) fn touched(&self) -> bool {
        let mut buf = [0u8; 4096];
        // SAFETY: reading into a local buffer of the length passed.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
        n > 0
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns.
        unsafe { libc::close(self.fd) };
    }
}
