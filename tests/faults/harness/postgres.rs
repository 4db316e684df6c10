//! A private PostgreSQL cluster for one test, run as the `postgres` OS user on a free port of
//! 127.0.0.1, its data in a temporary directory (a copy of a cluster made once by `initdb`).
//!
//! The server is started directly (setuid to `postgres` in the child, no wrapper process), so the
//! PID kept is the postmaster's own. `stop` is a fast shutdown (SIGINT: sessions are ended; a smart
//! SIGTERM would wait for every pooled connection to close), `kill` is SIGKILL of the postmaster
//! and of its children (a crash), `restart` starts again on the same port and data directory.
//! `standby` makes a hot standby of a running server (`pg_basebackup -R`), `promote` ends its
//! recovery. `Drop` does an immediate shutdown (SIGQUIT, then SIGKILL), frees a leftover System V segment
//! after a crash, and removes the directory.
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};

use super::{
    children_of, free_port, kill_listed, random_secret, signal, spawn_logged, tail, url_encode,
    wait_exit,
};

/// Where Debian puts the PostgreSQL 15 binaries.
pub(crate) const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// How clients over TCP authenticate.
#[derive(Clone, Debug, Default)]
pub(crate) enum PgAuth {
    /// `trust` for everyone; `url()` connects as `postgres` without a password.
    #[default]
    Trust,
    /// `scram-sha-256` over TCP; `user` is created as a superuser with `password`, and `url()`
    /// carries both. The Unix socket stays `trust` for the harness's own setup.
    Scram { user: String, password: String },
}

#[derive(Clone, Debug, Default)]
pub(crate) struct PgOptions {
    pub auth: PgAuth,
    /// Extra `-c name=value` settings, e.g. `("statement_timeout", "5s")`.
    pub settings: Vec<(String, String)>,
    /// `Some(client_certs)`: TLS only over TCP (`ssl = on`, `hostssl` lines alone), with a
    /// server certificate from a CA of the test's ([`PrivatePostgres::tls_dir`]); `true` also
    /// requires a client certificate that CA signed (`clientcert=verify-ca`).
    pub tls: Option<bool>,
}

pub(crate) struct PrivatePostgres {
    dir: tempfile::TempDir,
    port: u16,
    options: PgOptions,
    child: Option<Child>,
    /// Set by `kill`, cleared by a start: the postmaster left its System V segment behind.
    crashed: bool,
    /// How long `start` took, initdb and setup included.
    pub startup: Duration,
    /// How long the last launch of the server took (until it accepted connections).
    pub server_start: Duration,
}

impl PrivatePostgres {
    /// A trust-authenticated cluster.
    pub(crate) async fn start() -> PrivatePostgres {
        Self::start_with(PgOptions::default()).await
    }

    pub(crate) async fn start_with(options: PgOptions) -> PrivatePostgres {
        let began = Instant::now();
        let dir = postgres_dir("fault-pg-");
        copy_template(&dir.path().join("data"));
        let host_auth = match options.auth {
            PgAuth::Trust => "trust",
            PgAuth::Scram { .. } => "scram-sha-256",
        };
        let (host, host_auth) = match options.tls {
            None => ("host", host_auth.to_owned()),
            Some(false) => ("hostssl", host_auth.to_owned()),
            Some(true) => ("hostssl", format!("{host_auth} clientcert=verify-ca")),
        };
        let hba = format!(
            "local all all trust\n{host} all all 127.0.0.1/32 {host_auth}\n{host} all all ::1/128 {host_auth}\n\
             local replication all trust\n{host} replication all 127.0.0.1/32 {host_auth}\n"
        );
        std::fs::write(dir.path().join("data/pg_hba.conf"), hba).expect("write pg_hba.conf");
        let mut options = options;
        if options.tls.is_some() {
            let tls = dir.path().join("tls");
            std::fs::create_dir(&tls).expect("create the TLS directory");
            super::write_tls_files(&tls);
            let (uid, gid) = postgres_ids();
            for f in ["", "server-key.pem", "server-cert.pem", "ca.pem"] {
                std::os::unix::fs::chown(tls.join(f), Some(uid), Some(gid)).expect("chown");
            }
            use std::os::unix::fs::PermissionsExt;
            let key = tls.join("server-key.pem");
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            for (name, file) in [
                ("ssl", "on".to_owned()),
                (
                    "ssl_cert_file",
                    tls.join("server-cert.pem").display().to_string(),
                ),
                ("ssl_key_file", key.display().to_string()),
                ("ssl_ca_file", tls.join("ca.pem").display().to_string()),
            ] {
                options.settings.push((name.to_owned(), file));
            }
        }
        let mut pg = PrivatePostgres::unstarted(dir, options);
        pg.launch().await;
        if let PgAuth::Scram { user, password } = &pg.options.auth {
            let verb = if user == "postgres" {
                "ALTER"
            } else {
                "CREATE"
            };
            let sql = format!(
                "{verb} ROLE \"{}\" LOGIN SUPERUSER PASSWORD '{}'",
                user.replace('"', "\"\""),
                password.replace('\'', "''")
            );
            pg.execute(&sql).await;
        }
        pg.startup = began.elapsed();
        pg
    }

