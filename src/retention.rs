//! Retention, the daemon's scheduled job: shortly after start and then every
//! `retention.interval`, the personal data of every row published longer ago than
//! `retention.payloads_for` erased through `erase` (one erasure by publication time per run,
//! recorded as a row of the log), then the rows older than `retention.rows_for` archived and
//! pruned through `archive`, on connections of their own that work as the eraser role (the
//! daemon's pool works as the writer, which may not read `audit.erasures`, where the archive
//! learns what is pruned already). A run never fails the daemon: a step that fails says what to
//! try and is retried at the next run. The bus's copy of the erased messages is left to the
//! stream's own `max_age`.

pub(crate) mod metrics;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::postgres::PgPoolOptions;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::archive::ArchiveError;
use crate::config::{Dur, ObjectStoreSettings, RetentionSettings};
use crate::db::{Db, DbError};
use crate::erase::{self, EraseError, Selector, ERASER_ROLE};
use metrics::{Outcome, RetentionMetrics};

/// The first run comes this long after start (or one interval, when shorter): ingest settles
/// first.
const FIRST_RUN_AFTER: Duration = Duration::from_secs(10);
/// The bound of one payload erasure (one transaction of several statements, each bounded by
/// the server's `database.statement_timeout`); past it the transaction is abandoned, nothing
/// committed.
const ERASE_TIMEOUT: Duration = Duration::from_secs(600);
/// The bound of one archive-and-prune step (it writes whole partitions to files, each
/// statement bounded by [`ARCHIVE_STATEMENT_BOUND`]).
const ARCHIVE_TIMEOUT: Duration = Duration::from_secs(6 * 3600);
/// The server's bound of one archive COPY or prune statement: `archive::STATEMENT_FACTOR` times
/// the default `database.statement_timeout` (30 minutes).
const ARCHIVE_STATEMENT_BOUND: Duration = Duration::from_secs(
    crate::config::defaults::DB_STATEMENT_TIMEOUT
        .get()
        .as_secs()
        * crate::archive::STATEMENT_FACTOR as u64,
);
/// How long an idle connection of the rows step stays open (runs are far apart).
const ROWS_IDLE: Duration = Duration::from_secs(60);
/// SQLSTATE insufficient_privilege: here, the login may not `SET ROLE event_audit_eraser`.
const NOT_PERMITTED: &str = "42501";

/// Starts the retention job in `tasks` until `stop` (the daemon calls it when a period is set).
pub(crate) fn spawn(
    tasks: &TaskTracker,
    db: &Db,
    s: &RetentionSettings,
    store: &ObjectStoreSettings,
    instance: String,
    metrics: &Arc<RetentionMetrics>,
    stop: &CancellationToken,
) {
    let shown = |d: Option<Dur>| d.map_or_else(|| "off".to_owned(), |d| d.to_string());
    tracing::info!(
        payloads_for = %shown(s.payloads_for),
        rows_for = %shown(s.rows_for),
        interval = %s.interval,
        "retention scheduled"
    );
    tasks.spawn(run(
        db.clone(),
        s.clone(),
        store.clone(),
        instance,
        metrics.clone(),
        stop.clone(),
    ));
}

/// A run shortly after start, then one every interval, until stopped (a run in progress is
/// abandoned: its transaction rolls back).
async fn run(
    db: Db,
    s: RetentionSettings,
    store: ObjectStoreSettings,
    instance: String,
    metrics: Arc<RetentionMetrics>,
    stop: CancellationToken,
) {
    let rows_db = as_eraser(&db);
    let every = s.interval.get();
    let first = tokio::time::Instant::now() + FIRST_RUN_AFTER.min(every);
    let mut tick = tokio::time::interval_at(first, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = once(&db, &rows_db, &s, &store, &instance, &metrics) => {}
        }
    }
}

/// A pool on the daemon's database whose connections work as the eraser role from the start
/// (the `role` setting at connect): the rows step reads `audit.erasures`, which the writer may
/// not, before its prunes switch to the eraser role themselves. The eraser is a member of the
/// writer, so whatever the writer reads it reads too. Connects at its first use; a login
/// outside the eraser role fails there with SQLSTATE 42501, which [`failed`] explains.
fn as_eraser(db: &Db) -> Db {
    let opts = (*db.pool().connect_options())
        .clone()
        .options([("role", ERASER_ROLE)]);
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .min_connections(0)
        .idle_timeout(Some(ROWS_IDLE))
        .acquire_timeout(db.pool().options().get_acquire_timeout())
        .connect_lazy_with(opts);
    Db::from_pool(pool)
}

/// One run: payloads (on `db`), then rows (on `rows_db`, as the eraser); counted by its worst
/// step's outcome.
pub(crate) async fn once(
    db: &Db,
    rows_db: &Db,
    s: &RetentionSettings,
    store: &ObjectStoreSettings,
    instance: &str,
    metrics: &RetentionMetrics,
) -> Outcome {
    let now = Utc::now();
    let mut outcome = Outcome::Nothing;
    if let Some(period) = s.payloads_for {
        outcome = outcome.max(payloads(db, now, period, s.interval, instance, metrics).await);
    }
    if let (Some(period), Some(dir)) = (s.rows_for, &s.archive_dir) {
        let to = Archive {
            dir,
            store,
            lock_for: s.archive_lock_for,
        };
        outcome = outcome.max(rows(rows_db, now, period, &to, s.interval, instance).await);
    }
    metrics.ran(outcome);
    outcome
}

