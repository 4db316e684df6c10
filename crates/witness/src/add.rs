//! `add-checkpoint`, as C2SP tlog-witness specifies it (the text of C2SP commit 95978ca, after
//! v1.0.0; docs/witness.md): the request body parsed (`old <size>`, at most 63 base64 proof
//! lines, an empty line, the signed checkpoint), and the decision in the spec's order — unknown
//! origin 404; no signature by a trusted key, or a signature line naming a trusted key that does
//! not verify, 403; old size above the checkpoint's 400; old size not the one last cosigned (a
//! stale view, routine) 409 with the size it knows; then 422 for a checkpoint of size 0 without
//! the empty tree's root, a proof sent with old size 0, a consistency proof that fails, or the
//! size last cosigned with another root (a fork, evidence) — else the new checkpoint, to be
//! stored before the cosignature is returned. Pure: the caller holds the lock, stores and signs.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use crate::tlog::merkle::{empty_root, verify_consistency, Hash};
use crate::tlog::note::{self, parse_decimal, Checkpoint, PublicKey};

use super::state::Latest;
use crate::tlog::latest::{step, Step};

/// The most consistency proof lines a request may carry.
const MAX_PROOF: usize = 63;

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub old: u64,
    pub proof: Vec<Hash>,
    /// The signed checkpoint, as sent.
    pub note: String,
}

/// Parses the body; `Err` names what is malformed (a 400).
pub fn parse(body: &str) -> Result<Request, &'static str> {
    let (first, mut rest) = body.split_once('\n').ok_or("no old size line")?;
    let old = first
        .strip_prefix("old ")
        .and_then(parse_decimal)
        .ok_or("the first line is not `old <size>`")?;
    let mut proof = Vec::new();
    loop {
        let (line, after) = rest
            .split_once('\n')
            .ok_or("no empty line before the checkpoint")?;
        rest = after;
        if line.is_empty() {
            break;
        }
        if proof.len() == MAX_PROOF {
            return Err("more than 63 consistency proof lines");
        }
        let h = B64
            .decode(line)
            .ok()
            .and_then(|b| Hash::try_from(b).ok())
            .ok_or("a proof line is not 32 bytes of base64")?;
        proof.push(h);
    }
    Ok(Request {
        old,
        proof,
        note: rest.to_owned(),
    })
}

impl Request {
    /// The body this request is read from. [`parse`] accepts one spelling of each request (the
    /// old size in plain decimal, the proof in canonical base64), so a body it accepts encodes
    /// back to itself.
    pub fn body(&self) -> String {
        let mut out = format!("old {}\n", self.old);
        for h in &self.proof {
            out.push_str(&B64.encode(h));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.note);
        out
    }
}

/// Why a checkpoint is not cosigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Malformed(&'static str),
    /// No trusted key for this origin.
    UnknownOrigin,
    /// No signature verifies with a trusted key.
    Unsigned,
    /// A signature line names a trusted key (name and key id) but does not verify.
    BadSignature,
    /// The old size is above the checkpoint's size.
    OldTooLarge,
    /// The old size is not the one last cosigned: the client's view is stale (routine when
    /// several signers take turns, or after a restart); it retries from `known`. Not evidence.
    Stale {
        known: u64,
    },
    /// The same size as the one last cosigned, with another root: a fork.
    Conflict,
    /// A checkpoint of size 0 whose root is not the empty tree's (`SHA-256("")`).
    EmptyRoot,
    /// Consistency proof lines with old size 0 (the empty tree needs no proof).
    ProofFromEmpty,
    /// The consistency proof does not verify.
    Inconsistent,
}

