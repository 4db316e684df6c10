//! The offline commands (no bus, no database): `decode` and `catalogue`.

pub mod catalogue;
pub mod decode;
