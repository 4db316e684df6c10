//! `event-audit keygen --out PREFIX`: an Ed25519 key pair for signing checkpoints:
//! `PREFIX.key` (the private key, mode 0600, for the daemon's --signing-key-file) and
//! `PREFIX.pub` (the public key, for auditors). Existing files are never overwritten.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rand::RngCore;
use serde::Serialize;

use super::args::{ConfigArg, DatabaseArgs};
use super::witness_args::PlaceArgs;
use crate::audit::note::PrivateKey;
use crate::reconcile::manifest::write_private;

/// Options of `event-audit keygen`.
#[derive(clap::Args, Debug, Clone, Default, Serialize)]
pub struct KeygenArgs {
    #[command(flatten)]
    #[serde(skip)]
    pub config: ConfigArg,
    /// Writes PREFIX.key (private, 0600) and PREFIX.pub.
    #[arg(long)]
    #[serde(skip)]
    pub out: PathBuf,
    /// The database whose name makes the default key name (event-audit/<database name>).
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub witness: PlaceArgs,
}

fn with_ext(prefix: &std::path::Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

pub fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load(&args)?;
    let name = settings.witness.origin_for(&settings.database.url);
    let (private, public) = (with_ext(&args.out, ".key"), with_ext(&args.out, ".pub"));
    for p in [&private, &public] {
        anyhow::ensure!(
            !p.exists(),
            "{} exists; keygen never overwrites a key (choose another --out)",
            p.display()
        );
    }
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let key = PrivateKey::from_seed(&name, &seed)
        .with_context(|| format!("the key name `{name}` (set --origin)"))?;
    seed.fill(0);
    write_private(&private, format!("{}\n", key.encode()).as_bytes())
        .with_context(|| format!("writing {}", private.display()))?;
    std::fs::write(&public, format!("{}\n", key.public().encode()))
        .with_context(|| format!("writing {}", public.display()))?;
    eprintln!(
        "wrote {} (private, mode 0600: give it to the daemon as --signing-key-file) and {} (public: give it to auditors)",
        private.display(),
        public.display()
    );
    println!("{}", key.public().encode());
    Ok(ExitCode::SUCCESS)
}
