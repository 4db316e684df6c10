//! ML-DSA-44 (FIPS 204) cosignatures, pure: C2SP tlog-cosignature v1.1.0-rc.1's `subtree/v1`
//! signed message (signature type 0x06), the keys and key files, and the verification of a
//! checkpoint's ML-DSA-44 signature line, whether a witness's or the log's own.
//!
//! ```text
//! key id      = SHA-256(name ‖ "\n" ‖ 0x06 ‖ 1312-byte public key)[:4]
//! vkey        = "<name>+<hex key id>+<base64(0x06 ‖ public key)>"
//! private key = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x06 ‖ 32-byte seed ξ)>"
//! signed      = "subtree/v1\n\0" ‖ u8 len ‖ name ‖ u64 t ‖ u8 len ‖ origin ‖ u64 start ‖ u64 end ‖ hash
//! signature   = "— <name> " base64(key id ‖ u64 t big-endian ‖ 2420-byte ML-DSA-44 signature) "\n"
//! ```
//!
//! Pure ML-DSA with the empty context string; signing is FIPS 204's deterministic variant
//! (`rnd` = 32 zero bytes), so the crate draws no randomness (docs/choices.md).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use fips204::ml_dsa_44;
use fips204::traits::{KeyGen, SerDes, Signer as _, Verifier as _};

use super::merkle::Hash;
use super::note::{hex4, key_id_of, split_key, valid_name, Checkpoint, Note, NoteError, DASH};

/// The signature type byte of a timestamped ML-DSA-44 (sub)tree cosignature.
pub const ALG_MLDSA44: u8 = 0x06;
/// An ML-DSA-44 public key's length in bytes.
pub const PUBLIC_LEN: usize = ml_dsa_44::PK_LEN;
/// An ML-DSA-44 signature's length in bytes.
pub const SIGNATURE_LEN: usize = ml_dsa_44::SIG_LEN;
/// The `cosigned_message` label: 12 bytes, with its newline and NUL.
pub const LABEL: &[u8; 12] = b"subtree/v1\n\0";

/// What one `subtree/v1` cosignature states: the subtree `[start, end)` of the log `origin`
/// has root `hash`, as `cosigner` saw it at `time` (0 when no time is claimed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subtree<'a> {
    pub cosigner: &'a str,
    pub time: u64,
    pub origin: &'a str,
    pub start: u64,
    pub end: u64,
    pub hash: Hash,
}

impl Subtree<'_> {
    /// The `cosigned_message` bytes. Names and origins of 1 to 255 bytes, a time within
    /// 2^63 − 1, no time on a subtree that does not start at 0, start below end.
    pub fn message(&self) -> Result<Vec<u8>, NoteError> {
        let short = |s: &str| (1..=255).contains(&s.len());
        if !short(self.cosigner) || !short(self.origin) {
            return Err(NoteError::Note(
                "an ML-DSA-44 cosignature needs a cosigner name and an origin of 1 to 255 bytes",
            ));
        }
        if self.time > i64::MAX as u64 || (self.start != 0 && self.time != 0) {
            return Err(NoteError::Note(
                "a subtree cosignature's time is within 2^63 - 1, and 0 unless it starts at 0",
            ));
        }
        if self.start > self.end || (self.start == self.end && self.start != 0) {
            return Err(NoteError::Note("a subtree's start is below its end"));
        }
        let mut m = Vec::with_capacity(12 + 2 + 24 + 32 + self.cosigner.len() + self.origin.len());
        m.extend_from_slice(LABEL);
        m.push(self.cosigner.len() as u8);
        m.extend_from_slice(self.cosigner.as_bytes());
        m.extend_from_slice(&self.time.to_be_bytes());
        m.push(self.origin.len() as u8);
        m.extend_from_slice(self.origin.as_bytes());
        m.extend_from_slice(&self.start.to_be_bytes());
        m.extend_from_slice(&self.end.to_be_bytes());
        m.extend_from_slice(&self.hash);
        Ok(m)
    }

    /// The checkpoint's statement: the whole tree, `[0, size)`, with its root.
    pub fn of_checkpoint<'a>(cosigner: &'a str, time: u64, cp: &'a Checkpoint) -> Subtree<'a> {
        Subtree {
            cosigner,
            time,
            origin: &cp.origin,
            start: 0,
            end: cp.size,
            hash: cp.root,
        }
    }
}

