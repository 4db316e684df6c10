//! `verify-proof FILE --entry HEX` for a C2SP tlog-proof (`c2sp.org/tlog-proof@v1`), offline:
//! the spec's four steps, step 1 this log's (the entry is a row hash, its leaf
//! `SHA-256(0x00 ‖ entry)`). Exit 0 proven; 1 rejected, naming the step that failed (2: the
//! checkpoint's origin, `--origin` or else the key's name, and the log's signature; 3: the
//! witness policy's quorum of cosignatures; 4: the inclusion proof); 2 unusable (not a
//! tlog-proof, a malformed line, no or a malformed `--entry`, `--tiles` given).

use std::process::ExitCode;

use serde::Serialize;

use crate::hex;
use crate::tlog::note::PublicKey;
use crate::tlog::policy::WitnessPolicy;
use crate::tlog::proof::{entry_leaf, Accept, TlogProof, HEADER};

/// What a verified tlog-proof proves (stdout, one JSON line).
#[derive(Debug, Serialize)]
struct Proven<'a> {
    format: &'static str,
    origin: &'a str,
    tree_size: u64,
    index: u64,
    entry: String,
    /// Bytes of unauthenticated extra data the proof carries (not used).
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cosigned_by: Option<&'a [String]>,
}

/// `--entry`: 64 hex digits, the row hash.
fn entry(hex_text: Option<&str>) -> Result<[u8; 32], String> {
    let t = hex_text.ok_or(
        "a tlog-proof proves one entry: give --entry HEX (the row's row hash, 64 hex digits)",
    )?;
    let b = t.as_bytes();
    if b.len() != 64 || !b.iter().all(u8::is_ascii_hexdigit) {
        return Err("--entry is not 64 hex digits (the row's row hash)".into());
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).map_err(|_| "--entry is not hex")?;
        out[i] = u8::from_str_radix(digits, 16).map_err(|_| "--entry is not hex")?;
    }
    Ok(out)
}

fn unusable(why: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("UNUSABLE: {why}");
    Ok(ExitCode::from(2))
}

/// What `verify-proof` was given besides the file's text, the key and the policy.
pub struct Given<'a> {
    pub entry: Option<&'a str>,
    pub origin: Option<&'a str>,
    /// Whether `--tiles` was given (refused: a tlog-proof carries its own proof).
    pub tiles: bool,
}

pub fn run(
    args: &Given<'_>,
    key: &PublicKey,
    policy: Option<&WitnessPolicy>,
    text: &str,
) -> anyhow::Result<ExitCode> {
    if args.tiles {
        return unusable("--tiles reads a bundle's inclusion from tiles; a tlog-proof carries its own (leave --tiles out)");
    }
    let proof = match TlogProof::parse(text) {
        Ok(p) => p,
        Err(e) => return unusable(format!("not a usable tlog-proof: {e}")),
    };
    let entry = match entry(args.entry) {
        Ok(e) => e,
        Err(why) => return unusable(why),
    };
    let accept = Accept {
        key,
        origin: args.origin.unwrap_or(&key.name),
        policy,
    };
    match proof.verify(&entry_leaf(&entry), &accept) {
        Ok(v) => {
            let out = Proven {
                format: HEADER,
                origin: &v.checkpoint.origin,
                tree_size: v.checkpoint.size,
                index: v.index,
                entry: hex(&entry),
                extra_bytes: proof.extra.as_ref().map(Vec::len),
                cosigned_by: v.cosigned_by.as_deref(),
            };
            println!("{}", serde_json::to_string(&out)?);
            eprintln!(
                "OK: entry {} proven at index {} against {} at tree size {}{}",
                out.entry,
                v.index,
                out.origin,
                out.tree_size,
                v.cosigned_by
                    .as_ref()
                    .map(|w| format!(", cosigned by {}", w.join(", ")))
                    .unwrap_or_default()
            );
            if let Some(n) = out.extra_bytes {
                eprintln!(
                    "the proof's extra data ({n} bytes) is not authenticated and was not used"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("REJECTED: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::entry;

    #[test]
    fn the_entry_is_64_hex_digits() {
        assert_eq!(entry(Some(&"0a".repeat(32))), Ok([10; 32]));
        assert_eq!(entry(Some(&"0A".repeat(32))), Ok([10; 32]));
        assert!(entry(Some(&"0a".repeat(31))).is_err());
        assert!(entry(Some(&format!("+a{}", "0a".repeat(31)))).is_err());
        assert!(entry(None).unwrap_err().contains("give --entry"));
    }
}
