//! The auditor's commands, each with its arguments declared once: `verify-proof` (a bundle
//! checked offline), `mirror` (the log's tiles copied and checked), `tiles fsck` (a store's tiles
//! against a checkpoint). The binary `event-audit-proof` runs them, and the daemon offers them
//! under the same names.

pub use event_audit_base::{args, witness_args};

pub mod mirror;
pub mod tiles;
pub mod verify_proof;
pub mod verify_tlog_proof;

/// A multi-threaded runtime for the commands that do I/O.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// The log's tiles at `location` (see [`store_at`]).
pub fn tiles_at(
    location: &str,
    config: Option<&std::path::Path>,
) -> anyhow::Result<crate::tiles::Tiles> {
    if let Ok(crate::blobs::Location::Dir(d)) = crate::blobs::Location::parse(location) {
        return Ok(crate::tiles::Tiles::dir(d));
    }
    Ok(crate::tiles::Tiles::new(store_at(location, config)?))
}

/// The store at `location` (a directory, or `s3://bucket/prefix` with the settings file's
/// `[object_store]`, its credentials from their files or the environment).
pub fn store_at(
    location: &str,
    config: Option<&std::path::Path>,
) -> anyhow::Result<crate::blobs::Store> {
    let at = crate::blobs::Location::parse(location).map_err(anyhow::Error::msg)?;
    let settings = match (&at, config) {
        (crate::blobs::Location::S3 { .. }, Some(_)) => {
            crate::config::layer::load(config, toml::Table::new())?.object_store
        }
        _ => crate::config::ObjectStoreSettings::default(),
    };
    Ok(crate::blobs::Store::open(&at, &settings)?)
}
