//! The newest checkpoint per origin, never lowered: the one memory that the signer (what its
//! key signed), the auditor (what `verify` checked) and the witness (what it cosigned) each keep
//! of a log, in files of their own formats. A checkpoint is remembered with its signed note
//! (evidence anyone can check) and, where its keeper resumes the tree from it, the tree's right
//! edge at its size. Pure: the keepers read and write their files; whether a larger checkpoint
//! is consistent with the remembered one needs a proof, which is the keeper's to check.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::merkle::{Frontier, Hash};
use super::note::PublicKey;

/// A checkpoint remembered as its log's newest; `E` is what its keeper keeps beside it (the
/// tree's right edge for the signer and the auditor, nothing for the witness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered<E = Frontier> {
    pub size: u64,
    pub root: Hash,
    /// The signed note (with the cosignatures gathered for it, where the keeper has them).
    pub note: String,
    pub tree: E,
}

impl Remembered<Frontier> {
    /// The checkpoint at the right edge `tree`, signed by `note`.
    pub fn at(tree: Frontier, note: String) -> Remembered<Frontier> {
        Remembered {
            size: tree.size(),
            root: tree.root(),
            note,
            tree,
        }
    }
}

impl Remembered<Frontier> {
    /// A remembered checkpoint read back from its keeper's file: `note` must open with `key` and
    /// name `origin`, and `frontier` (base64) must be the right edge at the note's size, with its
    /// root. The reason it does not hold, otherwise.
    pub fn read(
        origin: &str,
        note: &str,
        frontier: &str,
        key: &PublicKey,
    ) -> Result<Remembered<Frontier>, String> {
        let cp = super::note::open(note, key).map_err(|e| format!("its note: {e}"))?;
        if cp.origin != origin {
            return Err(format!("its note is of {}", cp.origin));
        }
        let tree = B64
            .decode(frontier)
            .ok()
            .and_then(|b| Frontier::from_bytes(cp.size, &b))
            .filter(|t| t.root() == cp.root)
            .ok_or("its right edge does not have its root")?;
        Ok(Remembered::at(tree, note.to_owned()))
    }
}

impl<E> Remembered<E> {
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// How a checkpoint of `size` and `root` stands against the one remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is remembered for its origin yet.
    First,
    /// The same size and root.
    Same,
    /// Larger: it may extend the remembered one (a consistency proof decides).
    Grows,
    /// Smaller than the remembered one: a rollback.
    Smaller,
    /// The same size with another root: a fork.
    OtherRoot,
}

impl Step {
    /// Whether remembering the checkpoint would lower the memory.
    pub fn lowers(self) -> bool {
        matches!(self, Step::Smaller | Step::OtherRoot)
    }
}

/// Where a checkpoint of `size` and `root` stands against `known`.
pub fn step<E>(known: Option<&Remembered<E>>, size: u64, root: &Hash) -> Step {
    match known {
        None => Step::First,
        Some(k) if size < k.size => Step::Smaller,
        Some(k) if size == k.size && *root != k.root => Step::OtherRoot,
        Some(k) if size == k.size => Step::Same,
        Some(_) => Step::Grows,
    }
}

/// The newest checkpoint of each origin, never lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Newest<E = Frontier> {
    logs: BTreeMap<String, Remembered<E>>,
}

impl<E> Default for Newest<E> {
    fn default() -> Self {
        Newest {
            logs: BTreeMap::new(),
        }
    }
}

impl<E> Newest<E> {
    pub fn get(&self, origin: &str) -> Option<&Remembered<E>> {
        self.logs.get(origin)
    }

    /// The remembered checkpoint of `origin`, to add the cosignatures gathered for it to its
    /// note (its size and root stay).
    pub fn note_mut(&mut self, origin: &str) -> Option<&mut String> {
        self.logs.get_mut(origin).map(|r| &mut r.note)
    }

    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Remembered<E>)> {
        self.logs.iter()
    }

    /// Remembers `r` as the newest of `origin`, unless that would lower the memory: a smaller
    /// checkpoint, or another root at the same size, is refused with its [`Step`] and changes
    /// nothing. (A larger one must have been proved to extend the remembered one.)
    pub fn advance(&mut self, origin: &str, r: Remembered<E>) -> Result<Step, Step> {
        let s = step(self.logs.get(origin), r.size, &r.root);
        if s.lowers() {
            return Err(s);
        }
        self.logs.insert(origin.to_owned(), r);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(size: u64, root: u8) -> Remembered<()> {
        Remembered {
            size,
            root: [root; 32],
            note: format!("o\n{size}\n"),
            tree: (),
        }
    }

    #[test]
    fn the_memory_is_never_lowered() {
        let mut m = Newest::<()>::default();
        assert_eq!(m.advance("o", at(5, 1)), Ok(Step::First));
        assert_eq!(m.advance("o", at(5, 1)), Ok(Step::Same));
        assert_eq!(m.advance("o", at(4, 1)), Err(Step::Smaller));
        assert_eq!(m.advance("o", at(5, 2)), Err(Step::OtherRoot));
        assert_eq!(m.get("o").map(|r| r.size()), Some(5));
        assert_eq!(m.advance("o", at(9, 3)), Ok(Step::Grows));
        assert_eq!(m.advance("p", at(1, 1)), Ok(Step::First));
        assert_eq!(m.get("o").map(|r| r.root), Some([3; 32]));
        assert_eq!(m.iter().count(), 2);
    }
}
