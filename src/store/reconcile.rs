//! Reconciliation SQL: the event side of a run (latest import-process outcome per external
//! account number, order-process counts, `account.created` lookups), storing runs with their
//! results, and reading them back for reports, history and the account timeline.
//!
//! The event side reads only `decoded` rows, skips rows whose envelope id is a `duplicate`
//! finding, and windows on `occurred_at` (the envelope time). Queries on data_import rows repeat
//! the partial index's predicate (`event_type LIKE 'data_import.%'`) verbatim so it is used.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::Row;

use super::{Ctx, Store, StoreError};
use crate::reconcile::model::{AccountResult, Outcome, RestSummary, RunReport, RunSummary};
use crate::reconcile::records::MeterPointStatus;
use crate::reconcile::verdict::Verdict;

/// An account's latest `data_import.import_process.*` event.
#[derive(Debug, Clone)]
pub struct OutcomeRow {
    pub external: String,
    pub event_type: String,
    pub event_id: Option<String>,
    pub identifier: Option<String>,
    pub occurred_at: Option<DateTime<Utc>>,
}

/// One event of an account's timeline.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineEntry {
    pub occurred_at: Option<DateTime<Utc>>,
    pub published_at: DateTime<Utc>,
    pub event: Option<String>,
    pub event_id: Option<String>,
    pub status: String,
    /// `first`, `duplicate` or `conflict` (null without envelope id).
    pub id_status: Option<String>,
    pub account_number: Option<String>,
    pub stream: String,
    pub stream_seq: i64,
    pub payload: Option<serde_json::Value>,
}

const OUTCOME_TYPES: &str = "('data_import.import_process.complete', \
    'data_import.import_process.error', 'data_import.import_process.cancelled', \
    'data_import.import_process.dry_run_complete', 'data_import.import_process.dry_run_error')";

const NOT_DUPLICATE: &str = "NOT EXISTS (SELECT 1 FROM audit.id_findings f \
    WHERE f.stream = e.stream AND f.stream_seq = e.stream_seq \
    AND f.published_at = e.published_at AND f.finding = 'duplicate')";

const WINDOW: &str = "($1::timestamptz IS NULL OR e.occurred_at >= $1) \
    AND ($2::timestamptz IS NULL OR e.occurred_at < $2)";

/// Results are written this many rows per statement.
const CHUNK: usize = 5_000;

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn counts_of(v: serde_json::Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v).unwrap_or_default()
}

