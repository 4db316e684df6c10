//! Witness cosignatures, pure: C2SP tlog-cosignature `cosignature/v1` with Ed25519 (signature
//! type 0x04), or `subtree/v1` with ML-DSA-44 (type 0x06, in [`super::mldsa`]), and the witness's
//! key files; the witness policy readers hold a checkpoint against is in [`super::policy`].
//!
//! ```text
//! key id        = SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4]
//! vkey          = "<name>+<hex key id>+<base64(0x04 ‖ public key)>"
//! private key   = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x04 ‖ seed)>"
//! signed        = "cosignature/v1\n" "time <t>\n" ‖ the checkpoint's note text
//! signature     = "— <name> " base64(key id ‖ u64 t big-endian ‖ Ed25519 signature) "\n"
//! ```

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};

use super::mldsa::{MlDsaKey, MlDsaSigner, ALG_MLDSA44};
use super::note::{hex4, key_id_of, parse_key_parts, split_key, Note, NoteError, Signer, DASH};

/// The signature type byte of a timestamped Ed25519 cosignature.
pub const ALG_COSIGNATURE_V1: u8 = 0x04;

/// The message a cosignature signs: the header and time lines, then the note text.
pub fn signed_message(time: u64, text: &str) -> String {
    format!("cosignature/v1\ntime {time}\n{text}")
}

/// Whether `signature` (64 bytes) is `key`'s Ed25519 signature of `message` (RFC 8032).
pub fn ed25519_verifies(key: &VerifyingKey, message: &[u8], signature: &[u8]) -> bool {
    Signature::from_slice(signature).is_ok_and(|sig| key.verify(message, &sig).is_ok())
}

/// A witness's public key: what logs and auditors configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessKey {
    pub name: String,
    pub id: [u8; 4],
    key: Cosigner,
}

/// The algorithm and key behind a [`WitnessKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cosigner {
    Ed25519(VerifyingKey),
    MlDsa44(Box<MlDsaKey>),
}

