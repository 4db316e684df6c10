//! Reconciliation SQL: the event side of a run (latest import-process outcome per external
//! account number, order-process counts, `account.created` lookups, join-supplier events), and
//! the account timeline; storing runs with their results and reading them back ([`runs`]);
//! batches ([`batches`]).
//!
//! The event side reads only `decoded` rows, skips rows whose envelope id is a `duplicate`
//! finding, and windows on `occurred_at` (the envelope time). Queries on data_import rows repeat
//! the partial index's predicate (`event_type LIKE 'data_import.%'`) verbatim so it is used.

mod batches;
mod runs;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::Row;

use super::registration::JoinEvent;
use crate::db::{Ctx, Db, DbError};

pub(crate) use runs::ScopeState;

/// An account's latest `data_import.import_process.*` event.
#[derive(Debug, Clone)]
pub(crate) struct OutcomeRow {
    pub(crate) external: String,
    pub(crate) event_type: String,
    pub(crate) event_id: Option<String>,
    pub(crate) identifier: Option<String>,
    pub(crate) occurred_at: Option<DateTime<Utc>>,
}

/// One event of an account's timeline.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimelineEntry {
    pub(crate) occurred_at: Option<DateTime<Utc>>,
    pub(crate) published_at: DateTime<Utc>,
    pub(crate) event: Option<String>,
    pub(crate) event_id: Option<String>,
    pub(crate) status: String,
    /// `first`, `duplicate` or `conflict` (null without envelope id).
    pub(crate) id_status: Option<String>,
    pub(crate) account_number: Option<String>,
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) payload: Option<serde_json::Value>,
}

/// The payload fields reconciliation reads, by their catalogue names (generated from
/// `catalogue/`): renaming one there breaks the build here, instead of silently emptying a
/// reconciliation. Each is taken from an event version reconciliation reads it from.
mod field {
    use crate::decode::catalogue::fields as f;

    pub(crate) const EXTERNAL_IDENTIFIER: &str =
        f::data_import_import_process_complete_v1::EXTERNAL_IDENTIFIER;
    pub(crate) const IDENTIFIER: &str = f::data_import_import_process_complete_v1::IDENTIFIER;
    pub(crate) const IS_IMPORTED: &str = f::account_created_v1::IS_IMPORTED;
    pub(crate) const EXTERNAL_ORDER_ID: &str =
        f::data_import_order_process_complete_v1::EXTERNAL_ORDER_ID;
    pub(crate) const REQUESTED_AT: &str = f::lifecycle_join_supplier_requested_v1::REQUESTED_AT;
    pub(crate) const JOIN_SUPPLIER_PROCESS_NUMBER: &str =
        f::lifecycle_join_supplier_requested_v1::JOIN_SUPPLIER_PROCESS_NUMBER;
    pub(crate) const SUPPLY_POINTS: &str = f::lifecycle_join_supplier_requested_v1::SUPPLY_POINTS;
    pub(crate) const SUPPLY_POINT: &str =
        f::lifecycle_join_supplier_activation_initiated_v1::SUPPLY_POINT;
    pub(crate) const SUPPLY_POINT_ID: &str =
        f::shapes::lifecycle_join_supplier_supplypoint::EXTERNAL_IDENTIFIER;
}
use field::{
    EXTERNAL_IDENTIFIER, EXTERNAL_ORDER_ID, IDENTIFIER, IS_IMPORTED, JOIN_SUPPLIER_PROCESS_NUMBER,
    REQUESTED_AT, SUPPLY_POINT, SUPPLY_POINTS, SUPPLY_POINT_ID,
};

const OUTCOME_TYPES: &str = "('data_import.import_process.complete', \
    'data_import.import_process.error', 'data_import.import_process.cancelled', \
    'data_import.import_process.dry_run_complete', 'data_import.import_process.dry_run_error')";

const NOT_DUPLICATE: &str = "NOT EXISTS (SELECT 1 FROM audit.id_findings f \
    WHERE f.stream = e.stream AND f.stream_seq = e.stream_seq \
    AND f.published_at = e.published_at AND f.finding = 'duplicate')";

