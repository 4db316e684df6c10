//! Comparing stored runs: two runs by id (of the same scope), the latest two completed runs of a
//! scope, or a run and the completed run of its scope before it (the "changed since the previous
//! run" of every HTML report). The pure comparison is [`super::diff`].

use super::diff::{diff, Diff};
use super::model::RunReport;
use super::store::ReconcileStore;
use crate::db::DbError;

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompareError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("no reconciliation run {0}")]
    NoRun(i64),
    #[error("run {run} could not complete ({error}); compare completed runs")]
    Incomplete { run: i64, error: String },
    #[error("runs {a} ({scope_a}) and {b} ({scope_b}) are of different scopes; compare runs of one batch, manifest or set of suppliers")]
    Scopes {
        a: i64,
        scope_a: String,
        b: i64,
        scope_b: String,
    },
    #[error("scope {0} has fewer than two completed runs")]
    TooFew(String),
}

async fn completed(store: &ReconcileStore, id: i64) -> Result<RunReport, CompareError> {
    let run = store
        .reconcile_run(Some(id))
        .await?
        .ok_or(CompareError::NoRun(id))?;
    if let Some(error) = &run.error {
        return Err(CompareError::Incomplete {
            run: id,
            error: error.clone(),
        });
    }
    Ok(run)
}

/// The changes from run `from` to run `to` (the earlier first, whichever order is given).
pub(crate) async fn between(
    store: &ReconcileStore,
    from: i64,
    to: i64,
) -> Result<Diff, CompareError> {
    let (from, to) = (from.min(to), from.max(to));
    let (a, b) = (completed(store, from).await?, completed(store, to).await?);
    if a.scope != b.scope {
        return Err(CompareError::Scopes {
            a: from,
            scope_a: a.scope,
            b: to,
            scope_b: b.scope,
        });
    }
    Ok(diff(&a, &b))
}

/// The changes between the latest two completed runs of `scope`.
pub(crate) async fn latest_two(store: &ReconcileStore, scope: &str) -> Result<Diff, CompareError> {
    let last = store
        .previous_completed_run(scope, None)
        .await?
        .ok_or_else(|| CompareError::TooFew(scope.to_owned()))?;
    let before = store
        .previous_completed_run(scope, Some(last))
        .await?
        .ok_or_else(|| CompareError::TooFew(scope.to_owned()))?;
    between(store, before, last).await
}

/// The changes since the completed run of `run`'s scope before it; `None` for a first run (or
/// a run that could not complete).
pub(crate) async fn since_previous(
    store: &ReconcileStore,
    run: &RunReport,
) -> Result<Option<Diff>, DbError> {
    let Some(id) = run
        .run_id
        .filter(|_| run.error.is_none() && !run.scope.is_empty())
    else {
        return Ok(None);
    };
    let Some(prev) = store.previous_completed_run(&run.scope, Some(id)).await? else {
        return Ok(None);
    };
    Ok(store
        .reconcile_run(Some(prev))
        .await?
        .map(|before| diff(&before, run)))
}
