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
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

use super::tlog::Hash;

/// The Ed25519 algorithm byte of a signed-note key.
const ALG_ED25519: u8 = 0x01;
/// The signature line's dash (U+2014).
const DASH: &str = "\u{2014} ";

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
    let h = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update(b"\n")
        .chain_update([ALG_ED25519])
        .chain_update(public)
        .finalize();
    [h[0], h[1], h[2], h[3]]
}

fn hex4(id: &[u8; 4]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

/// Splits `<name>+<hex id>+<base64(0x01 ‖ 32 bytes)>` and checks the id against the key.
fn parse_key_parts(s: &str) -> Result<(String, [u8; 4], [u8; 32]), NoteError> {
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
    if raw.len() != 33 || raw[0] != ALG_ED25519 {
        return Err(NoteError::Key("not an Ed25519 key (0x01 and 32 bytes)"));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&raw[1..]);
    let id = u32::from_str_radix(id, 16)
        .ok()
        .filter(|_| id.len() == 8)
        .ok_or(NoteError::Key("the key id is not 8 hex digits"))?
        .to_be_bytes();
    Ok((name.to_string(), id, key))
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
        let (name, id, key) = parse_key_parts(s)?;
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
}

/// A signer key: read by the daemon from its file, never stored, logged or shown.
pub struct PrivateKey {
    pub name: String,
    pub id: [u8; 4],
    key: SigningKey,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey({}+{}, redacted)", self.name, hex4(&self.id))
    }
}

impl PrivateKey {
    /// A key named `name` from a 32-byte seed (`keygen` draws it from the OS).
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<PrivateKey, NoteError> {
        if !valid_name(name) {
            return Err(NoteError::Key(
                "the key name is empty or holds '+' or spaces",
            ));
        }
        let key = SigningKey::from_bytes(seed);
        let id = key_id(name, key.verifying_key().as_bytes());
        Ok(PrivateKey {
            name: name.to_string(),
            id,
            key,
        })
    }

    /// Parses a private key file's line.
    pub fn parse(s: &str) -> Result<PrivateKey, NoteError> {
        let rest = s
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(NoteError::Key("a private key starts with PRIVATE+KEY+"))?;
        let (name, id, seed) = parse_key_parts(rest)?;
        let k = PrivateKey::from_seed(&name, &seed)?;
        if k.id != id {
            return Err(NoteError::Key("the key id does not match the name and key"));
        }
        Ok(k)
    }

    /// The private key file's line (no newline). Secret: only `keygen` writes it, mode 0600.
    pub fn encode(&self) -> String {
        let mut raw = vec![ALG_ED25519];
        raw.extend_from_slice(self.key.as_bytes());
        format!(
            "PRIVATE+KEY+{}+{}+{}",
            self.name,
            hex4(&self.id),
            B64.encode(raw)
        )
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            name: self.name.clone(),
            id: self.id,
            key: self.key.verifying_key(),
        }
    }

    /// Signs a checkpoint: the whole signed note's text.
    pub fn sign(&self, cp: &Checkpoint) -> String {
        let body = cp.body();
        let sig = self.key.sign(body.as_bytes());
        let mut blob = self.id.to_vec();
        blob.extend_from_slice(&sig.to_bytes());
        format!("{body}\n{DASH}{} {}\n", self.name, B64.encode(blob))
    }
}

/// A tree head: the log's name, its size and its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
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

    /// Parses a checkpoint body (extension lines after the root are allowed and ignored).
    pub fn parse_body(body: &str) -> Result<Checkpoint, NoteError> {
        let mut lines = body.split('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(NoteError::Checkpoint("no origin line"))?;
        let size = lines
            .next()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or(NoteError::Checkpoint(
                "the tree size is not a decimal number",
            ))?;
        let root = lines
            .next()
            .and_then(|r| B64.decode(r).ok())
            .and_then(|r| <[u8; 32]>::try_from(r).ok())
            .ok_or(NoteError::Checkpoint("the root is not 32 bytes of base64"))?;
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
        })
    }
}

