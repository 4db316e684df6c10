//! `event-audit verify-proof BUNDLE --public-key FILE [--origin NAME] [--witness-policy FILE]
//! [--tiles URL|DIR]`: checks an evidence bundle offline (no database, no NATS): exit 0 proven,
//! 1 rejected (naming what failed), 2 unusable input (a file, key or policy that cannot be read,
//! a bundle whose JSON or shape is not a bundle's; with `--tiles`, tiles that cannot be read,
//! are behind the bundle or do not make their own signed root). With `--tiles`, each entry's
//! inclusion is read from a mirror's (or the log's) tiles instead of the bundle's proof hashes.
//! A C2SP tlog-proof with `--entry HEX` is checked in [`super::verify_tlog_proof`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::io::Read;

use anyhow::Context;

use crate::bundle::{self, Expect};
use crate::config::Dur;
use crate::files::{KEY_MAX, POLICY_MAX};
use crate::mirror::proof::{tiles_for_bundle, TreeTiles};
use crate::tlog::note::PublicKey;
use crate::tlog::policy::WitnessPolicy;

/// Options of `event-audit verify-proof`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyProofArgs {
    /// The evidence bundle (JSON, as `prove` writes it), or a C2SP tlog-proof (with --entry);
    /// `-` reads stdin.
    pub bundle: PathBuf,
    /// The log's public key file (`<name>+<key id>+<base64 key>`).
    #[arg(long)]
    pub public_key: PathBuf,
    /// The log the checkpoint must be of (its origin line); another origin is a rejection.
    #[arg(long)]
    pub origin: Option<String>,
    /// A witness policy (C2SP tlog-policy: `log`, `witness <name> <vkey>`, `group`, `quorum`;
    /// the older `witness <vkey> <url>`, `quorum <n>` still read): the checkpoint must carry
    /// the quorum of valid cosignatures.
    #[arg(long)]
    pub witness_policy: Option<PathBuf>,
    /// Read each entry's inclusion from these tiles instead of the bundle's proof hashes: a
    /// mirror's directory or URL (`event-audit mirror --dir`), or the log's tlog-tiles prefix
    /// (`http(s)://host:port/log`, a directory). Their checkpoint must be signed by the log's
    /// key and hold at least the bundle's tree.
    #[arg(long, value_name = "URL|DIR")]
    pub tiles: Option<String>,
    /// With --tiles: how long each request may take (connecting and the whole body included).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        requires = "tiles"
    )]
    pub timeout: Dur,
    /// For a C2SP tlog-proof (`c2sp.org/tlog-proof@v1`, as `prove --format tlog-proof` or
    /// anyone writes it): the entry it proves, the row's row hash (64 hex digits).
    #[arg(long, value_name = "HEX")]
    pub entry: Option<String>,
}

/// The largest bundle read (file or stdin): `prove --account` of a few thousand rows is a few
/// megabytes; a larger account is proven in parts (`--since`, `--until`).
pub const MAX_BUNDLE: u64 = 64 << 20;

/// Reads a witness policy file (`prove` and `verify-proof`).
/// C2SP tlog-policy, or the format read before it (with a one-line note on stderr); its `log`
/// lines, if any, must name the log's key.
pub fn read_policy(path: &Path, log: Option<&PublicKey>) -> anyhow::Result<WitnessPolicy> {
    let text = crate::files::bounded::read_text(path, POLICY_MAX, "witness policy")
        .with_context(|| format!("reading the witness policy {}", path.display()))?;
    let policy = WitnessPolicy::parse(&text)
        .with_context(|| format!("the witness policy {}", path.display()))?;
    if let Some(key) = log {
        policy
            .check_log(key)
            .with_context(|| format!("the witness policy {}", path.display()))?;
    }
    if policy.legacy {
        eprintln!(
            "event-audit: note: {}: {}",
            path.display(),
            crate::tlog::policy::LEGACY_NOTE
        );
    }
    Ok(policy)
}