const WINDOW: &str = "($1::timestamptz IS NULL OR e.occurred_at >= $1) \
    AND ($2::timestamptz IS NULL OR e.occurred_at < $2)";

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn counts_of(v: serde_json::Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v).unwrap_or_default()
}

/// Reconciliation's reads and writes.
#[derive(Clone)]
pub struct ReconcileStore {
    db: Db,
}

impl ReconcileStore {
    pub fn new(db: Db) -> ReconcileStore {
        ReconcileStore { db }
    }

    fn pool(&self) -> &sqlx::PgPool {
        self.db.pool()
    }

    /// The latest outcome event per external account number (by envelope time, then stream
    /// order), in `[since, until)`, for `accounts` only when given.
    pub(crate) async fn import_outcomes(
        &self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        accounts: Option<&[String]>,
    ) -> Result<Vec<OutcomeRow>, DbError> {
        let only = if accounts.is_some() {
            format!("AND e.payload ->> '{EXTERNAL_IDENTIFIER}' = ANY($3)")
        } else {
            String::new()
        };
        let sql = format!(
            "SELECT DISTINCT ON (ext) ext, event_type, event_id, identifier, occurred_at FROM ( \
               SELECT e.payload ->> '{EXTERNAL_IDENTIFIER}' AS ext, e.event_type, e.event_id, \
                      e.payload ->> '{IDENTIFIER}' AS identifier, e.occurred_at, e.stream_seq \
               FROM audit.log_rows e \
               WHERE e.event_type LIKE 'data_import.%' AND e.event_type IN {OUTCOME_TYPES} \
                 AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND e.payload ->> '{EXTERNAL_IDENTIFIER}' IS NOT NULL \
                 AND {WINDOW} {only} AND {NOT_DUPLICATE} \
             ) x ORDER BY ext, occurred_at DESC NULLS LAST, stream_seq DESC"
        );
        let mut q = sqlx::query(&sql).bind(since).bind(until);
        if let Some(a) = accounts {
            q = q.bind(a);
        }
        let rows = q.fetch_all(self.pool()).await.ctx("read import outcomes")?;
        Ok(rows
            .iter()
            .map(|r| OutcomeRow {
                external: r.get("ext"),
                event_type: r.get("event_type"),
                event_id: r.get("event_id"),
                identifier: r.get("identifier"),
                occurred_at: r.get("occurred_at"),
            })
            .collect())
    }

    /// `data_import.order_process.*` events in the window by outcome (`complete`, `error`,
    /// `cancelled`), duplicates of an envelope id left out.
    pub(crate) async fn order_outcome_counts(
        &self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Result<BTreeMap<String, u64>, DbError> {
        let sql = format!(
            "SELECT substr(e.event_type, length('data_import.order_process.') + 1), count(*) \
             FROM audit.log_rows e \
             WHERE e.event_type LIKE 'data_import.%' \
               AND e.event_type LIKE 'data_import.order\\_process.%' \
               AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND {WINDOW} AND {NOT_DUPLICATE} \
             GROUP BY 1"
        );
        let rows: Vec<(String, i64)> = sqlx::query_as(&sql)
            .bind(since)
            .bind(until)
            .fetch_all(self.pool())
            .await
            .ctx("count order outcomes")?;
        Ok(rows.into_iter().map(|(k, n)| (k, to_u64(n))).collect())
    }

    /// Which of `numbers` were erased on request (`event-audit erase`), each with the tombstone
    /// that stands for the person: matched by their keyed hashes in `audit.erased_subjects`,
    /// so no number is stored in clear.
    pub(crate) async fn erased_among(
        &self,
        numbers: &[String],
    ) -> Result<HashMap<String, String>, DbError> {
        if numbers.is_empty() {
            return Ok(HashMap::new());
        }
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT n.num, s.tombstone FROM unnest($1::text[]) AS n(num) \
             CROSS JOIN audit.erasure_pepper p \
             JOIN audit.erased_subjects s ON s.subject = sha256(p.pepper || convert_to(n.num, 'UTF8'))",
        )
        .bind(numbers)
        .fetch_all(self.pool())
        .await
        .ctx("look up which accounts were erased")?;
        Ok(rows.into_iter().collect())
    }

