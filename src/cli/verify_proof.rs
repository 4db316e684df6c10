//! `event-audit verify-proof BUNDLE --public-key FILE [--origin NAME] [--witness-policy FILE]`:
//! checks an evidence bundle offline (no database, no NATS): exit 0 proven, 1 rejected (naming
//! what failed), 2 unusable input (a file, key or policy that cannot be read, a bundle whose
//! JSON or shape is not a bundle's).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::evidence::bundle::{self, Expect};
use crate::tlog::cosign::WitnessPolicy;
use crate::tlog::note::PublicKey;

/// Options of `event-audit verify-proof`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyProofArgs {
    /// The evidence bundle (JSON, as `prove` writes it); `-` reads stdin.
    pub(crate) bundle: PathBuf,
    /// The log's public key file (`<name>+<key id>+<base64 key>`).
    #[arg(long)]
    pub(crate) public_key: PathBuf,
    /// The log the checkpoint must be of (its origin line); another origin is a rejection.
    #[arg(long)]
    pub(crate) origin: Option<String>,
    /// A witness policy (`witness <vkey> <url>` lines, `quorum <n>`, default every witness):
    /// the checkpoint must carry the quorum of valid cosignatures by its witnesses.
    #[arg(long)]
    pub(crate) witness_policy: Option<PathBuf>,
}

/// Reads a witness policy file (`prove` and `verify-proof`).
pub(crate) fn read_policy(path: &Path) -> anyhow::Result<WitnessPolicy> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the witness policy {}", path.display()))?;
    WitnessPolicy::parse(&text).with_context(|| format!("the witness policy {}", path.display()))
}

fn inputs(args: &VerifyProofArgs) -> anyhow::Result<(PublicKey, Option<WitnessPolicy>, String)> {
    let key_text = std::fs::read_to_string(&args.public_key)
        .with_context(|| format!("reading the public key {}", args.public_key.display()))?;
    let key = PublicKey::parse(key_text.trim())
        .with_context(|| format!("the public key {}", args.public_key.display()))?;
    let policy = args
        .witness_policy
        .as_deref()
        .map(read_policy)
        .transpose()?;
    let text = if args.bundle.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the bundle from stdin")?
    } else {
        std::fs::read_to_string(&args.bundle)
            .with_context(|| format!("reading the bundle {}", args.bundle.display()))?
    };
    Ok((key, policy, text))
}

pub fn run(args: VerifyProofArgs) -> anyhow::Result<ExitCode> {
    let (key, policy, text) = match inputs(&args) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("UNUSABLE: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    let expect = Expect {
        origin: args.origin.clone(),
        policy,
    };
    match bundle::check(&text, Some(&key), &expect) {
        Ok(p) => {
            println!("{}", serde_json::to_string(&p)?);
            eprintln!(
                "OK: {} entr{} proven against {} at tree size {}{}",
                p.entries,
                if p.entries == 1 { "y" } else { "ies" },
                p.origin,
                p.tree_size,
                p.cosigned_by
                    .as_ref()
                    .map(|w| format!(", cosigned by {}", w.join(", ")))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.exit_code() == 2 => {
            eprintln!("UNUSABLE: {e}");
            Ok(ExitCode::from(2))
        }
        Err(e) => {
            eprintln!("REJECTED: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
