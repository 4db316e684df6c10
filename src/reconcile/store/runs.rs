//! Runs: storing a run with its results in one transaction, and reading runs back for reports,
//! history, diffs, the metrics (the latest state of each scope) and batch closing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::{counts_of, json, to_u64, ReconcileStore};
use crate::db::{Ctx, DbError};
use crate::reconcile::model::{
    AccountResult, BatchRef, Outcome, RestSummary, RunReport, RunSummary,
};
use crate::reconcile::registration::{MeterPoint, Registration};
use crate::reconcile::verdict::Verdict;

/// Results are written this many rows per statement.
const CHUNK: usize = 5_000;

/// The latest state of one scope, for the metrics.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScopeState {
    pub(crate) scope: String,
    /// The suppliers of the scope, comma-separated (the batch's supplier for a batch).
    pub(crate) supplier: String,
    /// The batch's name; `None` for a supplier-wide scope.
    pub(crate) batch: Option<String>,
    /// The batch's manifest size.
    pub(crate) batch_accounts: Option<u64>,
    /// The latest run's outcome (whatever it is).
    pub(crate) last_outcome: Outcome,
    /// The latest completed run (no error): when, its counts and registrations.
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) counts: BTreeMap<String, u64>,
    pub(crate) registrations: BTreeMap<String, u64>,
    /// Runs of the scope by outcome.
    pub(crate) runs: BTreeMap<String, u64>,
}

const RUN_COLUMNS: &str = "r.id, r.started_at, r.finished_at, r.trigger, r.suppliers, \
    r.parameters, r.settings, r.counts, r.order_counts, r.accounts, r.rest, r.rest_calls, \
    r.outcome, r.error, r.scope, r.registration_counts, r.batch_id, b.supplier AS batch_supplier, b.name AS batch_name";

const RUN_FROM: &str = "audit.reconcile_runs r LEFT JOIN audit.batches b ON b.id = r.batch_id";

fn batch_of(r: &sqlx::postgres::PgRow) -> Option<BatchRef> {
    Some(BatchRef {
        id: r.get::<Option<i64>, _>("batch_id")?,
        supplier: r.get::<Option<String>, _>("batch_supplier")?,
        name: r.get::<Option<String>, _>("batch_name")?,
    })
}

fn scope_of(r: &sqlx::postgres::PgRow) -> String {
    r.get::<Option<String>, _>("scope").unwrap_or_default()
}

fn registrations_of(r: &sqlx::postgres::PgRow) -> BTreeMap<String, u64> {
    r.get::<Option<serde_json::Value>, _>("registration_counts")
        .map(counts_of)
        .unwrap_or_default()
}

fn summary(r: &sqlx::postgres::PgRow) -> RunSummary {
    RunSummary {
        run_id: r.get("id"),
        scope: scope_of(r),
        batch: batch_of(r).map(|b| b.name),
        registration_counts: registrations_of(r),
        started_at: r.get("started_at"),
        finished_at: r.get("finished_at"),
        trigger: r.get("trigger"),
        suppliers: r.get("suppliers"),
        outcome: Outcome::parse(r.get::<&str, _>("outcome")),
        accounts: to_u64(i64::from(r.get::<i32, _>("accounts"))),
        counts: counts_of(r.get("counts")),
        rest_calls: to_u64(i64::from(r.get::<i32, _>("rest_calls"))),
        error: r.get("error"),
    }
}