    /// Which of `numbers` have a decoded `account.created` event with `is_imported: true`.
    pub(crate) async fn imported_account_created(
        &self,
        numbers: &[String],
    ) -> Result<HashSet<String>, DbError> {
        if numbers.is_empty() {
            return Ok(HashSet::new());
        }
        let rows: Vec<(String,)> = sqlx::query_as(&format!(
            "SELECT DISTINCT e.account_number FROM audit.log_rows e \
             JOIN unnest($1::text[]) AS n(num) ON e.account_number = n.num \
             WHERE e.account_number IS NOT NULL AND e.event_type = 'account.created' \
               AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND e.payload ->> '{IS_IMPORTED}' = 'true'"
        ))
        .bind(numbers)
        .fetch_all(self.pool())
        .await
        .ctx("look up account.created events")?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }

    /// Order-process events of the listed external order ids, in the window, by outcome;
    /// `no_event` counts the listed orders without any (duplicates of an envelope id left out).
    pub(crate) async fn order_outcome_counts_for(
        &self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        orders: &[String],
    ) -> Result<BTreeMap<String, u64>, DbError> {
        let sql = format!(
            "SELECT substr(e.event_type, length('data_import.order_process.') + 1) AS outcome, \
               count(*) AS events \
             FROM audit.log_rows e \
             WHERE e.event_type LIKE 'data_import.%' \
               AND e.event_type LIKE 'data_import.order\\_process.%' \
               AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND {WINDOW} \
               AND e.payload ->> '{EXTERNAL_ORDER_ID}' = ANY($3) AND {NOT_DUPLICATE} \
             GROUP BY 1"
        );
        let rows = sqlx::query(&sql)
            .bind(since)
            .bind(until)
            .bind(orders)
            .fetch_all(self.pool())
            .await
            .ctx("count the batch's order outcomes")?;
        let mut out = BTreeMap::new();
        for r in &rows {
            out.insert(r.get::<String, _>("outcome"), to_u64(r.get("events")));
        }
        let seen: i64 = sqlx::query_scalar(&format!(
            "SELECT count(DISTINCT e.payload ->> '{EXTERNAL_ORDER_ID}') FROM audit.log_rows e \
             WHERE e.event_type LIKE 'data_import.%' \
               AND e.event_type LIKE 'data_import.order\\_process.%' \
               AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND {WINDOW} \
               AND e.payload ->> '{EXTERNAL_ORDER_ID}' = ANY($3)"
        ))
        .bind(since)
        .bind(until)
        .bind(orders)
        .fetch_one(self.pool())
        .await
        .ctx("count the batch's orders with events")?;
        let listed = orders.iter().collect::<HashSet<_>>().len() as u64;
        out.insert("no_event".into(), listed.saturating_sub(to_u64(seen)));
        Ok(out)
    }