impl WitnessKey {
    /// Parses a vkey line (`NAME+<key id>+base64(0x04 ‖ key)`, or `0x06 ‖ key` for ML-DSA-44).
    pub fn parse(s: &str) -> Result<WitnessKey, NoteError> {
        if split_key(s).is_ok_and(|(_, _, raw)| raw.first() == Some(&ALG_MLDSA44)) {
            return Ok(WitnessKey::from(MlDsaKey::parse(s)?));
        }
        let (name, id, key) = parse_key_parts(s, ALG_COSIGNATURE_V1)?;
        if key_id_of(&name, ALG_COSIGNATURE_V1, &key) != id {
            return Err(NoteError::Key(
                "the key id does not match the name and key (cosignature/v1)",
            ));
        }
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|_| NoteError::Key("not a valid Ed25519 public key"))?;
        Ok(WitnessKey {
            name,
            id,
            key: Cosigner::Ed25519(key),
        })
    }

    /// Whether both wrap the same key, whatever their names (tlog-policy's duplicates).
    pub fn same_key(&self, other: &WitnessKey) -> bool {
        match (&self.key, &other.key) {
            (Cosigner::Ed25519(a), Cosigner::Ed25519(b)) => a == b,
            (Cosigner::MlDsa44(a), Cosigner::MlDsa44(b)) => a.same_key(b),
            _ => false,
        }
    }

    /// The signature type byte: 0x04 (Ed25519) or 0x06 (ML-DSA-44).
    pub fn algorithm(&self) -> u8 {
        match self.key {
            Cosigner::Ed25519(_) => ALG_COSIGNATURE_V1,
            Cosigner::MlDsa44(_) => ALG_MLDSA44,
        }
    }

    pub fn encode(&self) -> String {
        let key = match &self.key {
            Cosigner::Ed25519(key) => key,
            Cosigner::MlDsa44(key) => return key.encode(),
        };
        let mut raw = vec![ALG_COSIGNATURE_V1];
        raw.extend_from_slice(key.as_bytes());
        format!("{}+{}+{}", self.name, hex4(&self.id), B64.encode(raw))
    }

    /// The time of this witness's valid cosignature on `note`, if it carries one. A line with
    /// this witness's name and id that does not verify is an error (the note is rejected).
    pub fn cosigned(&self, note: &Note<'_>) -> Result<Option<u64>, NoteError> {
        let key = match &self.key {
            Cosigner::Ed25519(key) => key,
            Cosigner::MlDsa44(key) => return key.cosigned(note),
        };
        let mut found = None;
        for s in note.by(&self.name, &self.id) {
            let blob = &s.blob[4..];
            let time = <[u8; 8]>::try_from(blob.get(..8).unwrap_or_default())
                .map(u64::from_be_bytes)
                .ok()
                .filter(|t| *t <= i64::MAX as u64);
            let ok = time.is_some_and(|t| {
                blob.len() == 72
                    && ed25519_verifies(key, signed_message(t, note.text).as_bytes(), &blob[8..])
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

impl From<MlDsaKey> for WitnessKey {
    fn from(key: MlDsaKey) -> WitnessKey {
        WitnessKey {
            name: key.name.clone(),
            id: key.id,
            key: Cosigner::MlDsa44(Box::new(key)),
        }
    }
}

/// A witness's Ed25519 private key.
pub type WitnessSigner = Signer<ALG_COSIGNATURE_V1>;

/// A witness's private key, Ed25519 or ML-DSA-44 (the `witness serve` process reads it; never
/// logged or shown).
#[derive(Debug)]
pub enum AnyWitnessSigner {
    Ed25519(WitnessSigner),
    MlDsa44(MlDsaSigner),
}

impl AnyWitnessSigner {
    /// An Ed25519 witness key named `name` from a 32-byte seed.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<AnyWitnessSigner, NoteError> {
        Signer::from_seed(name, seed).map(AnyWitnessSigner::Ed25519)
    }

    /// An ML-DSA-44 witness key named `name` from a 32-byte seed ξ.
    pub fn ml_dsa_44_from_seed(name: &str, seed: &[u8; 32]) -> Result<AnyWitnessSigner, NoteError> {
        MlDsaSigner::from_seed(name, seed).map(AnyWitnessSigner::MlDsa44)
    }

    /// Parses a private key file's line of either type (0x04 or 0x06).
    pub fn parse(s: &str) -> Result<AnyWitnessSigner, NoteError> {
        match MlDsaSigner::parse(s) {
            Ok(k) => Ok(AnyWitnessSigner::MlDsa44(k)),
            Err(_) => Signer::parse(s).map(AnyWitnessSigner::Ed25519),
        }
    }

    /// The private key file's line (no newline). Secret: only `keygen` writes it, mode 0600.
    pub fn encode(&self) -> String {
        match self {
            AnyWitnessSigner::Ed25519(k) => k.encode(),
            AnyWitnessSigner::MlDsa44(k) => k.encode(),
        }
    }

    pub fn public(&self) -> WitnessKey {
        match self {
            AnyWitnessSigner::Ed25519(k) => k.public(),
            AnyWitnessSigner::MlDsa44(k) => WitnessKey::from(k.public()),
        }
    }

    /// The cosignature line (with its newline) on a checkpoint's note text, at `time`:
    /// `cosignature/v1` with Ed25519, `subtree/v1` with ML-DSA-44.
    pub fn cosign(&self, text: &str, time: u64) -> Result<String, NoteError> {
        match self {
            AnyWitnessSigner::Ed25519(k) => Ok(k.cosign(text, time)),
            AnyWitnessSigner::MlDsa44(k) => k.cosign(text, time),
        }
    }
}

impl Signer<ALG_COSIGNATURE_V1> {
    pub fn public(&self) -> WitnessKey {
        WitnessKey {
            name: self.name.clone(),
            id: self.id,
            key: Cosigner::Ed25519(self.verifying_key()),
        }
    }

    /// The cosignature line (with its newline) on a checkpoint's note text, at `time`.
    pub fn cosign(&self, text: &str, time: u64) -> String {
        let blob = self.blob(&time.to_be_bytes(), signed_message(time, text).as_bytes());
        format!("{DASH}{} {}\n", self.name, B64.encode(blob))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::{open, Checkpoint, PrivateKey};

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
}
