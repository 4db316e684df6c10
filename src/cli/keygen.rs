//! `event-audit keygen --out PREFIX`: an Ed25519 key pair for signing checkpoints:
//! `PREFIX.key` (the private key, mode 0600, for the daemon's --signing-key-file) and
//! `PREFIX.pub` (the public key, for auditors and witnesses). With `--witness --name NAME`: a
//! witness's cosigning key (C2SP tlog-cosignature, signature type 0x04) for `witness serve`;
//! `--algorithm ml-dsa-44` makes either an ML-DSA-44 `subtree/v1` key (type 0x06): a witness's,
//! or the log's second key (`--ml-dsa-signing-key-file`, named like its Ed25519 key).
//! Files are created new (`O_EXCL`): an existing file or symlink is never written through.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rand::RngCore;

use super::args::{ConfigArg, DatabaseUrlArg};
use crate::files::create_new;
use crate::tlog::cosign::AnyWitnessSigner;
use crate::tlog::mldsa::MlDsaSigner;
use crate::tlog::note::PrivateKey;

/// Options of `event-audit keygen`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct KeygenArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    /// Writes PREFIX.key (private, 0600) and PREFIX.pub.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// A witness's cosigning key (for `witness serve`) instead of a log's signing key.
    #[arg(long = "witness", requires = "name")]
    pub(crate) cosigner: bool,
    /// The witness's name (a schema-less URL is recommended, e.g. witness.example.com/w1).
    #[arg(long, requires = "cosigner")]
    pub(crate) name: Option<String>,
    /// The signature algorithm: ed25519, or ml-dsa-44 (C2SP subtree/v1, recommended for new
    /// witnesses; for a log, its second key: give --origin the origin of its Ed25519 key).
    #[arg(long, value_enum, default_value_t = Algorithm::Ed25519)]
    pub(crate) algorithm: Algorithm,
    /// The database whose name goes into the default log origin
    /// (`event-audit/<database name>/<random>`).
    #[command(flatten)]
    pub(crate) database: DatabaseUrlArg,
    #[command(flatten)]
    pub(crate) witness: OriginArg,
}

/// A key's signature algorithm.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Algorithm {
    #[default]
    Ed25519,
    #[value(name = "ml-dsa-44")]
    MlDsa44,
}

options_group! {
    /// Of the witness options, keygen reads only the log's name.
    pub struct OriginArg = [
        "witness.origin" => |a| a
            .help("The key's name, which names the log in its checkpoints (default: event-audit/<database name>/<random>)"),
    ];
}

fn with_ext(prefix: &std::path::Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

pub(super) fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let (secret, public) = if args.cosigner {
        let name = args.name.clone().unwrap_or_default();
        let k = match args.algorithm {
            Algorithm::Ed25519 => AnyWitnessSigner::from_seed(&name, &seed),
            Algorithm::MlDsa44 => AnyWitnessSigner::ml_dsa_44_from_seed(&name, &seed),
        }
        .with_context(|| format!("the witness name `{name}`"))?;
        (k.encode(), k.public().encode())
    } else {
        let mut unique = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut unique);
        let unique: String = unique.iter().map(|b| format!("{b:02x}")).collect();
        let name = settings.witness.origin_for(&settings.database.url, &unique);
        let context = || format!("the key name `{name}` (set --origin)");
        if args.algorithm == Algorithm::MlDsa44 {
            let k = MlDsaSigner::from_seed(&name, &seed).with_context(context)?;
            (k.encode(), k.public().encode())
        } else {
            let k = PrivateKey::from_seed(&name, &seed).with_context(context)?;
            (k.encode(), k.public().encode())
        }
    };
    seed.fill(0);
    let (private_path, public_path) = (with_ext(&args.out, ".key"), with_ext(&args.out, ".pub"));
    let exists = |p: &PathBuf| {
        format!(
            "{} exists (or is a symlink); keygen never overwrites a key (choose another --out)",
            p.display()
        )
    };
    create_new(&private_path, format!("{secret}\n").as_bytes(), 0o600)
        .with_context(|| exists(&private_path))?;
    if let Err(e) = create_new(&public_path, format!("{public}\n").as_bytes(), 0o644) {
        // Both or neither: a private key without its public half is removed again.
        let _ = std::fs::remove_file(&private_path);
        return Err(e).with_context(|| exists(&public_path));
    }
    let (use_private, use_public) = if args.cosigner {
        (
            "give it to `witness serve --key`",
            "give it to the log's operators and auditors for their --witness-policy",
        )
    } else if args.algorithm == Algorithm::MlDsa44 {
        (
            "give it to the daemon as --ml-dsa-signing-key-file",
            "give it to readers that verify ML-DSA-44",
        )
    } else {
        (
            "give it to the daemon as --signing-key-file",
            "give it to auditors and witnesses",
        )
    };
    eprintln!(
        "wrote {} (private, mode 0600: {use_private}) and {} (public: {use_public})",
        private_path.display(),
        public_path.display()
    );
    println!("{public}");
    Ok(ExitCode::SUCCESS)
}
