//! The daemon's signer at start-up: its files read and checked ([`check`]) before the daemon
//! touches PostgreSQL or NATS, then the signer made from them ([`from_checked`]).

use std::sync::Arc;

use super::{load_key, CheckpointError, Signer};
use crate::bus::Bus;
use crate::db::Db;
use crate::log::tiles::Tiles;
use crate::tlog::note::PrivateKey;

/// The signer's files, read and checked before the daemon touches PostgreSQL or NATS: its key
/// (refused when missing, malformed, readable by others, or named other than the origin), its
/// witness policy. None when no signing key is configured. (A memory file that cannot be read
/// is a refusal to sign, not a reason to stop recording.)
pub(crate) struct Checked {
    key: PrivateKey,
    ml_dsa: Option<crate::tlog::mldsa::MlDsaSigner>,
    origin: String,
}

/// See [`Checked`]; says at start-up whether checkpoints are on.
pub(crate) fn check(s: &crate::config::Settings) -> Result<Option<Checked>, CheckpointError> {
    let w = &s.witness;
    let Some(path) = &w.signing_key_file else {
        tracing::info!("checkpoints are off: no signing key (--signing-key-file or EVENT_AUDIT_WITNESS_SIGNING_KEY_FILE); the log is not witnessed outside the database");
        return Ok(None);
    };
    let key = load_key(path)?;
    // The log's name is the key's (keygen names the key after the origin; witnesses and
    // verify expect the same).
    let origin = match &w.origin {
        Some(o) if *o != key.name => {
            return Err(CheckpointError::Key {
                path: path.display().to_string(),
                why: format!("the key is named `{}`, but the origin is set to `{o}`: a log's origin is its key's name (generate a key with `keygen --origin {o}`)", key.name),
            })
        }
        _ => key.name.clone(),
    };
    if let Some(p) = &w.witness_policy {
        super::read::load_submitting_policy(p, &key.public())?;
    }
    let ml_dsa = match &w.ml_dsa_signing_key_file {
        Some(p) => Some(super::second::load(p, &key.name)?),
        None => None,
    };
    if origin.len() + crate::tlog::note::REVERDICTS_SUFFIX.len() > 255 && ml_dsa.is_some() {
        return Err(CheckpointError::Key {
            path: path.display().to_string(),
            why: "an ML-DSA-44 signature names the origin in at most 255 bytes (with /reverdicts): choose a shorter origin".into(),
        });
    }
    Ok(Some(Checked {
        key,
        ml_dsa,
        origin,
    }))
}

/// The daemon's signer from its [`check`]ed files (an unreadable or malformed key, or policy,
/// stops the daemon before it touches PostgreSQL or NATS). The signer runs at each interval,
/// and once more when ingest has ended.
pub(crate) fn from_checked(
    checked: Option<Checked>,
    s: &crate::config::Settings,
    db: &Db,
    bus: &Bus,
    (metrics, index): (
        &Arc<crate::witnessed::metrics::WitnessMetrics>,
        &Arc<crate::index::metrics::IndexMetrics>,
    ),
    tiles: Option<Tiles>,
) -> Result<Option<Signer>, CheckpointError> {
    let w = &s.witness;
    let Some(Checked {
        key,
        ml_dsa,
        origin,
    }) = checked
    else {
        return Ok(None);
    };
    let updater = (!w.no_account_index).then(|| {
        let labeler = crate::index::label::Labeler::new(crate::tlog::index::vrf_key(&key));
        let copies = crate::index::replay::open_copies(
            &crate::index::replay::copies_of(s),
            crate::index::replay::COPY_TIMEOUT,
            &s.object_store,
            &crate::mirror::source::Source::tls_of(w),
        );
        crate::index::update::Updater::new(
            db.clone(),
            s.ingest.instance_name(),
            labeler,
            index.clone(),
        )
        .with_copies(origin.clone(), copies)
    });
    let mut signer = Signer::new(key, origin, db.clone(), bus.clone(), w, metrics.clone())?;
    if let Some(u) = updater {
        signer = signer.with_index(u);
    }
    if let Some(k) = ml_dsa {
        signer = signer.with_ml_dsa(k);
    }
    if let Some(t) = tiles {
        signer = signer.with_tiles(t);
    }
    tracing::info!(origin = %signer.origin, key = %signer.public.encode(), stream = %w.checkpoint_stream, interval = %w.checkpoint_interval, state = %signer.state.display(), witnesses = signer.witnesses.as_ref().map_or(0, |_| 1), "checkpoints on");
    Ok(Some(signer))
}
