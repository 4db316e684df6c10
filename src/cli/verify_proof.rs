//! `event-audit verify-proof BUNDLE --public-key FILE`: checks an evidence bundle offline (no
//! database, no NATS): exit 0 proven, 1 rejected (naming what failed), 2 unreadable input.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::audit::bundle;
use crate::audit::note::PublicKey;

/// Options of `event-audit verify-proof`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyProofArgs {
    /// The evidence bundle (JSON, as `prove` writes it); `-` reads stdin.
    pub bundle: PathBuf,
    /// The log's public key file (`<name>+<key id>+<base64 key>`).
    #[arg(long)]
    pub public_key: PathBuf,
}

pub fn run(args: VerifyProofArgs) -> anyhow::Result<ExitCode> {
    let key_text = std::fs::read_to_string(&args.public_key)
        .with_context(|| format!("reading the public key {}", args.public_key.display()))?;
    let key = PublicKey::parse(key_text.trim())
        .with_context(|| format!("the public key {}", args.public_key.display()))?;
    let text = if args.bundle.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the bundle from stdin")?
    } else {
        std::fs::read_to_string(&args.bundle)
            .with_context(|| format!("reading the bundle {}", args.bundle.display()))?
    };
    match bundle::check(&text, &key) {
        Ok(p) => {
            println!("{}", serde_json::to_string(&p)?);
            eprintln!(
                "OK: {} entr{} proven against {} at tree size {}",
                p.entries,
                if p.entries == 1 { "y" } else { "ies" },
                p.origin,
                p.tree_size
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("REJECTED: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
