//! Witness cosignatures, pure: C2SP tlog-cosignature `cosignature/v1` with Ed25519 (signature
//! type 0x04), the witness's key files, and the witness policy (`witness <vkey> <url>` lines and
//! a `quorum <n>`) that readers hold a checkpoint against.
//!
//! ```text
//! key id        = SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4]
//! vkey          = "<name>+<hex key id>+<base64(0x04 ‖ public key)>"
//! private key   = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x04 ‖ seed)>"
//! signed        = "cosignature/v1\n" "time <t>\n" ‖ the checkpoint's note text
//! signature     = "— <name> " base64(key id ‖ u64 t big-endian ‖ Ed25519 signature) "\n"
//! ```

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};

use super::note::{hex4, key_id_of, parse_key_parts, Note, NoteError, Signer, DASH};

/// The signature type byte of a timestamped Ed25519 cosignature.
pub(crate) const ALG_COSIGNATURE_V1: u8 = 0x04;

/// The message a cosignature signs: the header and time lines, then the note text.
pub(crate) fn signed_message(time: u64, text: &str) -> String {
    format!("cosignature/v1\ntime {time}\n{text}")
}

/// A witness's public key: what logs and auditors configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessKey {
    pub name: String,
    pub id: [u8; 4],
    key: VerifyingKey,
}

impl WitnessKey {
    /// Parses a vkey line (`NAME+<key id>+base64(0x04 ‖ key)`).
    pub fn parse(s: &str) -> Result<WitnessKey, NoteError> {
        let (name, id, key) = parse_key_parts(s, ALG_COSIGNATURE_V1)?;
        if key_id_of(&name, ALG_COSIGNATURE_V1, &key) != id {
            return Err(NoteError::Key(
                "the key id does not match the name and key (cosignature/v1)",
            ));
        }
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|_| NoteError::Key("not a valid Ed25519 public key"))?;
        Ok(WitnessKey { name, id, key })
    }

    pub fn encode(&self) -> String {
        let mut raw = vec![ALG_COSIGNATURE_V1];
        raw.extend_from_slice(self.key.as_bytes());
        format!("{}+{}+{}", self.name, hex4(&self.id), B64.encode(raw))
    }

    /// The time of this witness's valid cosignature on `note`, if it carries one. A line with
    /// this witness's name and id that does not verify is an error (the note is rejected).
    pub(crate) fn cosigned(&self, note: &Note<'_>) -> Result<Option<u64>, NoteError> {
        let mut found = None;
        for s in note.by(&self.name, &self.id) {
            let blob = &s.blob[4..];
            let time = <[u8; 8]>::try_from(blob.get(..8).unwrap_or_default())
                .map(u64::from_be_bytes)
                .ok()
                .filter(|t| *t <= i64::MAX as u64);
            let ok = time.is_some_and(|t| {
                blob.len() == 72
                    && Signature::from_slice(&blob[8..]).is_ok_and(|sig| {
                        self.key
                            .verify(signed_message(t, note.text).as_bytes(), &sig)
                            .is_ok()
                    })
            });
            if !ok {
                return Err(NoteError::BadSignature(format!(
                    "{}+{}",
                    self.name,
                    hex4(&self.id)
                )));
            }
            found = found.max(time);
        }
        Ok(found)
    }
}

/// A witness's private key (the `witness serve` process reads it; never logged or shown).
pub type WitnessSigner = Signer<ALG_COSIGNATURE_V1>;

impl Signer<ALG_COSIGNATURE_V1> {
    pub fn public(&self) -> WitnessKey {
        WitnessKey {
            name: self.name.clone(),
            id: self.id,
            key: self.verifying_key(),
        }
    }

    /// The cosignature line (with its newline) on a checkpoint's note text, at `time`.
    pub fn cosign(&self, text: &str, time: u64) -> String {
        let blob = self.blob(&time.to_be_bytes(), signed_message(time, text).as_bytes());
        format!("{DASH}{} {}\n", self.name, B64.encode(blob))
    }
}