    /// The server's value before its first launch, on a fresh free port.
    fn unstarted(dir: tempfile::TempDir, options: PgOptions) -> PrivatePostgres {
        PrivatePostgres {
            dir,
            port: free_port(),
            options,
            child: None,
            crashed: false,
            startup: Duration::ZERO,
            server_start: Duration::ZERO,
        }
    }

    /// Starts the postmaster and waits until it accepts connections (at most 30 s).
    async fn launch(&mut self) {
        let began = Instant::now();
        let mut cmd = as_postgres(Command::new(format!("{PG_BIN}/postgres")));
        cmd.arg("-D")
            .arg(self.data_dir())
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(self.socket_dir())
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "full_page_writes=off", "-c", "synchronous_commit=off"])
            // Dynamic shared memory as files in the data directory: nothing left in /dev/shm.
            .args(["-c", "dynamic_shared_memory_type=mmap"]);
        for (name, value) in &self.options.settings {
            cmd.args(["-c", &format!("{name}={value}")]);
        }
        let child = spawn_logged(cmd, &self.log_path());
        let pid = child.id();
        self.child = Some(child);
        self.crashed = false;
        let pid_file = self.data_dir().join("postmaster.pid");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // Line 1 is the PID, line 8 the status: "ready" once connections are accepted.
            let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            // A hot standby says "ready" once it takes read-only connections.
            if lines.first() == Some(&pid.to_string().as_str())
                && matches!(lines.get(7).map(|s| s.trim()), Some("ready" | "standby"))
            {
                break;
            }
            let exited = matches!(self.child.as_mut().unwrap().try_wait(), Ok(Some(_)));
            assert!(
                !exited && Instant::now() < deadline,
                "postgres did not become ready; its log:\n{}",
                tail(&self.log_path(), 4000)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.server_start = began.elapsed();
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The postmaster's PID while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub(crate) fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// With TLS on: the CA, the server's and a client's certificates and keys (PEM files, see
    /// [`super::write_tls_files`]).
    pub(crate) fn tls_dir(&self) -> PathBuf {
        self.dir.path().join("tls")
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    /// The server's log so far (at most the last 64 KiB).
    pub(crate) fn log(&self) -> String {
        tail(&self.log_path(), 64 * 1024)
    }

    /// A URL for database `postgres` over TCP, with the credentials of the configured auth.
    pub(crate) fn url(&self) -> String {
        self.url_at(self.addr(), "postgres")
    }

    /// The same URL, but through `proxy` (e.g. a [`super::proxy::FaultProxy`]).
    pub(crate) fn url_via(&self, proxy: SocketAddr) -> String {
        self.url_at(proxy, "postgres")
    }

    /// A URL for database `db` at `addr` with the configured credentials.
    pub(crate) fn url_at(&self, addr: SocketAddr, db: &str) -> String {
        let user = match &self.options.auth {
            PgAuth::Trust => "postgres".to_string(),
            PgAuth::Scram { user, password } => {
                format!("{}:{}", url_encode(user), url_encode(password))
            }
        };
        format!("postgres://{user}@{addr}/{db}")
    }

    /// A superuser connection over the Unix socket (trust), whatever the TCP auth.
    pub(crate) async fn admin(&self) -> PgConnection {
        PgConnectOptions::new()
            .socket(self.socket_dir())
            .port(self.port)
            .username("postgres")
            .database("postgres")
            .disable_statement_logging()
            .connect()
            .await
            .expect("connect over the Unix socket")
    }

    /// Runs one statement as superuser (e.g. `CREATE DATABASE`).
    pub(crate) async fn execute(&self, sql: &str) {
        let mut conn = self.admin().await;
        sqlx::raw_sql(sql)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.close().await;
    }

    /// Fast shutdown by PID (SIGINT), waiting for the postmaster to exit.
    pub(crate) async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "INT");
            if !wait_exit(&mut child, Duration::from_secs(30)).await {
                panic!("postgres ignored SIGINT for 30 s:\n{}", self.log());
            }
        }
    }

    /// A crash: SIGKILL of the postmaster and of the processes it had forked.
    pub(crate) async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let children = children_of(child.id());
            let _ = child.kill();
            let _ = child.wait();
            kill_listed(&children);
            self.crashed = true;
            // Wait until the orphans are gone, so a restart finds the shared memory free.
            let deadline = Instant::now() + Duration::from_secs(5);
            while children.iter().any(|&(p, _)| super::alive(p)) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    /// A hot standby of this running server: `pg_basebackup -R` (which writes `standby.signal`
    /// and `primary_conninfo`) into a directory of its own, started on a port of its own,
    /// streaming from this one.
    pub(crate) async fn standby(&self) -> PrivatePostgres {
        let began = Instant::now();
        let dir = postgres_dir("fault-pg-standby-");
        let out = as_postgres(Command::new(format!("{PG_BIN}/pg_basebackup")))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast"])
            .output();
        succeeded("pg_basebackup", out);
        let mut pg = PrivatePostgres::unstarted(dir, self.options.clone());
        pg.launch().await;
        pg.startup = began.elapsed();
        pg
    }

    /// Promotes a standby to a primary, waiting (60 s at most) for the end of recovery.
    pub(crate) async fn promote(&self) {
        self.execute("SELECT pg_promote(true, 60)").await;
    }

    /// Stops (fast) if running, then starts again on the same port and data directory.
    pub(crate) async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    /// Starts again after `stop` or `kill` (crash recovery runs after a kill).
    pub(crate) async fn start_again(&mut self) {
        assert!(self.child.is_none(), "postgres is running");
        self.launch().await;
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let children = children_of(child.id());
            super::terminate_blocking(&mut child, "QUIT", Duration::from_secs(5));
            kill_listed(&children);
        }
        // After a SIGKILL the postmaster leaves its System V segment: its id is on line 7 of the
        // pid file ("key id"). Removed only after our own `kill` with no start since.
        let pid_file = self.data_dir().join("postmaster.pid");
        if let (true, Ok(text)) = (self.crashed, std::fs::read_to_string(pid_file)) {
            if let Some(id) = text
                .lines()
                .nth(6)
                .and_then(|l| l.split_whitespace().nth(1))
            {
                let _ = Command::new("ipcrm")
                    .args(["-m", id])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        // The TempDir removes the directory.
    }
}