/// An ML-DSA-44 verifier key: a witness's (in a policy) or the log's second key.
#[derive(Clone)]
pub struct MlDsaKey {
    pub name: String,
    pub id: [u8; 4],
    raw: Box<[u8; PUBLIC_LEN]>,
    key: Box<ml_dsa_44::PublicKey>,
}

impl PartialEq for MlDsaKey {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.id == other.id && self.raw == other.raw
    }
}

impl Eq for MlDsaKey {}

impl std::fmt::Debug for MlDsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MlDsaKey({}+{})", self.name, hex4(&self.id))
    }
}

impl MlDsaKey {
    fn new(name: String, raw: [u8; PUBLIC_LEN]) -> Result<MlDsaKey, NoteError> {
        let key = ml_dsa_44::PublicKey::try_from_bytes(raw)
            .map_err(|_| NoteError::Key("not a valid ML-DSA-44 public key"))?;
        Ok(MlDsaKey {
            id: key_id_of(&name, ALG_MLDSA44, &raw),
            name,
            raw: Box::new(raw),
            key: Box::new(key),
        })
    }

    /// Parses a vkey (`NAME+<key id>+base64(0x06 ‖ 1312-byte key)`).
    pub fn parse(s: &str) -> Result<MlDsaKey, NoteError> {
        let (name, id, raw) = split_key(s)?;
        let raw = raw
            .strip_prefix(&[ALG_MLDSA44])
            .and_then(|k| <[u8; PUBLIC_LEN]>::try_from(k).ok())
            .ok_or(NoteError::Key("not an ML-DSA-44 key (0x06 and 1312 bytes)"))?;
        let key = MlDsaKey::new(name, raw)?;
        if key.id != id {
            return Err(NoteError::Key(
                "the key id does not match the name and key (ML-DSA-44)",
            ));
        }
        Ok(key)
    }

    pub fn encode(&self) -> String {
        let mut raw = vec![ALG_MLDSA44];
        raw.extend_from_slice(&self.raw[..]);
        format!("{}+{}+{}", self.name, hex4(&self.id), B64.encode(raw))
    }

    /// Whether both wrap the same ML-DSA-44 key, whatever their names.
    pub fn same_key(&self, other: &MlDsaKey) -> bool {
        self.raw == other.raw
    }

    /// Whether `signature` is this key's over `message` (pure ML-DSA, empty context).
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        <&[u8; SIGNATURE_LEN]>::try_from(signature)
            .is_ok_and(|sig| self.key.verify(message, sig, &[]))
    }

    /// Whether `blob` (`u64 time ‖ signature`, after the key id) is this key's cosignature on
    /// `subtree` with the blob's time (which it returns).
    pub fn verify_blob(&self, blob: &[u8], mut subtree: Subtree<'_>) -> Option<u64> {
        let time = u64::from_be_bytes(blob.get(..8)?.try_into().ok()?);
        subtree.time = time;
        let message = subtree.message().ok()?;
        self.verify(&message, blob.get(8..)?).then_some(time)
    }

    /// The time of this key's valid signature on the checkpoint `note`, if it carries one. A
    /// line with this key's name and id that does not verify is an error (the note is rejected).
    pub fn cosigned(&self, note: &Note<'_>) -> Result<Option<u64>, NoteError> {
        let mut found = None;
        let mut mine = note.by(&self.name, &self.id).peekable();
        if mine.peek().is_none() {
            return Ok(None);
        }
        let cp = Checkpoint::parse_body(note.text)?;
        for s in mine {
            let time = self.verify_blob(&s.blob[4..], Subtree::of_checkpoint(&self.name, 0, &cp));
            let Some(time) = time else {
                return Err(NoteError::BadSignature(format!(
                    "{}+{}",
                    self.name,
                    hex4(&self.id)
                )));
            };
            found = found.max(Some(time));
        }
        Ok(found)
    }
}

