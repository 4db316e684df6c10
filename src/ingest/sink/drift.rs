//! Drift observations: what a batch's rows carry that the catalogue does not declare (path and
//! JSON kind), which declared fields they have, and their field errors, aggregated per batch
//! and written in the batch's own transaction to `audit.field_observations`, so `drift` reads
//! aggregates, never raw bytes. Also tells which undeclared paths the log has never seen.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use crate::db::{Ctx, DbError};
use crate::decode::catalogue::kind::{fold_indexes, JsonKind};
use crate::decode::catalogue::rt::{ErrorCode, FieldError};
use crate::decode::catalogue::EVENTS;
use crate::decode::verdict::Status;
use crate::row::canon::clean;
use crate::row::pgcopy::CopyBuf;
use crate::row::record::Record;

/// (event, status, what, path, kind, code).
type Key = (
    String,
    &'static str,
    &'static str,
    String,
    &'static str,
    &'static str,
);

/// One aggregate.
#[derive(Debug, Clone)]
pub(crate) struct Obs {
    pub(crate) count: i64,
    pub(crate) declared_seen: u64,
    pub(crate) first: DateTime<Utc>,
    pub(crate) last: DateTime<Utc>,
}

fn add(map: &mut BTreeMap<Key, Obs>, key: Key, at: DateTime<Utc>, seen: u64) {
    let o = map.entry(key).or_insert(Obs {
        count: 0,
        declared_seen: 0,
        first: at,
        last: at,
    });
    o.count += 1;
    o.declared_seen |= seen;
    o.first = o.first.min(at);
    o.last = o.last.max(at);
}

/// The found kind in a mismatch message (`path: expected X, found Y`).
fn found_kind(e: &FieldError) -> &'static str {
    e.message
        .rsplit_once(", found ")
        .and_then(|(_, f)| JsonKind::of_found(f))
        .map_or("", JsonKind::as_str)
}

/// The batch's observations, aggregated. Pure.
pub(crate) fn aggregate(recs: &[&Record]) -> BTreeMap<Key, Obs> {
    let mut map = BTreeMap::new();
    for r in recs {
        let event = match r.catalogue_index {
            Some(i) => EVENTS[usize::from(i)].name.to_owned(),
            None => r.event_name().unwrap_or_default(),
        };
        let status = r.status.as_str();
        let at = r.published_at;
        add(
            &mut map,
            (event.clone(), status, "rows", String::new(), "", ""),
            at,
            r.declared_seen,
        );
        if let Some(list) = r.unknown_fields.as_deref() {
            let paths: Vec<String> = serde_json::from_str(list).unwrap_or_default();
            for (p, k) in paths.iter().zip(&r.unknown_kinds) {
                let key = (
                    event.clone(),
                    status,
                    "undeclared",
                    // A key may hold NUL, which a text column refuses: cleaned like all text.
                    clean(&fold_indexes(p)),
                    k.as_str(),
                    "",
                );
                add(&mut map, key, at, 0);
            }
        }
        if r.status == Status::Invalid {
            let errors: Vec<FieldError> = r
                .errors
                .as_deref()
                .and_then(|e| serde_json::from_str(e).ok())
                .unwrap_or_default();
            for e in &errors {
                let kind = if e.code == ErrorCode::InvalidType {
                    found_kind(e)
                } else {
                    ""
                };
                let key = (
                    event.clone(),
                    status,
                    "error",
                    clean(&fold_indexes(&e.path)),
                    kind,
                    e.code.as_str(),
                );
                add(&mut map, key, at, 0);
            }
        }
    }
    map
}

/// At most this many undeclared paths are remembered (beyond, batches simply ask the log).
const KNOWN_PATHS_MAX: usize = 100_000;

/// Undeclared (event, path) pairs this process knows the log holds (from committed batches): a
/// batch whose undeclared paths are all known skips the query for paths never seen.
#[derive(Debug, Default)]
pub(crate) struct KnownPaths(std::sync::Mutex<HashSet<(String, String)>>);

impl KnownPaths {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers the pairs of a batch that committed.
    pub(crate) fn remember(&self, pairs: Vec<(String, String)>) {
        let mut known = self.lock();
        for p in pairs {
            if known.len() >= KNOWN_PATHS_MAX {
                break;
            }
            known.insert(p);
        }
    }
}

/// What [`observe`] found: per event, how many undeclared paths the log had never seen before
/// this batch; and the batch's undeclared pairs, to remember once it commits.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub(crate) new_paths: Vec<(String, u64)>,
    pub(crate) pairs: Vec<(String, String)>,
}