    /// The decoded `lifecycle.join-supplier.*` events of these platform account numbers, one
    /// per supply point they name (`supply_points[]` or `supply_point`), duplicates of an
    /// envelope id left out.
    pub(crate) async fn join_supplier_events(
        &self,
        numbers: &[String],
    ) -> Result<Vec<JoinEvent>, DbError> {
        if numbers.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT e.account_number, sp ->> '{SUPPLY_POINT_ID}' AS mpxn, e.event_type, \
               e.occurred_at, e.payload ->> '{REQUESTED_AT}' AS requested_at, \
               e.payload ->> '{JOIN_SUPPLIER_PROCESS_NUMBER}' AS process, e.stream_seq \
             FROM audit.log_rows e \
             JOIN unnest($1::text[]) AS n(num) ON e.account_number = n.num \
             CROSS JOIN LATERAL jsonb_array_elements(CASE \
                 WHEN jsonb_typeof(e.payload -> '{SUPPLY_POINTS}') = 'array' THEN e.payload -> '{SUPPLY_POINTS}' \
                 WHEN jsonb_typeof(e.payload -> '{SUPPLY_POINT}') = 'object' THEN jsonb_build_array(e.payload -> '{SUPPLY_POINT}') \
                 ELSE '[]'::jsonb END) AS sp \
             WHERE e.account_number IS NOT NULL \
               AND e.event_type LIKE 'lifecycle.join-supplier.%' \
               AND audit.latest_status(e.stream, e.stream_seq, e.published_at, e.status) = 'decoded' AND sp ->> '{SUPPLY_POINT_ID}' IS NOT NULL \
               AND {NOT_DUPLICATE}"
        );
        let rows = sqlx::query(&sql)
            .bind(numbers)
            .fetch_all(self.pool())
            .await
            .ctx("read join-supplier events")?;
        Ok(rows
            .iter()
            .map(|r| JoinEvent {
                account_number: r.get("account_number"),
                mpxn: r.get("mpxn"),
                event_type: r.get("event_type"),
                occurred_at: r.get("occurred_at"),
                requested_at: r
                    .get::<Option<String>, _>("requested_at")
                    .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                    .map(|t| t.with_timezone(&Utc)),
                process: r.get("process"),
                stream_seq: r.get("stream_seq"),
            })
            .collect())
    }

    /// The events of one external account number, oldest first: its import-process events, and
    /// the events of the platform account numbers that its `complete` events or reconciliation
    /// results name.
    pub(crate) async fn account_timeline(
        &self,
        external: &str,
        limit: i64,
    ) -> Result<Vec<TimelineEntry>, DbError> {
        let rows = sqlx::query(&format!(
            "WITH nums AS ( \
               SELECT e.payload ->> '{IDENTIFIER}' AS num FROM audit.log_rows e \
                WHERE e.event_type LIKE 'data_import.%' \
                  AND e.payload ->> '{EXTERNAL_IDENTIFIER}' = $1 \
                  AND e.payload ->> '{IDENTIFIER}' IS NOT NULL \
               UNION \
               SELECT platform_account_number FROM audit.reconcile_results \
                WHERE external_account_number = $1 AND platform_account_number IS NOT NULL) \
             SELECT e.occurred_at, e.published_at, \
               CASE WHEN e.event_version IS NULL THEN e.event_type \
                    ELSE e.event_type || '-' || e.event_version END AS event, \
               e.event_id, e.status, \
               CASE WHEN e.event_id IS NULL THEN NULL ELSE COALESCE(f.finding, 'first') END AS id_status, \
               e.account_number, e.stream, e.stream_seq, e.payload \
             FROM audit.log_rows e \
             LEFT JOIN audit.id_findings f ON f.stream = e.stream \
               AND f.stream_seq = e.stream_seq AND f.published_at = e.published_at \
             WHERE (e.event_type LIKE 'data_import.%' AND e.payload ->> '{EXTERNAL_IDENTIFIER}' = $1) \
                OR e.account_number IN (SELECT num FROM nums) \
             ORDER BY e.occurred_at NULLS LAST, e.stream_seq LIMIT $2"
        ))
        .bind(external)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("read account timeline")?;
        Ok(rows
            .iter()
            .map(|r| TimelineEntry {
                occurred_at: r.get("occurred_at"),
                published_at: r.get("published_at"),
                event: r.get("event"),
                event_id: r.get("event_id"),
                status: r.get("status"),
                id_status: r.get("id_status"),
                account_number: r.get("account_number"),
                stream: r.get("stream"),
                stream_seq: r.get("stream_seq"),
                payload: r.get("payload"),
            })
            .collect())
    }
}

/// A JSON value of maps with string keys and plain structs (cannot fail; `null` if it did).
fn json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