/// A cluster made once by `initdb` (1 MB WAL segments) and kept in Cargo's temporary directory
/// for tests (`target/tmp`, removed by `cargo clean`); every start copies it (`cp -a`, ~0.05 s into
/// tmpfs) instead of running initdb again (~1-2 s here). Made under a unique name, then renamed into place, so
/// concurrent tests and test binaries never see half a template.
fn copy_template(data: &Path) {
    let base = template_base();
    let template = base.join("fault-suite-pg15-template-v2");
    if !template.join("PG_VERSION").exists() {
        let _ = std::fs::create_dir_all(&base);
        let partial = base.join(format!(
            "fault-suite-pg15-{}-{}",
            std::process::id(),
            random_secret(8)
        ));
        std::fs::create_dir(&partial).expect("create the template directory");
        let (uid, gid) = postgres_ids();
        std::os::unix::fs::chown(&partial, Some(uid), Some(gid)).expect("chown to postgres");
        let out = as_postgres(Command::new(format!("{PG_BIN}/initdb")))
            .args([
                "-D",
                "data",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--auth=trust",
            ])
            .args(["--no-sync", "--wal-segsize=1"])
            .current_dir(&partial)
            .output();
        succeeded("initdb", out);
        if std::fs::rename(partial.join("data"), &template).is_err() {
            assert!(
                template.join("PG_VERSION").exists(),
                "could not place the template"
            );
        }
        let _ = std::fs::remove_dir_all(&partial);
    }
    let out = Command::new("cp")
        .arg("-a")
        .arg(&template)
        .arg(data)
        .output()
        .expect("run cp");
    assert!(
        out.status.success(),
        "cp -a: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where the template lives: Cargo's `target/tmp` when the `postgres` user can reach it (kept
/// between runs), else the system's temporary directory.
fn template_base() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let reachable = |p: &Path| {
        p.ancestors().skip(1).all(|a| {
            let mode = std::fs::metadata(a).map(|m| m.permissions().mode());
            mode.is_ok_and(|m| m & 0o001 != 0)
        })
    };
    match option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from) {
        Some(p) if reachable(&p) => p,
        _ => std::env::temp_dir(),
    }
}

/// A temporary directory for a server's data, owned by the `postgres` OS user.
fn postgres_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(super::scratch_base())
        .expect("temporary directory");
    let (uid, gid) = postgres_ids();
    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown to postgres");
    dir
}

/// Asserts that the PostgreSQL tool `what` ran and succeeded, showing its output otherwise.
fn succeeded(what: &str, out: std::io::Result<std::process::Output>) {
    let out = out.unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `uid` and `gid` of the `postgres` OS user, from /etc/passwd.
pub(crate) fn postgres_ids() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"postgres")).then(|| (f[2].parse().ok(), f[3].parse().ok()))
        })
        .and_then(|(u, g)| Some((u?, g?)))
        .expect("a `postgres` OS user")
}

/// Runs `cmd` as the `postgres` user (we are root; std drops supplementary groups too).
fn as_postgres(mut cmd: Command) -> Command {
    let (uid, gid) = postgres_ids();
    cmd.uid(uid).gid(gid).env("HOME", "/var/lib/postgresql");
    cmd.env_remove("PGDATA").env_remove("PGPORT");
    cmd
}