impl Refused {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Refused::Malformed(_) | Refused::OldTooLarge => 400,
            Refused::UnknownOrigin => 404,
            Refused::Unsigned | Refused::BadSignature => 403,
            Refused::Stale { .. } => 409,
            Refused::Conflict
            | Refused::EmptyRoot
            | Refused::ProofFromEmpty
            | Refused::Inconsistent => 422,
        }
    }

    /// What the answer's body says (a refusal never echoes the request).
    pub fn text(&self) -> &'static str {
        match self {
            Refused::Malformed(why) => why,
            Refused::UnknownOrigin => "unknown log origin",
            Refused::Unsigned => "no signature by a trusted log key",
            Refused::BadSignature => "a signature line by a trusted log key does not verify",
            Refused::OldTooLarge => "old size larger than the checkpoint's",
            Refused::Stale { .. } => "old size is not the size last cosigned",
            Refused::Conflict => "another root at the size last cosigned",
            Refused::EmptyRoot => "a checkpoint of size 0 without the empty tree's root",
            Refused::ProofFromEmpty => "consistency proof lines with old size 0",
            Refused::Inconsistent => "the consistency proof does not verify",
        }
    }

    /// The metric reason of a refusal made after a valid signature (evidence), if it is one.
    pub fn evidence(&self) -> Option<&'static str> {
        match self {
            Refused::OldTooLarge => Some("old_size"),
            Refused::Conflict => Some("conflict"),
            Refused::EmptyRoot => Some("empty_root"),
            Refused::Inconsistent => Some("inconsistent"),
            _ => None,
        }
    }
}

/// The checkpoint a request shows, once its origin is known and a trusted key signed it.
pub fn authenticate(
    req: &Request,
    keys_for: impl Fn(&str) -> Vec<PublicKey>,
) -> Result<Checkpoint, Refused> {
    let claimed =
        note::claimed(&req.note).map_err(|_| Refused::Malformed("not a signed checkpoint"))?;
    let keys = keys_for(&claimed.origin);
    if keys.is_empty() {
        return Err(Refused::UnknownOrigin);
    }
    let mut found = None;
    for k in &keys {
        match note::open(&req.note, k) {
            Ok(cp) if cp.origin == claimed.origin => found = found.or(Some(cp)),
            Err(note::NoteError::BadSignature(_)) => return Err(Refused::BadSignature),
            _ => {}
        }
    }
    found.ok_or(Refused::Unsigned)
}

