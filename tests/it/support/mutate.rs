//! Mutations of a valid input for the seeded property tests of hostile input (a bit flipped, a
//! byte inserted or deleted, a truncation, a line duplicated, bytes spliced in), and their
//! bounded, reproducible configuration.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngSeed;

/// Bounded and reproducible: a fixed seed, no regression files, `cases` cases.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(27),
        ..ProptestConfig::default()
    }
}

/// One change to a valid input.
#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    Flip(Index, u8),
    Insert(Index, u8),
    Delete(Index),
    Truncate(Index),
    DupLine(Index),
    Splice(Index, Vec<u8>),
}

/// Mutations whose spliced bytes come from `splice`.
pub(crate) fn mutation_with(
    splice: impl Strategy<Value = Vec<u8>> + 'static,
) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<Index>().prop_map(Mutation::Delete),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => any::<Index>().prop_map(Mutation::DupLine),
        1 => (any::<Index>(), splice).prop_map(|(i, b)| Mutation::Splice(i, b)),
    ]
}

impl Mutation {
    /// Exactly one byte changed, inserted or removed, or a strict prefix kept.
    pub(crate) fn is_small(&self) -> bool {
        !matches!(self, Mutation::DupLine(_) | Mutation::Splice(..))
    }

    /// The mutated bytes and the first place they may differ from `b` (non-empty).
    pub(crate) fn apply(&self, b: &[u8]) -> (Vec<u8>, usize) {
        use Mutation::*;
        let mut out = b.to_vec();
        let (i, room) = match self {
            Flip(i, _) | Delete(i) | Truncate(i) | DupLine(i) => (i, 0),
            Insert(i, _) | Splice(i, _) => (i, 1),
        };
        let at = i.index(b.len() + room);
        match self {
            Flip(_, bit) => out[at] ^= 1 << bit,
            Insert(_, byte) => out.insert(at, *byte),
            Delete(_) => drop(out.remove(at)),
            Truncate(_) => out.truncate(at),
            Splice(_, bytes) => drop(out.splice(at..at, bytes.iter().copied())),
            DupLine(_) => {
                let line = |c: &u8| *c == b'\n';
                let start = b[..at].iter().rposition(line).map_or(0, |p| p + 1);
                let end = b[at..]
                    .iter()
                    .position(line)
                    .map_or(b.len(), |p| at + p + 1);
                out.splice(start..start, b[start..end].iter().copied());
                return (out, start);
            }
        }
        (out, at)
    }

    /// [`Mutation::apply`] to text, read back lossily.
    pub(crate) fn apply_str(&self, s: &str) -> (String, usize) {
        let (b, at) = self.apply(s.as_bytes());
        (String::from_utf8_lossy(&b).into_owned(), at)
    }
}