/// `now - period`, or `None` when it leaves the calendar (nothing is that old).
fn cutoff(now: DateTime<Utc>, period: Dur) -> Option<DateTime<Utc>> {
    now.checked_sub_signed(period.chrono())
}

/// Erases the personal data of every row published before `now - period`.
async fn payloads(
    db: &Db,
    now: DateTime<Utc>,
    period: Dur,
    interval: Dur,
    instance: &str,
    metrics: &RetentionMetrics,
) -> Outcome {
    let Some(before) = cutoff(now, period) else {
        return Outcome::Nothing;
    };
    let shown = before.to_rfc3339_opts(SecondsFormat::Micros, true);
    let reason = format!("retention: payloads_for {period}");
    let sel = Selector::PublishedBefore(before);
    let done = tokio::time::timeout(
        ERASE_TIMEOUT,
        erase::erase(db, &sel, &reason, false, instance),
    )
    .await;
    match done {
        Ok(Ok(o)) => {
            let rows = o.rows.len();
            metrics.erased_rows.inc_by(rows as u64);
            tracing::info!(
                erasure = o.erasure,
                link_seq = o.link_seq,
                rows,
                published_before = %shown,
                payloads_for = %period,
                "retention: erased the personal data of the rows published before the period, recorded as an erasure in the log"
            );
            Outcome::Done
        }
        Ok(Err(EraseError::NothingMatched(_) | EraseError::Identity(_))) => {
            tracing::debug!(published_before = %shown, "retention: no payload past its period");
            Outcome::Nothing
        }
        Ok(Err(EraseError::Db(e))) => {
            failed(&e, "erase payloads past retention.payloads_for", interval);
            Outcome::Failed
        }
        Ok(Err(e @ EraseError::FutureBound(..))) => {
            // `now - period` with a positive period: never in the future.
            tracing::warn!(error = %e, "retention: the erasure's bound was refused");
            Outcome::Failed
        }
        Err(_) => {
            tracing::warn!(
                after = ?ERASE_TIMEOUT,
                published_before = %shown,
                "retention: erasing the payloads past retention.payloads_for did not finish in time; nothing was committed; retried at the next run. For a large backlog raise database.statement_timeout, or erase it once by hand (`event-audit erase --published-before {shown} --reason ...`)"
            );
            Outcome::Failed
        }
    }
}

/// Where the rows step archives: `retention.archive_dir` (a directory or `s3://bucket/prefix`),
/// with `[object_store]` and `retention.archive_lock_for` for a bucket.
struct Archive<'a> {
    dir: &'a Path,
    store: &'a ObjectStoreSettings,
    lock_for: Option<Dur>,
}

/// Archives, then prunes, the rows published before `now - period` (`archive::retain`).
async fn rows(
    db: &Db,
    now: DateTime<Utc>,
    period: Dur,
    to: &Archive<'_>,
    interval: Dur,
    instance: &str,
) -> Outcome {
    let Some(before) = cutoff(now, period) else {
        return Outcome::Nothing;
    };
    let reason = format!("retention: rows_for {period}");
    let done = tokio::time::timeout(
        ARCHIVE_TIMEOUT,
        crate::archive::retain(
            db,
            before,
            to.dir,
            to.store,
            to.lock_for.map(|d| d.get()),
            Some(&reason),
            instance,
            ARCHIVE_STATEMENT_BOUND,
        ),
    )
    .await;
    match done {
        Ok(Ok(r)) if r.pruned.is_empty() => {
            tracing::debug!("retention: no partition past retention.rows_for");
            Outcome::Nothing
        }
        Ok(Ok(r)) => {
            for p in &r.pruned {
                tracing::info!(
                    partition = %p.partition,
                    rows = p.rows,
                    erasure = p.erasure,
                    dir = %to.dir.display(),
                    rows_for = %period,
                    "retention: archived a partition past the period and pruned it, recorded as an erasure in the log"
                );
            }
            Outcome::Done
        }
        Ok(Err(ArchiveError::Db(e))) => {
            failed(&e, "archive rows past retention.rows_for", interval);
            Outcome::Failed
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, dir = %to.dir.display(), "retention: could not archive the rows past retention.rows_for; nothing was pruned that is not archived; retried at the next run");
            Outcome::Failed
        }
        Err(_) => {
            tracing::warn!(after = ?ARCHIVE_TIMEOUT, dir = %to.dir.display(), "retention: archiving the rows past retention.rows_for did not finish in time; retried at the next run");
            Outcome::Failed
        }
    }
}

/// A step's database failure, with what to try: a login outside the eraser role cannot erase
/// until it is granted (ERROR); anything else is retried at the next run (WARN).
fn failed(e: &DbError, what: &str, next: Dur) {
    if e.sqlstate().as_deref() == Some(NOT_PERMITTED) {
        tracing::error!(error = %e, "retention cannot {what}: the daemon's login (the user of database.url) is not a member of the eraser role; as the database's owner run `GRANT event_audit_eraser TO <login>`; retried at every run");
    } else {
        tracing::warn!(error = %e, retry_in = %next, "retention could not {what}; nothing was committed; retried at the next run");
    }
}
