//! `prove`: an evidence bundle for some rows (one event, or an account's events) against one
//! signed checkpoint: each row's raw bytes, its leaf data (the canonical encoding, whose SHA-256
//! is the row hash; for row encoding 3 with the opening of its commitment, none of them once the
//! row is erased), the decoded columns read back from that leaf data (so every field shown is
//! covered by the proof; every column the leaf covers, none left out) and its inclusion proof,
//! plus the checkpoint's signed note. Every proof is checked here before it is written, so a
//! bundle from a database that does not match the checkpoint is refused, not handed out.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::db::DbError;
use crate::evidence::bundle::{fields, json::Json, leaf};
use crate::log::read::StoredRow;
use crate::log::tree::{RowPlace, TreeStore};
use crate::row::hex;
use crate::tlog::merkle;
use crate::tlog::note::Checkpoint;

/// The bundle format's name.
pub(crate) use crate::evidence::bundle::FORMAT;

/// One proven row.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Entry {
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) leaf_index: u64,
    pub(crate) raw: String,
    /// Read back from the leaf data (`evidence::bundle::fields`).
    pub(crate) columns: Json,
    pub(crate) leaf_data: String,
    pub(crate) row_hash: String,
    pub(crate) inclusion_proof: Vec<String>,
    /// The opening of a version 3 leaf's commitment (base64); null for other leaves and for
    /// an erased row, whose personal columns the entry does not show.
    pub(crate) opening: Option<String>,
}

/// The evidence bundle (see docs/auditors.md, "Checking an evidence bundle").
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Bundle {
    pub(crate) format: &'static str,
    pub(crate) checkpoint: String,
    pub(crate) entries: Vec<Entry>,
}