fn inputs(args: &VerifyProofArgs) -> anyhow::Result<(PublicKey, Option<WitnessPolicy>, String)> {
    let key_text = crate::files::bounded::read_text(&args.public_key, KEY_MAX, "key file")
        .with_context(|| format!("reading the public key {}", args.public_key.display()))?;
    let key = PublicKey::parse(key_text.trim())
        .with_context(|| format!("the public key {}", args.public_key.display()))?;
    let policy = args
        .witness_policy
        .as_deref()
        .map(|p| read_policy(p, Some(&key)))
        .transpose()?;
    let text = if args.bundle.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(MAX_BUNDLE + 1)
            .read_to_end(&mut bytes)
            .context("reading the bundle from stdin")?;
        if bytes.len() as u64 > MAX_BUNDLE {
            anyhow::bail!(
                "the bundle on stdin is larger than {MAX_BUNDLE} bytes, larger than a bundle may be; prove an account in parts (--since, --until)"
            );
        }
        String::from_utf8(bytes).context("the bundle on stdin is not UTF-8 text")?
    } else {
        crate::files::bounded::read_text(&args.bundle, MAX_BUNDLE, "bundle")
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
    if args.entry.is_some() || crate::tlog::proof::is_tlog_proof(&text) {
        let given = super::verify_tlog_proof::Given {
            entry: args.entry.as_deref(),
            origin: args.origin.as_deref(),
            tiles: args.tiles.is_some(),
        };
        return super::verify_tlog_proof::run(&given, &key, policy.as_ref(), &text);
    }
    let expect = Expect {
        origin: args.origin.clone(),
        policy,
    };
    if bundle::consistency::is_consistency(&text) {
        return consistency(&text, &key, &expect);
    }
    let tiles = match &args.tiles {
        Some(at) => match tiles_for(at, &key, &text, args.timeout.into()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("UNUSABLE: {e:#}");
                return Ok(ExitCode::from(2));
            }
        },
        None => None,
    };
    let checked = match &tiles {
        Some(t) => bundle::check_against_tiles(&text, &key, &expect, &t.reader()),
        None => bundle::check(&text, Some(&key), &expect),
    };
    match checked {
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
            if let Some(c) = &p.complete {
                eprintln!(
                    "complete: every row about its {} identifier(s) among the log's first {} leaves is here (account index update {}, recorded at leaf {})",
                    c.identifiers, c.through, c.update, c.record_leaf
                );
            }
            if let Some(t) = &tiles {
                eprintln!(
                    "inclusion read from the tiles at {} (tree size {}), not from the bundle's proof hashes",
                    t.at, t.size
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(refused(&e)),
    }
}

/// The tiles at `at` a bundle's check reads; `None` when the bundle's shape or signature does
/// not let it say which (its check then says why).
fn tiles_for(
    at: &str,
    key: &PublicKey,
    text: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<Option<TreeTiles>> {
    let Ok(b) = bundle::read(text) else {
        return Ok(None);
    };
    let Ok(cp) = crate::tlog::note::open(&b.checkpoint, key) else {
        return Ok(None);
    };
    let leaves: Vec<u64> = b.entries.iter().map(|e| e.leaf_index).collect();
    let tiles = super::runtime()?.block_on(tiles_for_bundle(
        at, key, &cp.origin, cp.size, &leaves, timeout,
    ))?;
    Ok(Some(tiles))
}

/// A proof that does not hold: said in one line, exit 2 (unusable) or 1 (rejected).
fn refused(e: &bundle::BundleError) -> ExitCode {
    match e.exit_code() {
        2 => eprintln!("UNUSABLE: {e}"),
        _ => eprintln!("REJECTED: {e}"),
    }
    ExitCode::from(e.exit_code())
}

/// An account index consistency proof: exit 0 proven, 1 rejected, 2 unusable.
fn consistency(text: &str, key: &PublicKey, expect: &Expect) -> anyhow::Result<ExitCode> {
    match bundle::consistency::check(text, Some(key), expect) {
        Ok(g) => {
            println!("{}", serde_json::to_string(&g)?);
            eprintln!(
                "OK: the account index of update {} (leaves below {}) only grew into that of update {} (leaves below {}): {} labels gained leaves, {} of them new; against {} at tree size {}{}",
                g.from_update,
                g.from_size,
                g.to_update,
                g.to_size,
                g.changed,
                g.new_labels,
                g.origin,
                g.tree_size,
                g.cosigned_by
                    .as_ref()
                    .map(|w| format!(", cosigned by {}", w.join(", ")))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(refused(&e)),
    }
}