/// Why a policy file cannot be used, or a note does not meet it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("line {line}: {why}")]
    Syntax { line: usize, why: String },
    #[error("the policy names no witness")]
    Empty,
    #[error("quorum {quorum} is larger than the {witnesses} witness(es) the policy names")]
    Quorum { quorum: usize, witnesses: usize },
    #[error(
        "{got} valid cosignature(s) of the {need} the witness policy requires (cosigned by: {by})"
    )]
    NotMet { got: usize, need: usize, by: String },
    #[error("{0}")]
    Note(NoteError),
}

/// One witness of a policy: its key, and where the log submits checkpoints to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    pub key: WitnessKey,
    /// The submission prefix (`<url>/add-checkpoint`); readers ignore it.
    pub url: String,
}

/// `witness <vkey> <url>` lines and `quorum <n>` (default: every witness). `#` starts a
/// comment; blank lines are ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessPolicy {
    pub witnesses: Vec<PolicyWitness>,
    pub quorum: usize,
}

impl WitnessPolicy {
    pub fn parse(text: &str) -> Result<WitnessPolicy, PolicyError> {
        let mut witnesses: Vec<PolicyWitness> = Vec::new();
        let mut quorum = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |why: &str| PolicyError::Syntax {
                line,
                why: why.to_owned(),
            };
            let l = raw.split('#').next().unwrap_or_default().trim();
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["witness", vkey, url] => {
                    let key = WitnessKey::parse(vkey).map_err(|e| err(&e.to_string()))?;
                    if witnesses
                        .iter()
                        .any(|w| w.key.name == key.name && w.key.id == key.id)
                    {
                        return Err(err("this witness is listed twice"));
                    }
                    // Kept without its trailing slashes: what is left must still name a host.
                    let url = url.trim_end_matches('/');
                    let host = url
                        .strip_prefix("http://")
                        .or_else(|| url.strip_prefix("https://"));
                    if !host.is_some_and(|h| !h.is_empty() && !h.starts_with('/')) {
                        return Err(err("the URL is not http:// or https:// and a host"));
                    }
                    witnesses.push(PolicyWitness {
                        key,
                        url: url.to_owned(),
                    });
                }
                ["witness", ..] => return Err(err("expected `witness <vkey> <url>`")),
                ["quorum", n] => {
                    let n = super::note::parse_decimal(n)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| err("the quorum is not a number above 0"))?;
                    if quorum.replace(n as usize).is_some() {
                        return Err(err("a second quorum line"));
                    }
                }
                _ => return Err(err("expected `witness <vkey> <url>` or `quorum <n>`")),
            }
        }
        if witnesses.is_empty() {
            return Err(PolicyError::Empty);
        }
        let quorum = quorum.unwrap_or(witnesses.len());
        if quorum > witnesses.len() {
            return Err(PolicyError::Quorum {
                quorum,
                witnesses: witnesses.len(),
            });
        }
        Ok(WitnessPolicy { witnesses, quorum })
    }

    /// The witnesses of the policy whose valid cosignature the note carries (their names), or
    /// why the note does not meet the quorum.
    pub fn check(&self, note: &str) -> Result<Vec<String>, PolicyError> {
        let n = Note::parse(note).map_err(PolicyError::Note)?;
        let mut by = BTreeSet::new();
        for w in &self.witnesses {
            if w.key.cosigned(&n).map_err(PolicyError::Note)?.is_some() {
                by.insert(w.key.name.clone());
            }
        }
        if by.len() < self.quorum {
            return Err(PolicyError::NotMet {
                got: by.len(),
                need: self.quorum,
                by: if by.is_empty() {
                    "none".into()
                } else {
                    by.iter().cloned().collect::<Vec<_>>().join(", ")
                },
            });
        }
        Ok(by.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::note::{open, Checkpoint, PrivateKey};

    fn witness(name: &str, b: u8) -> WitnessSigner {
        WitnessSigner::from_seed(name, &[b; 32]).unwrap()
    }

    fn note() -> (PrivateKey, String) {
        let log = PrivateKey::from_seed("log.example/a", &[1; 32]).unwrap();
        let cp = Checkpoint {
            origin: "log.example/a".into(),
            size: 12,
            root: [7; 32],
        };
        let n = log.sign(&cp);
        (log, n)
    }

    #[test]
    fn keys_round_trip_with_type_4() {
        let w = witness("w.example/1", 2);
        let p = WitnessKey::parse(&w.public().encode()).unwrap();
        assert_eq!(p, w.public());
        let k2 = WitnessSigner::parse(&w.encode()).unwrap();
        assert_eq!(k2.public(), p);
        // A log key (type 0x01) is not a witness key, nor the reverse.
        let (log, _) = note();
        assert!(WitnessKey::parse(&log.public().encode()).is_err());
        assert!(PrivateKey::parse(&w.encode()).is_err());
        assert!(format!("{w:?}").contains("redacted"));
    }

    #[test]
    fn cosignatures_verify_and_bind_the_text() {
        let (log, n) = note();
        let w = witness("w.example/1", 2);
        let text = Note::parse(&n).unwrap().text.to_owned();
        let line = w.cosign(&text, 1_700_000_000);
        let cosigned = format!("{n}{line}");
        let parsed = Note::parse(&cosigned).unwrap();
        assert_eq!(w.public().cosigned(&parsed), Ok(Some(1_700_000_000)));
        // The log's own signature still opens the note; the cosignature is another key's.
        assert!(open(&cosigned, &log.public()).is_ok());
        // Another text: the same line does not verify and rejects the note.
        let other = n.replacen("\n12\n", "\n13\n", 1);
        let other = format!("{other}{line}");
        assert!(w.public().cosigned(&Note::parse(&other).unwrap()).is_err());
        // Another witness: not cosigned by it.
        let v = witness("w.example/2", 3);
        assert_eq!(v.public().cosigned(&parsed), Ok(None));
    }

    #[test]
    fn policies_parse_and_count_a_quorum() {
        let (_, n) = note();
        let (a, b, c) = (witness("a", 1), witness("b", 2), witness("c", 3));
        let text = format!(
            "# witnesses\nwitness {} http://127.0.0.1:1\nwitness {} https://b.example/w/\nwitness {} http://c\nquorum 2\n",
            a.public().encode(),
            b.public().encode(),
            c.public().encode()
        );
        let p = WitnessPolicy::parse(&text).unwrap();
        assert_eq!(p.quorum, 2);
        assert_eq!(p.witnesses[1].url, "https://b.example/w");
        let body = Note::parse(&n).unwrap().text.to_owned();
        let one = format!("{n}{}", a.cosign(&body, 5));
        assert!(matches!(
            p.check(&one),
            Err(PolicyError::NotMet {
                got: 1,
                need: 2,
                ..
            })
        ));
        let two = format!("{one}{}", c.cosign(&body, 6));
        assert_eq!(p.check(&two), Ok(vec!["a".into(), "c".into()]));
        // The same witness twice counts once.
        let again = format!("{one}{}", a.cosign(&body, 7));
        assert!(p.check(&again).is_err());
        for bad in [
            "",
            "quorum 1\n",
            "witness nope http://x\n",
            &format!("witness {} ftp://x\n", a.public().encode()),
            // Found by the `cosign` fuzz target's contract: `http:///` was kept as `http:`, a
            // policy that did not read back from its own lines (and named no host).
            &format!("witness {} http:///\n", a.public().encode()),
            &format!("witness {} https:///x\n", a.public().encode()),
            &format!("witness {} http://x\nquorum 2\n", a.public().encode()),
            &format!("witness {} http://x\nquorum 0\n", a.public().encode()),
            &format!(
                "witness {0} http://x\nwitness {0} http://y\n",
                a.public().encode()
            ),
        ] {
            assert!(WitnessPolicy::parse(bad).is_err(), "{bad:?}");
        }
        let all = WitnessPolicy::parse(&format!("witness {} http://x\n", a.public().encode()));
        assert_eq!(all.map(|p| p.quorum), Ok(1));
    }
}