impl ReconcileStore {
    /// Stores a run and its results in one transaction; returns the run id.
    pub(crate) async fn save_reconcile_run(&self, r: &RunReport) -> Result<i64, DbError> {
        let mut tx = self.pool().begin().await.ctx("begin")?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit.reconcile_runs (started_at, finished_at, trigger, suppliers, \
               parameters, counts, order_counts, accounts, rest_calls, rest, outcome, error, \
               batch_id, scope, registration_counts, settings) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             RETURNING id",
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
        .bind(r.batch.as_ref().map(|b| b.id))
        .bind(&r.scope)
        .bind(json(&r.registration_counts))
        .bind(r.settings.as_ref().map(json))
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
                   account_created_event, detail, meter_points, registration) \
                 SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], \
                   $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::text[], \
                   $11::text[], $12::timestamptz[], $13::bool[], $14::text[], $15::jsonb[], \
                   $16::text[])",
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
            .bind(col(|a| a.registration.map(|r| r.as_str().to_owned())))
            .execute(&mut *tx)
            .await
            .ctx("insert reconcile results")?;
        }
        tx.commit().await.ctx("commit")?;
        Ok(id)
    }

    /// The newest `limit` runs, newest first; of one scope only when given.
    pub(crate) async fn reconcile_runs(
        &self,
        limit: i64,
        scope: Option<&str>,
    ) -> Result<Vec<RunSummary>, DbError> {
        let rows = sqlx::query(&format!(
            "SELECT {RUN_COLUMNS} FROM {RUN_FROM} \
             WHERE $2::text IS NULL OR r.scope = $2 ORDER BY r.id DESC LIMIT $1"
        ))
        .bind(limit)
        .bind(scope)
        .fetch_all(self.pool())
        .await
        .ctx("read reconcile runs")?;
        Ok(rows.iter().map(summary).collect())
    }

    /// Run `id` (the latest when `None`) with its results, by external account number.
    pub(crate) async fn reconcile_run(
        &self,
        id: Option<i64>,
    ) -> Result<Option<RunReport>, DbError> {
        let Some(r) = sqlx::query(&format!(
            "SELECT {RUN_COLUMNS} FROM {RUN_FROM} \
             WHERE $1::bigint IS NULL OR r.id = $1 ORDER BY r.id DESC LIMIT 1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .ctx("read reconcile run")?
        else {
            return Ok(None);
        };
        let run_id: i64 = r.get("id");
        let outcome = Outcome::parse(r.get::<&str, _>("outcome"));
        let rows = sqlx::query(
            "SELECT supplier, external_account_number, verdict, event_outcome, event_type, \
               event_id, event_identifier, event_time, platform_status, platform_account_number, \
               platform_created_at, account_created_event, detail, meter_points, registration \
             FROM audit.reconcile_results WHERE run_id = $1 ORDER BY external_account_number",
        )
        .bind(run_id)
        .fetch_all(self.pool())
        .await
        .ctx("read reconcile results")?;
        let results = rows
            .iter()
            .filter_map(|x| {
                let verdict = Verdict::parse(x.get::<&str, _>("verdict"))?;
                Some(AccountResult {
                    supplier: x.get("supplier"),
                    external_account_number: x.get("external_account_number"),
                    verdict,
                    event_outcome: x.get("event_outcome"),
                    event_type: x.get("event_type"),
                    event_id: x.get("event_id"),
                    event_identifier: x.get("event_identifier"),
                    event_time: x.get("event_time"),
                    platform_status: x.get("platform_status"),
                    platform_account_number: x.get("platform_account_number"),
                    platform_created_at: x.get("platform_created_at"),
                    account_created_event: x.get("account_created_event"),
                    detail: x.get("detail"),
                    registration: x
                        .get::<Option<&str>, _>("registration")
                        .and_then(Registration::parse),
                    meter_points: x
                        .get::<Option<serde_json::Value>, _>("meter_points")
                        .and_then(|v| serde_json::from_value::<Vec<MeterPoint>>(v).ok()),
                })
            })
            .collect();
        Ok(Some(RunReport {
            run_id: Some(run_id),
            batch: batch_of(&r),
            scope: scope_of(&r),
            started_at: r.get("started_at"),
            finished_at: r.get("finished_at"),
            trigger: r.get("trigger"),
            suppliers: r.get("suppliers"),
            parameters: r.get("parameters"),
            settings: r
                .get::<Option<serde_json::Value>, _>("settings")
                .and_then(|v| serde_json::from_value(v).ok()),
            counts: counts_of(r.get("counts")),
            registration_counts: registrations_of(&r),
            order_processes: counts_of(r.get("order_counts")),
            accounts: to_u64(i64::from(r.get::<i32, _>("accounts"))),
            rest: serde_json::from_value::<RestSummary>(r.get("rest")).unwrap_or_default(),
            outcome,
            exit_code: outcome.exit_code(),
            error: r.get("error"),
            timings_ms: Default::default(),
            results,
        }))
    }

    /// The completed run (no error) of `scope` just before run `before` (the latest when
    /// `None`).
    pub(crate) async fn previous_completed_run(
        &self,
        scope: &str,
        before: Option<i64>,
    ) -> Result<Option<i64>, DbError> {
        let row = sqlx::query(
            "SELECT id FROM audit.reconcile_runs \
             WHERE scope = $1 AND error IS NULL AND ($2::bigint IS NULL OR id < $2) \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(scope)
        .bind(before)
        .fetch_optional(self.pool())
        .await
        .ctx("find the previous run")?;
        Ok(row.map(|r| r.get("id")))
    }

    /// The latest state of every scope with a run since `since`, and of every open batch.
    pub(crate) async fn scope_states(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<ScopeState>, DbError> {
        let rows = sqlx::query(
            "WITH scopes AS ( \
               SELECT DISTINCT r.scope FROM audit.reconcile_runs r \
                WHERE r.scope LIKE 'suppliers:%' AND r.finished_at >= $1 \
               UNION SELECT 'batch:' || b.id FROM audit.batches b \
                WHERE NOT EXISTS (SELECT 1 FROM audit.batch_closures c WHERE c.batch_id = b.id)) \
             SELECT s.scope, b.supplier AS batch_supplier, b.name AS batch_name, \
               b.accounts AS batch_accounts, \
               last.outcome AS last_outcome, last.suppliers, \
               done.finished_at AS completed_at, done.counts, done.registration_counts, \
               (SELECT jsonb_object_agg(o.outcome, o.n) FROM ( \
                  SELECT r.outcome, count(*) AS n FROM audit.reconcile_runs r \
                   WHERE r.scope = s.scope GROUP BY 1) o) AS runs \
             FROM scopes s \
             LEFT JOIN audit.batches b ON s.scope = 'batch:' || b.id \
             LEFT JOIN LATERAL (SELECT r.outcome, r.suppliers FROM audit.reconcile_runs r \
                WHERE r.scope = s.scope ORDER BY r.id DESC LIMIT 1) last ON true \
             LEFT JOIN LATERAL (SELECT r.finished_at, r.counts, r.registration_counts \
                FROM audit.reconcile_runs r WHERE r.scope = s.scope AND r.error IS NULL \
                ORDER BY r.id DESC LIMIT 1) done ON true \
             ORDER BY s.scope",
        )
        .bind(since)
        .fetch_all(self.pool())
        .await
        .ctx("read the latest run of each scope")?;
        Ok(rows
            .iter()
            .map(|r| {
                let batch: Option<String> = r.get("batch_name");
                let supplier = match r.get::<Option<String>, _>("batch_supplier") {
                    Some(s) => s,
                    None => r
                        .get::<Option<Vec<String>>, _>("suppliers")
                        .unwrap_or_default()
                        .join(","),
                };
                ScopeState {
                    scope: r.get("scope"),
                    supplier,
                    batch,
                    batch_accounts: r
                        .get::<Option<i32>, _>("batch_accounts")
                        .map(|n| u64::try_from(n).unwrap_or(0)),
                    last_outcome: r
                        .get::<Option<&str>, _>("last_outcome")
                        .map_or(Outcome::Incomplete, Outcome::parse),
                    completed_at: r.get("completed_at"),
                    counts: r
                        .get::<Option<serde_json::Value>, _>("counts")
                        .map(counts_of)
                        .unwrap_or_default(),
                    registrations: registrations_of(r),
                    runs: r
                        .get::<Option<serde_json::Value>, _>("runs")
                        .map(counts_of)
                        .unwrap_or_default(),
                }
            })
            .collect())
    }

    /// The completed runs of a batch, newest first (at most `limit`): when each finished,
    /// its outcome and registrations.
    pub(crate) async fn batch_run_states(
        &self,
        batch_id: i64,
        limit: i64,
    ) -> Result<Vec<(i64, DateTime<Utc>, Outcome, BTreeMap<String, u64>)>, DbError> {
        let rows = sqlx::query(
            "SELECT id, finished_at, outcome, registration_counts FROM audit.reconcile_runs \
             WHERE batch_id = $1 AND error IS NULL ORDER BY id DESC LIMIT $2",
        )
        .bind(batch_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("read the batch's runs")?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    r.get("id"),
                    r.get("finished_at"),
                    Outcome::parse(r.get::<&str, _>("outcome")),
                    registrations_of(r),
                )
            })
            .collect())
    }
}