impl Store {
    /// The latest outcome event per external account number (by envelope time, then stream
    /// order), in `[since, until)`, for `accounts` only when given.
    pub async fn import_outcomes(
        &self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
        accounts: Option<&[String]>,
    ) -> Result<Vec<OutcomeRow>, StoreError> {
        let only = if accounts.is_some() {
            "AND e.payload ->> 'external_identifier' = ANY($3)"
        } else {
            ""
        };
        let sql = format!(
            "SELECT DISTINCT ON (ext) ext, event_type, event_id, identifier, occurred_at FROM ( \
               SELECT e.payload ->> 'external_identifier' AS ext, e.event_type, e.event_id, \
                      e.payload ->> 'identifier' AS identifier, e.occurred_at, e.stream_seq \
               FROM audit.events e \
               WHERE e.event_type LIKE 'data_import.%' AND e.event_type IN {OUTCOME_TYPES} \
                 AND e.status = 'decoded' AND e.payload ->> 'external_identifier' IS NOT NULL \
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
                external: r.get(0),
                event_type: r.get(1),
                event_id: r.get(2),
                identifier: r.get(3),
                occurred_at: r.get(4),
            })
            .collect())
    }

    /// `data_import.order_process.*` events in the window by outcome (`complete`, `error`,
    /// `cancelled`), duplicates of an envelope id left out.
    pub async fn order_outcome_counts(
        &self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        let sql = format!(
            "SELECT substr(e.event_type, length('data_import.order_process.') + 1), count(*) \
             FROM audit.events e \
             WHERE e.event_type LIKE 'data_import.%' \
               AND e.event_type LIKE 'data_import.order\\_process.%' \
               AND e.status = 'decoded' AND {WINDOW} AND {NOT_DUPLICATE} \
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

    /// Which of `numbers` have a decoded `account.created` event with `is_imported: true`.
    pub async fn imported_account_created(
        &self,
        numbers: &[String],
    ) -> Result<HashSet<String>, StoreError> {
        if numbers.is_empty() {
            return Ok(HashSet::new());
        }
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT e.account_number FROM audit.events e \
             JOIN unnest($1::text[]) AS n(num) ON e.account_number = n.num \
             WHERE e.account_number IS NOT NULL AND e.event_type = 'account.created' \
               AND e.status = 'decoded' AND e.payload ->> 'is_imported' = 'true'",
        )
        .bind(numbers)
        .fetch_all(self.pool())
        .await
        .ctx("look up account.created events")?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }

    /// Stores a run and its results in one transaction; returns the run id.
    pub async fn save_reconcile_run(&self, r: &RunReport) -> Result<i64, StoreError> {
        let mut tx = self.pool().begin().await.ctx("begin")?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit.reconcile_runs (started_at, finished_at, trigger, suppliers, \
               parameters, counts, order_counts, accounts, rest_calls, rest, outcome, error) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
        )
        .bind(r.started_at)
        .bind(r.finished_at)
        .bind(&r.trigger)
        .bind(&r.suppliers)
        .bind(&r.parameters)
        .bind(json(&r.counts))
        .bind(json(&r.order_processes))
        .bind(i32::try_from(r.accounts).unwrap_or(i32::MAX))
        .bind(i32::try_from(r.rest.calls).unwrap_or(i32::MAX))
        .bind(json(&r.rest))
        .bind(r.outcome.as_str())
        .bind(&r.error)
        .fetch_one(&mut *tx)
        .await
        .ctx("insert reconcile run")?;
        for chunk in r.results.chunks(CHUNK) {
            let col = |f: fn(&AccountResult) -> Option<String>| -> Vec<Option<String>> {
                chunk.iter().map(f).collect()
            };
            sqlx::query(
                "INSERT INTO audit.reconcile_results (run_id, supplier, external_account_number, \
                   verdict, event_outcome, event_type, event_id, event_identifier, event_time, \
                   platform_status, platform_account_number, platform_created_at, \
                   account_created_event, detail, meter_points) \
                 SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], \
                   $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::text[], \
                   $11::text[], $12::timestamptz[], $13::bool[], $14::text[], $15::jsonb[])",
            )
            .bind(id)
            .bind(col(|a| Some(a.supplier.clone())))
            .bind(col(|a| Some(a.external_account_number.clone())))
            .bind(col(|a| Some(a.verdict.as_str().to_owned())))
            .bind(col(|a| a.event_outcome.clone()))
            .bind(col(|a| a.event_type.clone()))
            .bind(col(|a| a.event_id.clone()))
            .bind(col(|a| a.event_identifier.clone()))
            .bind(chunk.iter().map(|a| a.event_time).collect::<Vec<_>>())
            .bind(col(|a| Some(a.platform_status.clone())))
            .bind(col(|a| a.platform_account_number.clone()))
            .bind(
                chunk
                    .iter()
                    .map(|a| a.platform_created_at)
                    .collect::<Vec<_>>(),
            )
            .bind(
                chunk
                    .iter()
                    .map(|a| a.account_created_event)
                    .collect::<Vec<_>>(),
            )
            .bind(col(|a| a.detail.clone()))
            .bind(
                chunk
                    .iter()
                    .map(|a| a.meter_points.as_ref().map(json))
                    .collect::<Vec<_>>(),
            )
            .execute(&mut *tx)
            .await
            .ctx("insert reconcile results")?;
        }
        tx.commit().await.ctx("commit")?;
        Ok(id)
    }

    /// The newest `limit` runs, newest first.
    pub async fn reconcile_runs(&self, limit: i64) -> Result<Vec<RunSummary>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, started_at, finished_at, trigger, suppliers, outcome, accounts, counts, \
               rest_calls, error FROM audit.reconcile_runs ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("read reconcile runs")?;
        Ok(rows
            .iter()
            .map(|r| RunSummary {
                run_id: r.get(0),
                started_at: r.get(1),
                finished_at: r.get(2),
                trigger: r.get(3),
                suppliers: r.get(4),
                outcome: Outcome::parse(r.get::<&str, _>(5)),
                accounts: to_u64(i64::from(r.get::<i32, _>(6))),
                counts: counts_of(r.get(7)),
                rest_calls: to_u64(i64::from(r.get::<i32, _>(8))),
                error: r.get(9),
            })
            .collect())
    }

    /// Run `id` (the latest when `None`) with its results, by external account number.
    pub async fn reconcile_run(&self, id: Option<i64>) -> Result<Option<RunReport>, StoreError> {
        let Some(r) = sqlx::query(
            "SELECT id, started_at, finished_at, trigger, suppliers, parameters, counts, \
               order_counts, accounts, rest, outcome, error FROM audit.reconcile_runs \
             WHERE $1::bigint IS NULL OR id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .ctx("read reconcile run")?
        else {
            return Ok(None);
        };
        let run_id: i64 = r.get(0);
        let outcome = Outcome::parse(r.get::<&str, _>(10));
        let rows = sqlx::query(
            "SELECT supplier, external_account_number, verdict, event_outcome, event_type, \
               event_id, event_identifier, event_time, platform_status, platform_account_number, \
               platform_created_at, account_created_event, detail, meter_points \
             FROM audit.reconcile_results WHERE run_id = $1 ORDER BY external_account_number",
        )
        .bind(run_id)
        .fetch_all(self.pool())
        .await
        .ctx("read reconcile results")?;
        let results = rows
            .iter()
            .filter_map(|x| {
                let verdict = Verdict::parse(x.get::<&str, _>(2))?;
                Some(AccountResult {
                    supplier: x.get(0),
                    external_account_number: x.get(1),
                    verdict,
                    event_outcome: x.get(3),
                    event_type: x.get(4),
                    event_id: x.get(5),
                    event_identifier: x.get(6),
                    event_time: x.get(7),
                    platform_status: x.get(8),
                    platform_account_number: x.get(9),
                    platform_created_at: x.get(10),
                    account_created_event: x.get(11),
                    detail: x.get(12),
                    meter_points: x
                        .get::<Option<serde_json::Value>, _>(13)
                        .and_then(|v| serde_json::from_value::<Vec<MeterPointStatus>>(v).ok()),
                })
            })
            .collect();
        Ok(Some(RunReport {
            run_id: Some(run_id),
            started_at: r.get(1),
            finished_at: r.get(2),
            trigger: r.get(3),
            suppliers: r.get(4),
            parameters: r.get(5),
            counts: counts_of(r.get(6)),
            order_processes: counts_of(r.get(7)),
            accounts: to_u64(i64::from(r.get::<i32, _>(8))),
            rest: serde_json::from_value::<RestSummary>(r.get(9)).unwrap_or_default(),
            outcome,
            exit_code: outcome.exit_code(),
            error: r.get(11),
            timings_ms: Default::default(),
            results,
        }))
    }

    /// The events of one external account number, oldest first: its import-process events, and
    /// the events of the platform account numbers that its `complete` events or reconciliation
    /// results name.
    pub async fn account_timeline(
        &self,
        external: &str,
        limit: i64,
    ) -> Result<Vec<TimelineEntry>, StoreError> {
        let rows = sqlx::query(
            "WITH nums AS ( \
               SELECT e.payload ->> 'identifier' AS num FROM audit.events e \
                WHERE e.event_type LIKE 'data_import.%' \
                  AND e.payload ->> 'external_identifier' = $1 \
                  AND e.payload ->> 'identifier' IS NOT NULL \
               UNION \
               SELECT platform_account_number FROM audit.reconcile_results \
                WHERE external_account_number = $1 AND platform_account_number IS NOT NULL) \
             SELECT e.occurred_at, e.published_at, \
               CASE WHEN e.event_version IS NULL THEN e.event_type \
                    ELSE e.event_type || '-' || e.event_version END, \
               e.event_id, e.status, \
               CASE WHEN e.event_id IS NULL THEN NULL ELSE COALESCE(f.finding, 'first') END, \
               e.account_number, e.stream, e.stream_seq, e.payload \
             FROM audit.events e \
             LEFT JOIN audit.id_findings f ON f.stream = e.stream \
               AND f.stream_seq = e.stream_seq AND f.published_at = e.published_at \
             WHERE (e.event_type LIKE 'data_import.%' AND e.payload ->> 'external_identifier' = $1) \
                OR e.account_number IN (SELECT num FROM nums) \
             ORDER BY e.occurred_at NULLS LAST, e.stream_seq LIMIT $2",
        )
        .bind(external)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("read account timeline")?;
        Ok(rows
            .iter()
            .map(|r| TimelineEntry {
                occurred_at: r.get(0),
                published_at: r.get(1),
                event: r.get(2),
                event_id: r.get(3),
                status: r.get(4),
                id_status: r.get(5),
                account_number: r.get(6),
                stream: r.get(7),
                stream_seq: r.get(8),
                payload: r.get(9),
            })
            .collect())
    }
}

/// A JSON value of maps with string keys and plain structs (cannot fail; `null` if it did).
fn json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