/// Why no bundle could be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProveError {
    #[error("the log holds no row {0}")]
    NotFound(String),
    #[error("row {what} (leaf {index}) is not yet covered by the checkpoint of size {size}; wait for the next checkpoint")]
    NotWitnessed { what: String, index: u64, size: u64 },
    #[error("row {0}: the database does not match the checkpoint (its proof fails); run `event-audit verify --public-key …`")]
    Mismatch(String),
    #[error("row {what}: its {column} cannot be shown in a bundle (not JSON, or a time outside the years 0000 to 9999), and a bundle shows every column; no bundle is written")]
    Unshowable { what: String, column: &'static str },
    #[error("row {0}: its personal data was erased, and it was written in row encoding 1 or 2, whose leaf data held them: only its row hash remains, and `verify` reports it as erased, its contents unverifiable; no bundle is written")]
    ErasedBeforeV3(String),
    #[error("row {what}: its archived copy in {dir} does not make the row hash the log keeps (the archive changed)")]
    ArchiveMismatch { what: String, dir: String },
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
    #[error("the person: {0}")]
    Person(String),
    #[error("the account index has no update that the checkpoint of size {size} covers yet (is the daemon signing checkpoints, without `--no-account-index`?); wait for the next checkpoint round")]
    NoIndex { size: u64 },
    #[error(transparent)]
    Claim(#[from] crate::index::complete::ClaimError),
    #[error("no account index consistency proof: {0}")]
    Consistency(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// What a query asks to prove.
pub(crate) enum Query<'a> {
    Event {
        stream: &'a str,
        seq: i64,
    },
    Account {
        number: &'a str,
        since: &'a str,
        until: &'a str,
    },
}

/// The rows `query` names, in leaf order; none is an error saying why.
pub(crate) async fn places(
    store: &TreeStore,
    query: &Query<'_>,
) -> Result<Vec<RowPlace>, ProveError> {
    let places: Vec<RowPlace> = match *query {
        Query::Event { stream, seq } => store.place(stream, seq).await?.into_iter().collect(),
        Query::Account {
            number,
            since,
            until,
        } => store.account_places(number, since, until).await?,
    };
    if places.is_empty() {
        return Err(ProveError::NotFound(match *query {
            Query::Event { stream, seq } => format!("stream={stream} stream_seq={seq}"),
            Query::Account {
                number,
                since,
                until,
            } => {
                let erased = crate::log::read::erasure_counts(store.db()).await.ok();
                no_account(number, since, until, erased)
            }
        }));
    }
    Ok(places)
}

/// The row at `p`, its place in the tree and how messages name it (`stream=… stream_seq=…`):
/// refused when the checkpoint does not cover it, or when it is not stored.
pub(crate) async fn witnessed_row(
    store: &TreeStore,
    cp: &Checkpoint,
    p: &RowPlace,
) -> Result<(String, u64, StoredRow), ProveError> {
    let what = format!("stream={} stream_seq={}", p.stream, p.stream_seq);
    let index = u64::try_from(p.leaf_index).unwrap_or(u64::MAX);
    if index >= cp.size {
        return Err(ProveError::NotWitnessed {
            what,
            index,
            size: cp.size,
        });
    }
    let row = crate::log::read::stored_row(store.db(), &p.stream, p.stream_seq)
        .await?
        .ok_or_else(|| ProveError::NotFound(what.clone()))?;
    Ok((what, index, row))
}

/// The bundle for `query` against the checkpoint `cp` (whose signed note is `note`).
pub(crate) async fn prove(
    store: &TreeStore,
    query: Query<'_>,
    cp: &Checkpoint,
    note: &str,
    archive: Option<&std::path::Path>,
) -> Result<Bundle, ProveError> {
    let places = places(store, &query).await?;
    let mut entries = Vec::with_capacity(places.len());
    for p in places {
        entries.push(entry(store, cp, &p, archive).await?);
    }
    Ok(Bundle {
        format: FORMAT,
        checkpoint: note.to_owned(),
        entries,
    })
}

/// The entry of the row at `p`: its raw bytes, leaf data, columns read back from the leaf data,
/// opening and inclusion proof against `cp`, each checked here (with `archive`, a pruned or
/// erased row from its archived copy).
pub(crate) async fn entry(
    store: &TreeStore,
    cp: &Checkpoint,
    p: &RowPlace,
    archive: Option<&std::path::Path>,
) -> Result<Entry, ProveError> {
    let (what, index, row) = witnessed_row(store, cp, p).await?;
    // A pruned (or erased) row whose archive is given: its archived copy, if it makes the
    // row hash the log keeps.
    let archived = match archive {
        Some(dir) if crate::verify::rows::emptied(&row.view()) => {
            let at = row.view().published_at_us;
            crate::archive::read::find(dir, &row.stream, row.stream_seq, at)?
        }
        _ => None,
    };
    let view = archived.as_ref().map_or_else(|| row.view(), |a| a.view());
    if view.commitment.is_none() && crate::verify::rows::emptied(&view) {
        return Err(ProveError::ErasedBeforeV3(what));
    }
    let data =
        crate::verify::rows::encoding(&view).ok_or_else(|| ProveError::Mismatch(what.clone()))?;
    if let (Some(dir), Some(_)) = (archive, &archived) {
        // Its columns must make the kept row hash, its commitment open to its raw message.
        let holds = matches!(crate::verify::rows::check(&view),
            crate::verify::rows::Check::Ok(h) if h[..] == row.row_hash[..]);
        if !holds || Sha256::digest(&data)[..] != row.row_hash[..] {
            return Err(ProveError::ArchiveMismatch {
                what,
                dir: dir.display().to_string(),
            });
        }
    }
    let opening = crate::verify::rows::opening(&view);
    let mut parsed = leaf::parse(&data).map_err(|_| ProveError::Mismatch(what.clone()))?;
    if let Some(o) = &opening {
        leaf::open(&mut parsed, o).map_err(|_| ProveError::Mismatch(what.clone()))?;
    }
    let columns = fields::columns(&parsed).map_err(|column| ProveError::Unshowable {
        what: what.clone(),
        column,
    })?;
    let row_hash: [u8; 32] = Sha256::digest(&data).into();
    let proof = store.inclusion(index, cp.size).await?;
    merkle::verify_inclusion(
        index,
        cp.size,
        &merkle::leaf_hash(&row_hash),
        &proof,
        &cp.root,
    )
    .map_err(|_| ProveError::Mismatch(what.clone()))?;
    Ok(Entry {
        stream: row.stream.clone(),
        stream_seq: row.stream_seq,
        leaf_index: index,
        raw: B64.encode(view.raw),
        columns,
        leaf_data: B64.encode(&data),
        row_hash: hex(&row_hash),
        inclusion_proof: proof.iter().map(|h| B64.encode(h)).collect(),
        opening: opening.map(|o| B64.encode(o)),
    })
}

/// Why no row of account `number` (with `occurred_at` in `[since, until)`, either bound empty)
/// was found, and what erasures (`(by account, by publication time)`, when they could be
/// counted) may have to do with it.
fn no_account(number: &str, since: &str, until: &str, erased: Option<(i64, i64)>) -> String {
    let when = match (since, until) {
        ("", "") => String::new(),
        (s, "") => format!(" that occurred at or after {s}"),
        ("", u) => format!(" that occurred before {u}"),
        (s, u) => format!(" that occurred from {s} until {u}"),
    };
    let hint = match erased {
        Some((0, 0)) => "; no erasure is recorded, so none of its rows was erased: check the account number".to_owned(),
        Some((by_account, by_time)) => format!(
            "; an erased row no longer carries its account number, and the log records {by_account} erasure(s) by account and {by_time} by publication time (`event-audit verify` lists them): an erased row is still proven by its stream and sequence, which its erasure's record lists (`prove --stream event-audit.erasures --seq N` shows erasure N)"
        ),
        None => String::new(),
    };
    format!("for account {number}{when}{hint}")
}

/// The canonical encoding of a stored row (the leaf data), built as `verify` builds it; `None`
/// when a JSON column lost its recorded shape.
pub fn leaf_data(row: &StoredRow) -> Option<Vec<u8>> {
    crate::verify::rows::encoding(&row.view())
}

#[cfg(test)]
mod tests {
    use super::no_account;

    #[test]
    fn an_account_not_found_says_which_time_and_whether_erasures_may_explain_it() {
        let plain = no_account("A-1", "", "", Some((0, 0)));
        assert!(
            !plain.contains("occurred") && plain.contains("no erasure is recorded"),
            "{plain}"
        );
        let erased = no_account("A-1", "", "", Some((2, 1)));
        assert!(
            erased.contains("2 erasure(s) by account and 1 by publication time"),
            "{erased}"
        );
        let since = no_account("A-1", "2026-01-01T00:00:00+00:00", "", None);
        assert_eq!(
            since,
            "for account A-1 that occurred at or after 2026-01-01T00:00:00+00:00"
        );
        let both = no_account("A-1", "S", "U", None);
        assert_eq!(both, "for account A-1 that occurred from S until U");
    }
}
