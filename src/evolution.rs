//! Catalogue evolution, in one room: how two catalogues (or two versions of an event) differ
//! and whether the change is compatible ([`compat`]), what live traffic carries that the
//! catalogue does not declare ([`drift`], from the aggregates ingest writes), and stored rows
//! judged again by a newer catalogue ([`reprocess`]).

pub mod compat;
pub(crate) mod drift;
pub(crate) mod reprocess;
