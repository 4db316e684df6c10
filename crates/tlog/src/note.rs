//! Signed checkpoints, pure: the C2SP tlog-checkpoint body (origin, tree size, base64 root)
//! signed as a C2SP signed note with Ed25519, and the key files (`keygen` writes them, the
//! daemon signs with one, auditors verify with the other).
//!
//! ```text
//! key id      = SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key)[:4]
//! public key  = "<name>+<hex key id>+<base64(0x01 ‖ public key)>"
//! private key = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 ‖ seed)>"
//! note        = "<origin>\n<size>\n<base64 root>\n" "\n" "— <name> <base64(key id ‖ signature)>\n"
//! ```

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

use super::merkle::Hash;

/// The Ed25519 algorithm byte of a signed-note key.
pub const ALG_ED25519: u8 = 0x01;
/// The signature line's dash (U+2014).
pub const DASH: &str = "\u{2014} ";

/// Why a key, checkpoint or note cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("malformed key: {0}")]
    Key(&'static str),
    #[error("malformed checkpoint: {0}")]
    Checkpoint(&'static str),
    #[error("malformed note: {0}")]
    Note(&'static str),
    #[error("no signature by key {0} (signed by another key)")]
    NoSignature(String),
    #[error("the signature by key {0} does not verify (forged or altered)")]
    BadSignature(String),
}

/// `SHA-256(name ‖ "\n" ‖ 0x01 ‖ key)[:4]`.
pub fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    key_id_of(name, ALG_ED25519, public)
}

/// `SHA-256(name ‖ "\n" ‖ alg ‖ key)[:4]`: a signed-note key id for signature type `alg`.
pub fn key_id_of(name: &str, alg: u8, public: &[u8]) -> [u8; 4] {
    let h = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update(b"\n")
        .chain_update([alg])
        .chain_update(public)
        .finalize();
    [h[0], h[1], h[2], h[3]]
}

/// The key id as 8 hex digits.
pub fn hex4(id: &[u8; 4]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A key name: non-empty, no '+', no whitespace.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

/// Splits `<name>+<hex id>+<base64(type ‖ key)>` into the name, the id and the decoded bytes
/// (the type byte first; the caller checks it, the length and the id).
pub fn split_key(s: &str) -> Result<(String, [u8; 4], Vec<u8>), NoteError> {
    // From the left: neither the name nor the id holds '+', base64 may.
    let mut it = s.trim().splitn(3, '+');
    let (Some(name), Some(id), Some(b64)) = (it.next(), it.next(), it.next()) else {
        return Err(NoteError::Key("expected <name>+<key id>+<key>"));
    };
    if !valid_name(name) {
        return Err(NoteError::Key(
            "the key name is empty or holds '+' or spaces",
        ));
    }
    let raw = B64
        .decode(b64)
        .map_err(|_| NoteError::Key("the key is not base64"))?;
    let id = u32::from_str_radix(id, 16)
        .ok()
        .filter(|_| id.len() == 8)
        .ok_or(NoteError::Key("the key id is not 8 hex digits"))?
        .to_be_bytes();
    Ok((name.to_string(), id, raw))
}

/// Splits `<name>+<hex id>+<base64(alg ‖ 32 bytes)>` (the id is checked by the caller).
pub fn parse_key_parts(s: &str, alg: u8) -> Result<(String, [u8; 4], [u8; 32]), NoteError> {
    let (name, id, raw) = split_key(s)?;
    if raw.len() != 33 || raw[0] != alg {
        return Err(NoteError::Key(if alg == ALG_ED25519 {
            "not an Ed25519 log key (0x01 and 32 bytes)"
        } else {
            "not an Ed25519 cosigner key (0x04 and 32 bytes)"
        }));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&raw[1..]);
    Ok((name, id, key))
}

/// A verifier key: what auditors hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub name: String,
    pub id: [u8; 4],
    key: VerifyingKey,
}

impl PublicKey {
    /// Parses a public key file's line.
    pub fn parse(s: &str) -> Result<PublicKey, NoteError> {
        let (name, id, key) = parse_key_parts(s, ALG_ED25519)?;
        if key_id(&name, &key) != id {
            return Err(NoteError::Key("the key id does not match the name and key"));
        }
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|_| NoteError::Key("not a valid Ed25519 public key"))?;
        Ok(PublicKey { name, id, key })
    }

    /// The public key file's line (no newline).
    pub fn encode(&self) -> String {
        let mut raw = vec![ALG_ED25519];
        raw.extend_from_slice(self.key.as_bytes());
        format!("{}+{}+{}", self.name, hex4(&self.id), B64.encode(raw))
    }

    /// Whether both wrap the same Ed25519 key, whatever their names (tlog-policy's duplicates).
    pub fn same_key(&self, other: &PublicKey) -> bool {
        self.key == other.key
    }
}