/// The decision on an authenticated checkpoint against the latest one cosigned: `Ok` with the
/// new latest (to store, then cosign).
pub fn decide(req: &Request, cp: &Checkpoint, latest: Option<&Latest>) -> Result<Latest, Refused> {
    if req.old > cp.size {
        return Err(Refused::OldTooLarge);
    }
    let known = latest.map_or(0, |l| l.size);
    if req.old != known {
        return Err(Refused::Stale { known });
    }
    if cp.size == 0 && cp.root != empty_root() {
        return Err(Refused::EmptyRoot);
    }
    if req.old == 0 && !req.proof.is_empty() {
        return Err(Refused::ProofFromEmpty);
    }
    // Never lowered: `req.old` is the size cosigned, so a smaller checkpoint was refused above.
    match (latest, step(latest, cp.size, &cp.root)) {
        (_, Step::OtherRoot) => return Err(Refused::Conflict),
        (Some(l), _) => verify_consistency(l.size, cp.size, &l.root, &cp.root, &req.proof)
            .map_err(|_| Refused::Inconsistent)?,
        (None, _) => {}
    }
    Ok(Latest {
        size: cp.size,
        root: cp.root,
        note: req.note.clone(),
        tree: (),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::merkle::{leaf_hash, MemTree};
    use crate::tlog::note::PrivateKey;

    fn tree(n: u64) -> MemTree {
        MemTree {
            leaves: (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect(),
        }
    }

    fn body(old: u64, proof: &[Hash], note: &str) -> String {
        let mut b = format!("old {old}\n");
        for h in proof {
            b.push_str(&B64.encode(h));
            b.push('\n');
        }
        format!("{b}\n{note}")
    }

    #[test]
    fn follows_the_spec_order() {
        let k = PrivateKey::from_seed("log.example/a", &[1; 32]).unwrap();
        let t = tree(10);
        let sign = |n: u64, root: Hash| {
            k.sign(&Checkpoint {
                origin: "log.example/a".into(),
                size: n,
                root,
            })
        };
        let keys = |o: &str| {
            if o == "log.example/a" {
                vec![k.public()]
            } else {
                vec![]
            }
        };
        let run = |b: &str, latest: Option<&Latest>| {
            let r = parse(b).map_err(Refused::Malformed)?;
            let cp = authenticate(&r, keys)?;
            decide(&r, &cp, latest)
        };
        // First checkpoint: old 0, no proof.
        let n4 = sign(4, t.root(4));
        let l4 = run(&body(0, &[], &n4), None).unwrap();
        assert_eq!(l4.size, 4);
        // Next: old 4 with the proof to 10.
        let n10 = sign(10, t.root(10));
        assert_eq!(
            run(&body(4, &t.consistency(4, 10), &n10), Some(&l4)).map(|l| l.size),
            Ok(10)
        );
        // A wrong proof: 422; the wrong old size: 409 with what it knows; old above size: 400.
        assert_eq!(
            run(&body(4, &t.consistency(3, 10), &n10), Some(&l4)),
            Err(Refused::Inconsistent)
        );
        assert_eq!(
            run(&body(0, &[], &n10), Some(&l4)),
            Err(Refused::Stale { known: 4 })
        );
        // A stale view is routine (the client retries from the size it is told): no evidence.
        assert_eq!(Refused::Stale { known: 4 }.evidence(), None);
        assert_eq!(
            run(&body(11, &[], &n10), Some(&l4))
                .map(|l| l.size)
                .unwrap_err()
                .status(),
            400
        );
        // The same size again: the same root is cosigned again, another root is 422 (a fork,
        // evidence; 409 before C2SP tlog-witness moved on from v1.0.0).
        assert!(run(&body(4, &[], &n4), Some(&l4)).is_ok());
        let other = sign(4, [9; 32]);
        assert_eq!(
            run(&body(4, &[], &other), Some(&l4)),
            Err(Refused::Conflict)
        );
        assert_eq!(Refused::Conflict.status(), 422);
        // Size 0 only with the empty tree's root; no proof lines with old size 0: 422.
        assert!(run(&body(0, &[], &sign(0, t.root(0))), None).is_ok());
        assert_eq!(
            run(&body(0, &[], &sign(0, [0; 32])), None),
            Err(Refused::EmptyRoot)
        );
        let r = run(&body(0, &[[1; 32]], &n4), None);
        assert_eq!(r, Err(Refused::ProofFromEmpty));
        assert_eq!(r.unwrap_err().evidence(), None);
        // Unknown origin 404; another key 403; malformed 400.
        let stranger = PrivateKey::from_seed("log.example/b", &[2; 32]).unwrap();
        let nb = stranger.sign(&Checkpoint {
            origin: "log.example/b".into(),
            size: 1,
            root: [0; 32],
        });
        assert_eq!(run(&body(0, &[], &nb), None).unwrap_err().status(), 404);
        let forged = PrivateKey::from_seed("log.example/a", &[3; 32]).unwrap();
        let nf = forged.sign(&Checkpoint {
            origin: "log.example/a".into(),
            size: 4,
            root: t.root(4),
        });
        assert_eq!(run(&body(0, &[], &nf), None).unwrap_err().status(), 403);
        // A line naming a trusted key that does not verify: 403, even beside a good one; a
        // line by a key it does not trust is ignored.
        let two = |o: &str| [keys(o), vec![forged.public()]].concat();
        let line = nf.lines().last().unwrap();
        let req = parse(&body(0, &[], &format!("{n4}{line}\n"))).unwrap();
        assert!(authenticate(&req, two).is_ok());
        let mut broken = line.as_bytes().to_vec();
        let at = broken.len() - 20;
        broken[at] = if broken[at] == b'A' { b'B' } else { b'A' };
        let broken = String::from_utf8(broken).unwrap();
        let req = parse(&body(0, &[], &format!("{n4}{broken}\n"))).unwrap();
        assert_eq!(authenticate(&req, keys).map(|c| c.size), Ok(4));
        assert_eq!(authenticate(&req, two), Err(Refused::BadSignature));
        for bad in ["", "old 01\n\n", "old 1\nnot base64\n\n", "new 1\n\n"] {
            assert_eq!(run(bad, None).unwrap_err().status(), 400, "{bad:?}");
        }
        let b = body(4, &t.consistency(4, 10), &n10);
        assert_eq!(parse(&b).map(|r| r.body()), Ok(b));
        let long: Vec<Hash> = vec![[0; 32]; 64];
        assert!(parse(&body(1, &long, &n4)).is_err());
    }
}
