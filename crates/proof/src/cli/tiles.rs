//! `event-audit tiles fsck LOCATION --public-key FILE [--config FILE] [--timeout DURATION]`:
//! any copy of a log (a directory, `s3://BUCKET/PREFIX` with the settings file's
//! `[object_store]`, or a tlog-tiles URL such as a daemon's `http://host:port/log`; a mirror's
//! copy under any of them) checked tile by tile against its newest checkpoint
//! ([`crate::mirror::fsck`]). Exit 0 when whole; 1 naming each missing or wrong object on stdout;
//! 2 when it could not be checked (unreachable, no checkpoint, another key). A progress bar on
//! stderr when it is a terminal. No PostgreSQL, no NATS.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::Dur;
use crate::mirror::fsck::{self, FsckError};
use crate::mirror::source::Source;

/// `event-audit tiles ...`.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum TilesAction {
    /// Check a copy of a log (a directory, s3://BUCKET/PREFIX or a URL) tile by tile against its
    /// newest checkpoint: exit 0 whole, 1 naming each missing or wrong tile or bundle, 2 when it
    /// could not be checked.
    Fsck(FsckArgs),
}

/// Options of `event-audit tiles fsck`.
#[derive(clap::Args, Debug, Clone)]
pub struct FsckArgs {
    /// The copy: a directory, a `file://` URL, `s3://BUCKET/PREFIX`, or a log's tlog-tiles
    /// prefix `http(s)://host:port/log`; a mirror's copy of the key's log under it is found too.
    #[arg(value_name = "LOCATION")]
    pub location: String,
    /// The log's public key file (`<name>+<key id>+<base64 key>`).
    #[arg(long, value_name = "FILE")]
    pub public_key: PathBuf,
    /// A settings file: its `[object_store]` is read for an s3:// location.
    #[arg(long, env = "EVENT_AUDIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// How long each request may take (connecting and the whole body included).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: Dur,
}

pub fn run(action: TilesAction) -> anyhow::Result<ExitCode> {
    let TilesAction::Fsck(args) = action;
    let key = crate::keys::load_public_key(&args.public_key)?;
    // A settings file gives the object store's settings and the TLS of a log read over
    // HTTPS (`[witness]`'s tls_* files); without one, the defaults and the system's store.
    let settings = match &args.config {
        Some(_) => crate::config::layer::load(args.config.as_deref(), toml::Table::new())?,
        None => crate::config::Settings::default(),
    };
    let tls = Source::tls_of(&settings.witness);
    let source = Source::open(
        &args.location,
        args.timeout.into(),
        &settings.object_store,
        &tls,
    )
    .map_err(anyhow::Error::msg)?;
    let bar = progress_bar();
    let started = std::time::Instant::now();
    let report = super::runtime()?.block_on(fsck::fsck(&source, &key, |done, size| {
        bar.set_length(size);
        bar.set_position(done);
    }));
    bar.finish_and_clear();
    let report = match report {
        Ok(r) => r,
        Err(e @ FsckError::Unusable(_)) | Err(e @ FsckError::Key { .. }) => {
            anyhow::bail!("tiles fsck: {e}")
        }
    };
    let secs = started.elapsed().as_secs_f64();
    if report.whole() {
        let index = report.index.map_or_else(String::new, |(updates, labels)| {
            format!("; the account index's {updates} updates rebuild to the roots their records state ({labels} labels)")
        });
        println!(
            "{}: whole at tree size {}: {} tiles and bundles checked, the root is the signed one{index} ({:.1} s)",
            report.origin, report.size, report.checked, secs
        );
        return Ok(ExitCode::SUCCESS);
    }
    for line in &report.findings {
        println!("{line}");
    }
    if report.more > 0 {
        println!("... and {} more", report.more);
    }
    println!(
        "{}: NOT WHOLE at tree size {}: {} finding(s) among {} tiles and bundles checked",
        report.origin,
        report.size,
        report.findings.len() as u64 + report.more,
        report.checked
    );
    Ok(ExitCode::from(1))
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} leaves checked {bar:40} {pos}/{len} {per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}