/// Writes the batch's observations.
pub(crate) async fn observe(
    tx: &mut PgConnection,
    recs: &[&Record],
    batch_id: i64,
    catalogue: &str,
    known: &KnownPaths,
) -> Result<Observed, DbError> {
    let map = aggregate(recs);
    let mut observed = Observed::default();
    if map.is_empty() {
        return Ok(observed);
    }
    let (mut ev, mut st, mut wh, mut pa, mut ki, mut co) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let (mut n, mut seen, mut first, mut last) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((event, status, what, path, kind, code), o) in &map {
        ev.push(event.as_str());
        st.push(*status);
        wh.push(*what);
        pa.push(path.as_str());
        ki.push(*kind);
        co.push(*code);
        n.push(o.count);
        seen.push(o.declared_seen as i64);
        first.push(o.first);
        last.push(o.last);
    }
    let undeclared: Vec<usize> = {
        let known = known.lock();
        (0..wh.len())
            .filter(|&i| wh[i] == "undeclared")
            .filter(|&i| !known.contains(&(ev[i].to_owned(), pa[i].to_owned())))
            .collect()
    };
    observed.pairs = undeclared
        .iter()
        .map(|&i| (ev[i].to_owned(), pa[i].to_owned()))
        .collect();
    if !undeclared.is_empty() {
        let e: Vec<&str> = undeclared.iter().map(|&i| ev[i]).collect();
        let p: Vec<&str> = undeclared.iter().map(|&i| pa[i]).collect();
        let rows = sqlx::query(
            "SELECT u.event, count(DISTINCT u.path) AS n FROM UNNEST($1::text[], $2::text[]) AS u(event, path) \
             WHERE NOT EXISTS (SELECT 1 FROM audit.field_observations o \
                 WHERE o.event = u.event AND o.what = 'undeclared' AND o.path = u.path) \
             GROUP BY u.event",
        )
        .bind(&e)
        .bind(&p)
        .fetch_all(&mut *tx)
        .await
        .ctx("find undeclared fields never seen")?;
        for row in rows {
            let event: String = row.try_get("event").ctx("read new fields")?;
            let count: i64 = row.try_get("n").ctx("read new fields")?;
            observed
                .new_paths
                .push((event, u64::try_from(count).unwrap_or(0)));
        }
    }
    // One binary COPY (a fifth of the cost of an INSERT from arrays of ~260 rows).
    let mut buf = CopyBuf::with_capacity(ev.len() * 160);
    for i in 0..ev.len() {
        buf.row(12);
        buf.int8(batch_id);
        buf.text(Some(catalogue));
        buf.text(Some(ev[i]));
        buf.text(Some(st[i]));
        buf.text(Some(wh[i]));
        buf.text(Some(pa[i]));
        buf.text(Some(ki[i]));
        buf.text(Some(co[i]));
        buf.int8(n[i]);
        buf.int8(seen[i]);
        buf.timestamptz(Some(first[i]));
        buf.timestamptz(Some(last[i]));
    }
    let mut copy = tx
        .copy_in_raw(
            "COPY audit.field_observations (batch_id, catalogue, event, status, what, path, kind, code, \
             count, declared_seen, first_at, last_at) FROM STDIN WITH (FORMAT binary)",
        )
        .await
        .ctx("record field observations")?;
    copy.send(buf.finish())
        .await
        .ctx("record field observations")?;
    copy.finish().await.ctx("record field observations")?;
    Ok(observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_folded_and_cleaned() {
        let raw = br#"{"specversion":"1.0","type":"account.occupied-v1","id":"i","data":{"account_number":"A","a\u0000b":1,"l":[{"x":1}]}}"#;
        let meta = crate::row::record::Meta {
            stream: std::sync::Arc::from("S"),
            stream_seq: 1,
            published_at: DateTime::UNIX_EPOCH,
            subject: "s".into(),
            delivery_count: 1,
            headers: vec![],
        };
        let naming = crate::row::record::Naming::default();
        let r = crate::row::record::record(
            meta,
            bytes::Bytes::from_static(raw),
            &naming,
            DateTime::UNIX_EPOCH,
        );
        assert!(
            r.unknown_fields.is_some(),
            "{:?} {:?} {:?}",
            r.status,
            r.errors,
            r.unknown_fields
        );
        let map = aggregate(&[&r]);
        let paths: Vec<&str> = map
            .keys()
            .filter(|k| k.2 == "undeclared")
            .map(|k| k.3.as_str())
            .collect();
        assert_eq!(paths, vec!["a\u{FFFD}b", "l"]);
    }
}
