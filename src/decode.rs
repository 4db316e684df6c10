//! Decoding, pure (no I/O): the envelope of a message ([`envelope`]), the catalogue of event
//! types generated from `catalogue/` with its one-pass decoding runtime ([`catalogue`]), and
//! the one status each message gets ([`verdict`]); a JSON syntax error in plain words (`syntax`).

pub mod catalogue;
pub mod envelope;
mod syntax;
pub mod verdict;