/// Splits a signed note into its body (with its final newline) and its signature lines.
fn split_note(note: &str) -> Result<(&str, Vec<&str>), NoteError> {
    let at = note
        .find("\n\n")
        .ok_or(NoteError::Note("no blank line before the signatures"))?;
    let (body, sigs) = (&note[..at + 1], &note[at + 2..]);
    let sigs = sigs
        .strip_suffix('\n')
        .ok_or(NoteError::Note("the note does not end with a newline"))?;
    let lines: Vec<&str> = sigs.split('\n').collect();
    if lines.iter().any(|l| !l.starts_with(DASH)) {
        return Err(NoteError::Note("a signature line does not start with '— '"));
    }
    Ok((body, lines))
}

/// Opens a signed note with `key`: the checkpoint it signs, once its signature by `key`
/// verifies. Signatures by other keys are ignored (a note may carry a witness's too).
pub fn open(note: &str, key: &PublicKey) -> Result<Checkpoint, NoteError> {
    let (body, lines) = split_note(note)?;
    let cp = Checkpoint::parse_body(body)?;
    let mut found = false;
    for line in lines {
        let rest = &line[DASH.len()..];
        let Some((name, b64)) = rest.rsplit_once(' ') else {
            return Err(NoteError::Note("a signature line lacks its key name"));
        };
        let Ok(blob) = B64.decode(b64) else {
            return Err(NoteError::Note("a signature is not base64"));
        };
        if name != key.name || blob.len() < 4 || blob[..4] != key.id {
            continue;
        }
        found = true;
        let Ok(sig) = Signature::from_slice(&blob[4..]) else {
            continue;
        };
        if key.key.verify(body.as_bytes(), &sig).is_ok() {
            return Ok(cp);
        }
    }
    let label = format!("{}+{}", key.name, hex4(&key.id));
    Err(if found {
        NoteError::BadSignature(label)
    } else {
        NoteError::NoSignature(label)
    })
}

/// The checkpoint a note claims, without checking any signature (to name it in a report).
pub fn claimed(note: &str) -> Result<Checkpoint, NoteError> {
    let (body, _) = split_note(note)?;
    Checkpoint::parse_body(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(name: &str, b: u8) -> PrivateKey {
        PrivateKey::from_seed(name, &[b; 32]).unwrap()
    }

    #[test]
    fn keys_round_trip() {
        let k = key("event-audit/test", 7);
        let k2 = PrivateKey::parse(&k.encode()).unwrap();
        assert_eq!(k2.public(), k.public());
        let p = PublicKey::parse(&k.public().encode()).unwrap();
        assert_eq!(p, k.public());
        assert!(k.public().encode().starts_with("event-audit/test+"));
        assert!(format!("{k:?}").contains("redacted"));
        // A changed id or key is refused.
        let mut s = k.public().encode();
        s.replace_range(17..18, if &s[17..18] == "0" { "1" } else { "0" });
        assert!(PublicKey::parse(&s).is_err());
        assert!(PublicKey::parse("nope").is_err());
        assert!(PrivateKey::from_seed("a b", &[0; 32]).is_err());
    }

    #[test]
    fn matches_the_go_note_format() {
        // The key id of golang.org/x/mod/sumdb/note's example key "PeterNeumann".
        let vk = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
        let p = PublicKey::parse(vk).unwrap();
        assert_eq!(p.encode(), vk);
        let note = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n\n\
                    \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
        let (body, lines) = split_note(note).unwrap();
        let blob = B64
            .decode(&lines[0][DASH.len() + "PeterNeumann ".len()..])
            .unwrap();
        let sig = Signature::from_slice(&blob[4..]).unwrap();
        assert_eq!(blob[..4], p.id);
        assert!(p.key.verify(body.as_bytes(), &sig).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn sign_and_open(size in 0u64..u64::MAX, root in any::<[u8; 32]>(), flip in 0usize..400) {
            let k = key("event-audit/db", 3);
            let cp = Checkpoint { origin: "event-audit/db".into(), size, root };
            let note = k.sign(&cp);
            prop_assert_eq!(open(&note, &k.public()), Ok(cp.clone()));
            prop_assert_eq!(claimed(&note), Ok(cp.clone()));
            // Another key: no signature by it.
            let other = key("event-audit/db", 4);
            prop_assert!(matches!(open(&note, &other.public()), Err(NoteError::NoSignature(_))));
            // Any changed byte is refused.
            let mut bytes = note.clone().into_bytes();
            let i = flip % bytes.len();
            bytes[i] ^= 0x01;
            if let Ok(s) = String::from_utf8(bytes) {
                prop_assert!(open(&s, &k.public()).is_err());
            }
        }
    }
}