/// One private key type for every signature algorithm of the log's notes: the log's Ed25519
/// key (`0x01`, [`PrivateKey`]) and a witness's cosignature key (`0x04`,
/// `cosign::WitnessSigner`) differ only in that byte, part of the key id and of the key file's
/// line.
pub struct Signer<const ALG: u8> {
    pub name: String,
    pub id: [u8; 4],
    key: SigningKey,
}

impl<const ALG: u8> std::fmt::Debug for Signer<ALG> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Signer<{ALG:#04x}>({}+{}, redacted)",
            self.name,
            hex4(&self.id)
        )
    }
}

impl<const ALG: u8> Signer<ALG> {
    /// A key named `name` from a 32-byte seed (`keygen` draws it from the OS).
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, NoteError> {
        if !valid_name(name) {
            return Err(NoteError::Key(
                "the key name is empty or holds '+' or spaces",
            ));
        }
        let key = SigningKey::from_bytes(seed);
        let id = key_id_of(name, ALG, key.verifying_key().as_bytes());
        Ok(Signer {
            name: name.to_owned(),
            id,
            key,
        })
    }

    /// Parses a private key file's line (`PRIVATE+KEY+<name>+<hex id>+base64(ALG ‖ seed)`).
    pub fn parse(s: &str) -> Result<Self, NoteError> {
        let rest = s
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(NoteError::Key("a private key starts with PRIVATE+KEY+"))?;
        let (name, id, seed) = parse_key_parts(rest, ALG)?;
        let k = Self::from_seed(&name, &seed)?;
        if k.id != id {
            return Err(NoteError::Key("the key id does not match the name and key"));
        }
        Ok(k)
    }

    /// The private key file's line (no newline). Secret: only `keygen` writes it, mode 0600.
    pub fn encode(&self) -> String {
        let mut raw = vec![ALG];
        raw.extend_from_slice(self.key.as_bytes());
        format!(
            "PRIVATE+KEY+{}+{}+{}",
            self.name,
            hex4(&self.id),
            B64.encode(raw)
        )
    }

    /// The public half.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// A 32-byte secret for another use of this key, named by `purpose` (the account index's
    /// VRF key): the first 32 bytes of SHA-512(purpose ‖ 0x00 ‖ seed). The seed never leaves.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        use sha2::Sha512;
        let mut h = Sha512::new();
        h.update(purpose.as_bytes());
        h.update([0u8]);
        h.update(self.key.as_bytes());
        let d = h.finalize();
        let mut out = [0u8; 32];
        out.copy_from_slice(&d[..32]);
        out
    }

    /// A signature line's blob: the key id, `prefix` (a cosignature's time), the signature of
    /// `message`.
    pub fn blob(&self, prefix: &[u8], message: &[u8]) -> Vec<u8> {
        let sig = self.key.sign(message);
        let mut blob = self.id.to_vec();
        blob.extend_from_slice(prefix);
        blob.extend_from_slice(&sig.to_bytes());
        blob
    }
}

/// The log's signing key: read by the daemon from its file, never stored, logged or shown.
pub type PrivateKey = Signer<ALG_ED25519>;

impl Signer<ALG_ED25519> {
    pub fn public(&self) -> PublicKey {
        PublicKey {
            name: self.name.clone(),
            id: self.id,
            key: self.verifying_key(),
        }
    }

    /// Signs a checkpoint: the whole signed note's text.
    pub fn sign(&self, cp: &Checkpoint) -> String {
        let body = cp.body();
        let blob = self.blob(&[], body.as_bytes());
        format!("{body}\n{DASH}{} {}\n", self.name, B64.encode(blob))
    }
}

/// The re-verdict log's origin is the events log's origin with this suffix (same key).
pub const REVERDICTS_SUFFIX: &str = "/reverdicts";

/// The most signature lines a note may carry (the spec asks verifiers to accept at least 16).
pub const MAX_SIGNATURES: usize = 64;

/// The longest note read, in bytes: a checkpoint's text and [`MAX_SIGNATURES`] signature lines
/// take a few kilobytes; a file, response or message longer than this is refused unread.
pub const MAX_NOTE: u64 = 64 << 10;

/// A tree head: the log's name, its size and its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

/// `"0"`, or digits without a leading zero, within `u64`.
pub fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse::<u64>().ok()
}

impl Checkpoint {
    /// `"<origin>\n<size>\n<base64 root>\n"`.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        )
    }

    /// Parses a checkpoint body: origin, size (decimal, no leading zero), base64 root, each
    /// ending in a newline; extension lines after the root are allowed (non-empty) and ignored.
    pub fn parse_body(body: &str) -> Result<Checkpoint, NoteError> {
        if body.bytes().any(|b| b < 0x20 && b != b'\n') {
            return Err(NoteError::Checkpoint("it holds a control character"));
        }
        let body = body
            .strip_suffix('\n')
            .ok_or(NoteError::Checkpoint("it does not end with a newline"))?;
        let mut lines = body.split('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(NoteError::Checkpoint("no origin line"))?;
        let size = lines
            .next()
            .and_then(parse_decimal)
            .ok_or(NoteError::Checkpoint(
                "the tree size is not a decimal number without leading zeros",
            ))?;
        let root = lines
            .next()
            .and_then(|r| B64.decode(r).ok().filter(|b| B64.encode(b) == r))
            .and_then(|r| <[u8; 32]>::try_from(r).ok())
            .ok_or(NoteError::Checkpoint("the root is not 32 bytes of base64"))?;
        if lines.any(str::is_empty) {
            return Err(NoteError::Checkpoint("an extension line is empty"));
        }
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
        })
    }
}

