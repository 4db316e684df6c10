//! Batches: registering a manifest (idempotent for the same list; a conflict for another one),
//! finding batches by supplier and name, their lists, the open ones, and closing.

use sqlx::Row;

use super::ReconcileStore;
use crate::db::{Ctx, DbError};
use crate::reconcile::batch::{Batch, Closure, Registered};
use crate::reconcile::manifest::Manifest;

/// Member rows are written this many per statement.
const CHUNK: usize = 10_000;

const BATCH_COLUMNS: &str = "b.id, b.supplier, b.name, b.accounts, b.orders, \
    b.manifest_sha256, b.source, b.tolerances, b.registered_at, \
    c.closed_at, c.reason, c.run_id";

const BATCH_FROM: &str = "audit.batches b LEFT JOIN audit.batch_closures c ON c.batch_id = b.id";

fn batch(r: &sqlx::postgres::PgRow) -> Batch {
    let closed = r
        .get::<Option<chrono::DateTime<chrono::Utc>>, _>("closed_at")
        .map(|closed_at| Closure {
            closed_at,
            reason: r.get::<Option<String>, _>("reason").unwrap_or_default(),
            run_id: r.get("run_id"),
        });
    Batch {
        id: r.get("id"),
        supplier: r.get("supplier"),
        name: r.get("name"),
        accounts: u64::try_from(r.get::<i32, _>("accounts")).unwrap_or(0),
        orders: u64::try_from(r.get::<i32, _>("orders")).unwrap_or(0),
        manifest_sha256: r.get("manifest_sha256"),
        source: r.get("source"),
        tolerances: r.get("tolerances"),
        registered_at: r.get("registered_at"),
        closed,
    }
}

impl ReconcileStore {
    /// Registers `manifest` as batch `name` of `supplier`, in one transaction.
    pub async fn register_batch(
        &self,
        supplier: &str,
        name: &str,
        manifest: &Manifest,
        tolerances: &[String],
    ) -> Result<Registered, DbError> {
        let sha = manifest.sha256();
        let mut tx = self.pool().begin().await.ctx("begin")?;
        // Serializes concurrent registrations of the same name.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("event-audit batch {supplier}/{name}"))
            .execute(&mut *tx)
            .await
            .ctx("lock the batch name")?;
        let existing = sqlx::query(&format!(
            "SELECT {BATCH_COLUMNS} FROM {BATCH_FROM} WHERE b.supplier = $1 AND b.name = $2"
        ))
        .bind(supplier)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await
        .ctx("look up the batch")?;
        if let Some(r) = existing {
            let b = batch(&r);
            return Ok(if b.manifest_sha256 == sha && b.tolerances == tolerances {
                Registered::Existing(b)
            } else {
                Registered::Conflict(b)
            });
        }
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit.batches (supplier, name, accounts, orders, manifest_sha256, \
               source, tolerances) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(supplier)
        .bind(name)
        .bind(count(manifest.accounts.len()))
        .bind(count(manifest.orders.len()))
        .bind(&sha)
        .bind(&manifest.name)
        .bind(tolerances)
        .fetch_one(&mut *tx)
        .await
        .ctx("insert the batch")?;
        for (kind, ids) in [("account", &manifest.accounts), ("order", &manifest.orders)] {
            for chunk in ids.chunks(CHUNK) {
                sqlx::query(
                    "INSERT INTO audit.batch_members (batch_id, kind, external_id) \
                     SELECT $1, $2, x FROM unnest($3::text[]) AS x ON CONFLICT DO NOTHING",
                )
                .bind(id)
                .bind(kind)
                .bind(chunk)
                .execute(&mut *tx)
                .await
                .ctx("insert the batch's members")?;
            }
        }
        let row = sqlx::query(&format!(
            "SELECT {BATCH_COLUMNS} FROM {BATCH_FROM} WHERE b.id = $1"
        ))
        .bind(id)
        .fetch_one(&mut *tx)
        .await
        .ctx("read the batch back")?;
        tx.commit().await.ctx("commit")?;
        Ok(Registered::Created(batch(&row)))
    }

    /// The batches named `name`, of `supplier` when given (several suppliers may use a name).
    pub(crate) async fn find_batches(
        &self,
        supplier: Option<&str>,
        name: &str,
    ) -> Result<Vec<Batch>, DbError> {
        let rows = sqlx::query(&format!(
            "SELECT {BATCH_COLUMNS} FROM {BATCH_FROM} \
             WHERE b.name = $1 AND ($2::text IS NULL OR b.supplier = $2) ORDER BY b.id"
        ))
        .bind(name)
        .bind(supplier)
        .fetch_all(self.pool())
        .await
        .ctx("look up the batch")?;
        Ok(rows.iter().map(batch).collect())
    }

    /// Every batch, newest first; only the open ones of `suppliers` when `open_of` is given.
    pub(crate) async fn batches(&self, open_of: Option<&[String]>) -> Result<Vec<Batch>, DbError> {
        let rows = sqlx::query(&format!(
            "SELECT {BATCH_COLUMNS} FROM {BATCH_FROM} \
             WHERE $1::text[] IS NULL OR (c.batch_id IS NULL AND b.supplier = ANY($1)) \
             ORDER BY b.id DESC"
        ))
        .bind(open_of)
        .fetch_all(self.pool())
        .await
        .ctx("list the batches")?;
        Ok(rows.iter().map(batch).collect())
    }

    /// A batch's lists, named after it.
    pub(crate) async fn batch_manifest(&self, b: &Batch) -> Result<Manifest, DbError> {
        let rows = sqlx::query(
            "SELECT kind, external_id FROM audit.batch_members WHERE batch_id = $1 \
             ORDER BY kind, external_id",
        )
        .bind(b.id)
        .fetch_all(self.pool())
        .await
        .ctx("read the batch's members")?;
        let mut m = Manifest {
            name: b.label(),
            accounts: Vec::with_capacity(rows.len()),
            orders: Vec::new(),
        };
        for r in &rows {
            let id: String = r.get("external_id");
            match r.get::<&str, _>("kind") {
                "order" => m.orders.push(id),
                _ => m.accounts.push(id),
            }
        }
        Ok(m)
    }

    /// Closes a batch (`command` or `settled`, with the settling run); `false` when it was
    /// closed already.
    pub(crate) async fn close_batch(
        &self,
        id: i64,
        reason: &str,
        run_id: Option<i64>,
    ) -> Result<bool, DbError> {
        let done = sqlx::query(
            "INSERT INTO audit.batch_closures (batch_id, reason, run_id) VALUES ($1, $2, $3) \
             ON CONFLICT (batch_id) DO NOTHING",
        )
        .bind(id)
        .bind(reason)
        .bind(run_id)
        .execute(self.pool())
        .await
        .ctx("close the batch")?;
        Ok(done.rows_affected() == 1)
    }
}
