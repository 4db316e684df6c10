//! Decoding, pure (no I/O): the envelope of a message ([`envelope`]), the catalogue of event
//! types generated from `catalogue/` with its one-pass decoding runtime ([`catalogue`]), and
//! the one status each message gets ([`verdict`]).

pub mod catalogue;
pub mod envelope;
pub mod verdict;