/// One signature line of a note: the key name and the decoded `key id ‖ signature` blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigLine<'a> {
    pub name: &'a str,
    pub blob: Vec<u8>,
    /// The line as written, without its newline.
    pub line: &'a str,
}

impl SigLine<'_> {
    /// The key id the blob starts with.
    pub fn id(&self) -> Option<[u8; 4]> {
        self.blob.get(..4)?.try_into().ok()
    }
}

/// A signed note split as C2SP signed-note says: the text (with its final newline) ends at the
/// last blank line; then one or more signature lines `— <name> <base64>`. UTF-8 (a `&str`), no
/// control character but newline, at most [`MAX_SIGNATURES`] signatures.
#[derive(Debug, Clone)]
pub struct Note<'a> {
    pub text: &'a str,
    pub sigs: Vec<SigLine<'a>>,
}

impl<'a> Note<'a> {
    pub fn parse(note: &'a str) -> Result<Note<'a>, NoteError> {
        if note.len() as u64 > MAX_NOTE {
            return Err(NoteError::Note(
                "longer than 64 KiB, longer than a note can be",
            ));
        }
        if note.bytes().any(|b| b < 0x20 && b != b'\n') {
            return Err(NoteError::Note("it holds a control character"));
        }
        let at = note
            .rfind("\n\n")
            .ok_or(NoteError::Note("no blank line before the signatures"))?;
        let (text, sigs) = (&note[..at + 1], &note[at + 2..]);
        let sigs = sigs
            .strip_suffix('\n')
            .ok_or(NoteError::Note("the note does not end with a newline"))?;
        let mut out = Vec::new();
        for line in sigs.split('\n') {
            if out.len() == MAX_SIGNATURES {
                return Err(NoteError::Note("too many signatures"));
            }
            let rest = line
                .strip_prefix(DASH)
                .ok_or(NoteError::Note("a signature line does not start with '— '"))?;
            let (name, b64) = rest
                .split_once(' ')
                .ok_or(NoteError::Note("a signature line lacks its key name"))?;
            if !valid_name(name) {
                return Err(NoteError::Note(
                    "a signature's key name is empty or holds '+'",
                ));
            }
            let blob = B64
                .decode(b64)
                .map_err(|_| NoteError::Note("a signature is not base64"))?;
            if blob.len() < 4 {
                return Err(NoteError::Note("a signature is shorter than its key id"));
            }
            out.push(SigLine { name, blob, line });
        }
        Ok(Note { text, sigs: out })
    }

    /// The signature lines whose key name and id are `name` and `id`.
    pub fn by<'s>(
        &'s self,
        name: &'s str,
        id: &'s [u8; 4],
    ) -> impl Iterator<Item = &'s SigLine<'a>> {
        self.sigs
            .iter()
            .filter(move |s| s.name == name && s.id().as_ref() == Some(id))
    }
}

/// Opens a signed note with `key`: the checkpoint it signs, once its signature by `key`
/// verifies. Signatures by other keys are ignored (a note carries witnesses' cosignatures
/// too); a signature line with this key's name and id that does not verify rejects the note.
pub fn open(note: &str, key: &PublicKey) -> Result<Checkpoint, NoteError> {
    let n = Note::parse(note)?;
    let label = format!("{}+{}", key.name, hex4(&key.id));
    let mut mine = n.by(&key.name, &key.id).peekable();
    if mine.peek().is_none() {
        return Err(NoteError::NoSignature(label));
    }
    for s in mine {
        let ok = Signature::from_slice(&s.blob[4..])
            .is_ok_and(|sig| key.key.verify(n.text.as_bytes(), &sig).is_ok());
        if !ok {
            return Err(NoteError::BadSignature(label));
        }
    }
    Checkpoint::parse_body(n.text)
}

/// The checkpoint a note claims, without checking any signature (to name it in a report).
pub fn claimed(note: &str) -> Result<Checkpoint, NoteError> {
    Checkpoint::parse_body(Note::parse(note)?.text)
}

/// The note with `lines` (signature lines, each ending in a newline) appended, skipping any it
/// already carries.
pub fn with_signatures(note: &str, lines: &str) -> String {
    let mut out = note.to_owned();
    for l in lines.lines().filter(|l| !l.is_empty()) {
        if !note.lines().any(|have| have == l) {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
#[path = "note_tests.rs"]
mod tests;
