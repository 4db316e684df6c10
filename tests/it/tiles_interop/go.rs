//! Go's checker of a tlog-tiles log (tests/go/tlogcheck, on golang.org/x/mod/sumdb/tlog and
//! sumdb/note from Debian's golang-golang-x-mod-dev), built once per test run in GOPATH mode
//! into the tests' temporary directory under `target/`, and run as a process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Where Debian's golang-golang-x-mod-dev installs the Go packages the checker imports.
const GOPATH: &str = "/usr/share/gocode";

/// How long one check may take (the largest log here takes well under a second).
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// What one run of the checker did.
#[derive(Debug)]
pub(crate) struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The JSON summary of a successful run (panics, with the run, on any other).
    pub(crate) fn summary(&self) -> serde_json::Value {
        assert_eq!(self.code, Some(0), "Go's tlog check failed: {self:#?}");
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!("the checker's summary is not JSON ({e}): {self:#?}");
        })
    }

    /// Asserts a failed run (exit 1) whose message names `what`.
    pub(crate) fn assert_refused(&self, what: &str) {
        assert_eq!(
            self.code,
            Some(1),
            "expected a refusal naming {what}: {self:#?}"
        );
        assert!(
            self.stderr.contains(what),
            "the refusal does not name {what}: {self:#?}"
        );
    }
}

/// The checker's binary, built on first use.
pub(crate) fn checker() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(build)
}

/// Builds tests/go/tlogcheck with the system's Go, GOPATH mode, its cache under `target/`.
fn build() -> PathBuf {
    let missing = "run scripts/test-deps.sh (it installs golang-go and golang-golang-x-mod-dev)";
    let version = std::process::Command::new("go").arg("version").output();
    assert!(
        version.as_ref().is_ok_and(|o| o.status.success()),
        "Go is not installed ({version:?}): {missing}"
    );
    let tlog = Path::new(GOPATH).join("src/golang.org/x/mod/sumdb/tlog");
    assert!(
        tlog.is_dir(),
        "{} is missing (golang-golang-x-mod-dev): {missing}",
        tlog.display()
    );
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tlogcheck");
    std::fs::create_dir_all(&out).expect("create the checker's build directory");
    // Built under a name of this process, then renamed over the last build: another test run
    // may be executing the old binary.
    let tmp = out.join(format!("tlogcheck.{}.tmp", std::process::id()));
    let bin = out.join("tlogcheck");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/tlogcheck");
    let built = std::process::Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOCACHE", out.join("cache"))
        .env("GOFLAGS", "")
        .env("GOENV", "off")
        .output()
        .expect("run go build");
    assert!(
        built.status.success(),
        "go build of {} failed: {}",
        src.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::rename(&tmp, &bin).expect("move the checker into place");
    bin
}

/// Runs the checker on a log (`tiles`: a base URL or a directory) with its verifier key file,
/// and an earlier checkpoint to prove consistent when given.
pub(crate) async fn check(tiles: &str, key: &Path, old: Option<&Path>) -> Run {
    let mut cmd = tokio::process::Command::new(checker());
    cmd.arg("-tiles").arg(tiles).arg("-key").arg(key);
    if let Some(old) = old {
        cmd.arg("-old").arg(old);
    }
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(CHECK_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("Go's tlog check of {tiles} ran over {CHECK_TIMEOUT:?}"))
        .expect("run the checker");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the checker's `-proof` mode: a C2SP tlog-proof file checked with `tlog.CheckRecord`
/// for the entry `entry` (hex), its checkpoint opened with the verifier key file `key`.
pub(crate) fn check_proof(proof: &Path, key: &Path, entry: &str) -> Run {
    let out = std::process::Command::new(checker())
        .arg("-proof")
        .arg(proof)
        .arg("-entry")
        .arg(entry)
        .arg("-key")
        .arg(key)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the checker");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
