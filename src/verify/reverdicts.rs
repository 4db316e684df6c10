//! The re-verdicts' tamper evidence (`reprocess`): every re-verdict row rehashed from its
//! columns, every closed run's digest recomputed over its rows and its pages' counts added up,
//! and the chain of closed runs walked from the zero hash. Its own SQL (read-only), streamed:
//! memory stays bounded.

use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::db::{Ctx, Db, DbError};
use crate::row::reverdict::{recanonical_errors, recanonical_strings, run_hash, Reverdict};

/// `Ok(Some(why))` names the first re-verdict, run or run end that does not match; with the
/// closed runs' end hashes in chain order as far as the chain holds (the leaves of the
/// re-verdict runs' Merkle tree).
pub(crate) async fn check_runs(db: &Db) -> Result<(Option<String>, Vec<[u8; 32]>), DbError> {
    let mut leaves = Vec::new();
    let why = walk(db, &mut leaves).await?;
    Ok((why, leaves))
}

async fn walk(db: &Db, leaves: &mut Vec<[u8; 32]>) -> Result<Option<String>, DbError> {
    let present: bool = sqlx::query_scalar("SELECT to_regclass('audit.reverdicts') IS NOT NULL")
        .fetch_one(db.pool())
        .await
        .ctx("look up re-verdicts")?;
    if !present {
        return Ok(None);
    }
    let ends = sqlx::query(
        "SELECT run_id, rows, changed, digest, prev_hash, hash FROM audit.reprocess_run_ends",
    )
    .fetch_all(db.pool())
    .await
    .ctx("read reprocess run ends")?;
    let mut by_prev = std::collections::HashMap::new();
    for e in &ends {
        let prev: Vec<u8> = e.try_get("prev_hash").ctx("read a run end")?;
        let run_id: i64 = e.try_get("run_id").ctx("read a run end")?;
        if by_prev.insert(prev, e).is_some() {
            return Ok(Some(format!(
                "reprocess run {run_id}: two closed runs follow the same one (run chain forked)"
            )));
        }
    }
    let mut prev = vec![0u8; 32];
    let mut walked = 0usize;
    while let Some(e) = by_prev.get(&prev) {
        let run_id: i64 = e.try_get("run_id").ctx("read a run end")?;
        let rows: i64 = e.try_get("rows").ctx("read a run end")?;
        let changed: i64 = e.try_get("changed").ctx("read a run end")?;
        let digest: Vec<u8> = e.try_get("digest").ctx("read a run end")?;
        let hash: Vec<u8> = e.try_get("hash").ctx("read a run end")?;
        if run_hash(&prev, run_id, rows, changed, &digest)[..] != hash[..] {
            return Ok(Some(format!(
                "reprocess run {run_id}: closing hash does not match (run end edited)"
            )));
        }
        if let Some(why) = check_run(db, run_id, changed, &digest).await? {
            return Ok(Some(why));
        }
        if let Some(why) = check_pages(db, run_id, rows, changed).await? {
            return Ok(Some(why));
        }
        if let Ok(h) = <[u8; 32]>::try_from(hash.as_slice()) {
            leaves.push(h);
        }
        prev = hash;
        walked += 1;
    }
    if walked != ends.len() {
        return Ok(Some(format!(
            "reprocess runs: {} closed runs, {walked} on the chain (a run end removed or edited)",
            ends.len()
        )));
    }
    Ok(None)
}

async fn check_run(
    db: &Db,
    run_id: i64,
    changed: i64,
    digest: &[u8],
) -> Result<Option<String>, DbError> {
    let mut stream = sqlx::query(
        "SELECT stream, stream_seq, published_at, catalogue, old_status, status, \
             errors::text AS errors, unknown_fields::text AS unknown_fields, row_hash \
         FROM audit.reverdicts WHERE run_id = $1 ORDER BY stream, stream_seq, published_at",
    )
    .bind(run_id)
    .fetch(db.pool());
    let mut h = Sha256::new();
    let mut n = 0i64;
    while let Some(r) = stream.try_next().await.ctx("read re-verdicts")? {
        let errors: Option<String> = r.try_get("errors").ctx("read a re-verdict")?;
        let unknown: Option<String> = r.try_get("unknown_fields").ctx("read a re-verdict")?;
        let v = Reverdict {
            run_id,
            stream: r.try_get("stream").ctx("read a re-verdict")?,
            stream_seq: r.try_get("stream_seq").ctx("read a re-verdict")?,
            published_at: r.try_get("published_at").ctx("read a re-verdict")?,
            catalogue: r.try_get("catalogue").ctx("read a re-verdict")?,
            old_status: r.try_get("old_status").ctx("read a re-verdict")?,
            status: r.try_get("status").ctx("read a re-verdict")?,
            errors: recanonical_errors(errors.as_deref()),
            unknown_fields: recanonical_strings(unknown.as_deref()),
        };
        let stored: Vec<u8> = r.try_get("row_hash").ctx("read a re-verdict")?;
        if v.hash()[..] != stored[..] {
            return Ok(Some(format!(
                "re-verdict run={run_id} stream={} stream_seq={}: hash does not match its columns (re-verdict edited)",
                v.stream, v.stream_seq
            )));
        }
        h.update(&stored);
        n += 1;
    }
    if n != changed {
        return Ok(Some(format!("reprocess run {run_id}: {n} re-verdicts found, the run closed with {changed} (re-verdicts deleted or added)")));
    }
    let d: [u8; 32] = h.finalize().into();
    if d[..] != digest[..] {
        return Ok(Some(format!(
            "reprocess run {run_id}: re-verdict hashes do not match the run's digest"
        )));
    }
    Ok(None)
}

/// The run's recorded pages add up to what its end (which the run hash covers) says it judged
/// and changed.
async fn check_pages(
    db: &Db,
    run_id: i64,
    rows: i64,
    changed: i64,
) -> Result<Option<String>, DbError> {
    let (judged, stored): (i64, i64) = sqlx::query_as(
        "SELECT COALESCE(sum(rows), 0)::int8, COALESCE(sum(changed), 0)::int8 \
         FROM audit.reprocess_pages WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_one(db.pool())
    .await
    .ctx("read a reprocess run's pages")?;
    if (judged, stored) != (rows, changed) {
        return Ok(Some(format!(
            "reprocess run {run_id}: its pages record {judged} rows judged and {stored} changed, the run closed with {rows} and {changed} (pages edited, added or removed)"
        )));
    }
    Ok(None)
}
