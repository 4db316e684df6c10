//! What the daemon does at start-up, before its signer and its ingest: with a signing key, it
//! reads what the key signed last (its memory file; when that is missing, the newest checkpoint
//! a copy of the tiles holds that opens with the key, said in a line and
//! `event_audit_signer_memory_missing`, unless the key signed nothing the database or a copy
//! holds: a new key, whose first round writes the file), and when the database's
//! tree is behind it, restores the lost leaves from its own tiles (a directory or a bucket) or a
//! copy named in its settings (the account index's updates it lost are replayed by the index's
//! updater before it indexes the restored leaves). Each finding is one line and a metric; nothing here stops the daemon (the signer
//! refuses to sign a tree that contradicts what the key signed, whatever happened here).

use super::metrics::RestoreMetrics;
use super::{restore, Copies, Outcome, RestoreError, Target};
use crate::config::Settings;
use crate::log::restored::AppendError;
use crate::log::signed::Memory;
use crate::log::Log;
use crate::witnessed::signer::load_key;

/// The reason a restore at start-up records.
const REASON: &str = "at start-up, the database's tree was behind the checkpoint the log's key signed (a database restored from a backup)";

/// See the module.
/// The rows it appends (the restored leaves and the restore's record) are counted in `rows`
/// (`event_audit_audit_rows_total`).
pub(crate) async fn at_start(
    s: &Settings,
    log: &Log,
    m: &RestoreMetrics,
    rows: &prometheus::IntCounter,
) {
    let Some(path) = &s.witness.signing_key_file else {
        return;
    };
    // A key that cannot be read is the signer's to report.
    let Ok(key) = load_key(path) else {
        return;
    };
    let copies = Copies {
        key: key.public(),
        origin: key.name.clone(),
        copies: crate::index::replay::copies_of(s),
        timeout: crate::index::replay::COPY_TIMEOUT,
        object_store: s.object_store.clone(),
        tls: crate::mirror::source::Source::tls_of(&s.witness),
    };
    let remembered = s.witness.signer_state_path().and_then(|p| {
        Memory::load(&p, &key.public())
            .ok()
            .flatten()
            .map(|m| (p, m))
    });
    let target = match &remembered {
        Some((_, mem)) => mem.logs.get(&key.name).map(|r| Target {
            size: r.size,
            root: r.root,
        }),
        None => {
            let found = copies.newest().await;
            // A key that signed nothing the database or a copy holds is a new one: its memory
            // is written by its first round, and nothing was lost.
            let stored = crate::log::checkpoints::CheckpointStore::newest_stored(log.db())
                .await
                .ok()
                .flatten()
                .is_some_and(|n| crate::tlog::note::open(&n, &key.public()).is_ok());
            let state = s
                .witness
                .signer_state_path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            if found.is_none() && !stored {
                tracing::info!(%state, "the signer has no memory file yet and its key signed nothing the database or a copy of the tiles holds: a new key, whose first round writes the file");
            } else {
                m.memory_missing.set(1);
                m.memory_lost_at.set(chrono::Utc::now().timestamp());
                tracing::warn!(
                    %state,
                    "the signer's memory file is missing: it is rebuilt from the checkpoints the key signed wherever they are found (the database, the checkpoint stream and directory); {}",
                    match &found {
                        Some(t) => format!("the newest a copy of the tiles holds is of size {}, which the database's tree must reach before anything is signed", t.size),
                        None => "no copy of the tiles holds one".to_owned(),
                    }
                );
            }
            found
        }
    };
    let Some(target) = target else {
        return;
    };
    // Another daemon of the log may restore first: then the tree moved, and a second look
    // finds nothing to restore.
    let mut done = restore(log, &copies, &target, REASON, false).await;
    if let Err(RestoreError::Append(AppendError::Moved { .. })) = &done {
        done = restore(log, &copies, &target, REASON, false).await;
    }
    match done {
        Ok(Outcome::Current { .. }) => m.behind.set(0),
        Ok(o) => {
            m.behind.set(0);
            tracing::warn!("restore: {}", o.line());
            if let Outcome::Restored { record, .. } = &o {
                m.restores.inc();
                m.leaves.inc_by(record.size - record.database_size);
                rows.inc_by(record.size - record.database_size + 1);
            }
        }
        Err(e) => {
            m.behind.set(1);
            tracing::error!("restore: {e}");
        }
    }
}
