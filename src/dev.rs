//! Development tooling, apart from the production path (the `dev` feature, off by default; the
//! scripts, the tests and CI turn it on): the demo, the platform simulator, the load generator,
//! sample payloads from the catalogue, and the benchmark ceilings. Nothing outside `dev`, `cli`
//! and the tests imports it.

pub(crate) mod bench;
pub(crate) mod bench_index;
pub(crate) mod demo;
pub(crate) mod publish;
pub mod sample;
pub(crate) mod simulator;