/// An ML-DSA-44 private key, kept as its 32-byte seed ξ (never logged or shown).
pub struct MlDsaSigner {
    seed: [u8; 32],
    key: Box<ml_dsa_44::PrivateKey>,
    public: MlDsaKey,
}

impl std::fmt::Debug for MlDsaSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MlDsaSigner({:?}, redacted)", self.public)
    }
}

impl Drop for MlDsaSigner {
    fn drop(&mut self) {
        self.seed.fill(0);
    }
}

impl MlDsaSigner {
    /// A key named `name` from a 32-byte seed ξ (FIPS 204 ML-DSA.KeyGen_internal).
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<MlDsaSigner, NoteError> {
        if !valid_name(name) {
            return Err(NoteError::Key(
                "the key name is empty or holds '+' or spaces",
            ));
        }
        let (pk, sk) = ml_dsa_44::KG::keygen_from_seed(seed);
        let public = MlDsaKey::new(name.to_owned(), pk.into_bytes())?;
        Ok(MlDsaSigner {
            seed: *seed,
            key: Box::new(sk),
            public,
        })
    }

    /// Parses a private key file's line (`PRIVATE+KEY+<name>+<hex id>+base64(0x06 ‖ seed)`).
    pub fn parse(s: &str) -> Result<MlDsaSigner, NoteError> {
        let rest = s
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(NoteError::Key("a private key starts with PRIVATE+KEY+"))?;
        let (name, id, mut raw) = split_key(rest)?;
        let seed = raw
            .strip_prefix(&[ALG_MLDSA44])
            .and_then(|k| <[u8; 32]>::try_from(k).ok());
        let k = seed.map(|seed| MlDsaSigner::from_seed(&name, &seed));
        raw.fill(0);
        let k = k.ok_or(NoteError::Key(
            "not an ML-DSA-44 private key (0x06 and a 32-byte seed)",
        ))??;
        if k.public.id != id {
            return Err(NoteError::Key("the key id does not match the name and key"));
        }
        Ok(k)
    }

    /// The private key file's line (no newline). Secret: only `keygen` writes it, mode 0600.
    pub fn encode(&self) -> String {
        let mut raw = vec![ALG_MLDSA44];
        raw.extend_from_slice(&self.seed);
        let line = format!(
            "PRIVATE+KEY+{}+{}+{}",
            self.public.name,
            hex4(&self.public.id),
            B64.encode(&raw)
        );
        raw.fill(0);
        line
    }

    pub fn public(&self) -> MlDsaKey {
        self.public.clone()
    }

    /// The signature of `message` (deterministic ML-DSA-44, empty context).
    pub fn sign(&self, message: &[u8]) -> Result<[u8; SIGNATURE_LEN], NoteError> {
        self.key
            .try_sign_with_seed(&[0; 32], message, &[])
            .map_err(|_| NoteError::Note("ML-DSA-44 signing failed"))
    }

    /// A signature line's blob on `subtree` (its cosigner must be this key's name): the key id,
    /// the time, the signature.
    pub fn blob(&self, subtree: &Subtree<'_>) -> Result<Vec<u8>, NoteError> {
        if subtree.cosigner != self.public.name {
            return Err(NoteError::Note("the subtree names another cosigner"));
        }
        let sig = self.sign(&subtree.message()?)?;
        let mut blob = self.public.id.to_vec();
        blob.extend_from_slice(&subtree.time.to_be_bytes());
        blob.extend_from_slice(&sig);
        Ok(blob)
    }

    /// The signature line (with its newline) on a checkpoint's note text, at `time` (0: no
    /// claim that it is the largest tree seen, as a log signing its own checkpoint writes).
    pub fn cosign(&self, text: &str, time: u64) -> Result<String, NoteError> {
        let cp = Checkpoint::parse_body(text)?;
        let blob = self.blob(&Subtree::of_checkpoint(&self.public.name, time, &cp))?;
        Ok(format!("{DASH}{} {}\n", self.public.name, B64.encode(blob)))
    }
}

#[cfg(test)]
#[path = "mldsa_tests.rs"]
mod tests;
