//! `verify` as one use case: [`run`] reads the mirror and the archive's manifest first, walks the
//! chain (feeding the witness's tree when a key is given), checks completeness and the
//! re-verdict runs, then the witnessed checkpoints and the auditor's state, the mirror and the
//! archive, records the run, and returns one typed [`VerifyReport`]. The command line only
//! renders it: the JSON document, the summary lines, the exit code ([`VerifyReport::exit_code`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::archive::ArchiveReport;
use super::auditor::{Settled, StateError};
use super::breaks::Finding;
use super::mirror::{Mirror, MirrorError, MirrorReport};
use super::walk::LeafSink;
use super::witness::{self, WitnessError, WitnessReport};
use super::{gaps, ChainReport, VerifyError, WalkOptions};
use crate::archive::ArchiveError;
use crate::bus::Bus;
use crate::config::Settings;
use crate::db::Db;
use crate::log::standby::StandbyView;
use crate::log::tree::TreeStore;
use crate::log::Reader;

/// What a run checks besides what the settings say (`--archive`, which has no setting).
#[derive(Debug, Clone, Default)]
pub(crate) struct VerifyOptions {
    /// An archive directory (`event-audit archive --out`) to check against the log.
    pub archive: Option<PathBuf>,
}

/// Why something could not be verified (exit 2). Each says so in one line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CouldNotVerify {
    #[error("could not verify against the mirror: {0}")]
    Mirror(MirrorError),
    #[error("could not verify the archive: {0}")]
    Archive(ArchiveError),
    #[error("could not verify against the witnessed checkpoints: {0}")]
    Witness(WitnessError),
    /// The auditor's state could not be settled (the witness's report stands).
    #[error(transparent)]
    State(StateError),
    /// The database or the bus failed: said as any error is, with its causes.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// A run that stopped before its document (exit 2): what it had found by then, and why.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub(crate) struct Stopped {
    /// On a hot standby, its view (known before the walk; `found` holds it once there).
    pub(crate) standby: Option<StandbyView>,
    /// The report as far as it went, when the chain was walked.
    pub(crate) found: Option<Box<VerifyReport>>,
    pub(crate) why: CouldNotVerify,
}

/// Whether the run is in `audit.verify_runs`.
#[derive(Debug)]
pub(crate) enum Recorded {
    Yes,
    /// A standby takes no writes (runs verified on the primary are recorded).
    Standby,
    /// Recording failed after everything was verified.
    Failed(VerifyError),
}

/// One run's outcome: the chain's report, and beside it the witness's, the auditor's state,
/// the mirror's and the archive's. Serialized, it is the one JSON document `verify` prints.
#[derive(Debug, Serialize)]
pub(crate) struct VerifyReport {
    #[serde(flatten)]
    pub(crate) chain: ChainReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) witness: Option<WitnessReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) auditor_state: Option<Settled>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mirror: Option<MirrorReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) archive: Option<ArchiveReport>,
    /// The account index rebuilt and held against every root the log recorded (absent when
    /// the log has no index).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<super::index::IndexReport>,
    /// With `--incremental`: the size before which rows were not rehashed.
    #[serde(skip)]
    pub(crate) not_rehashed_before: Option<u64>,
    /// Whether a state file was read and written (`false`: `--no-state`).
    #[serde(skip)]
    pub(crate) with_state: bool,
    /// The witness or the state could not be verified while the rest was (exit 2 unless a
    /// break makes it 1).
    #[serde(skip)]
    pub(crate) incomplete: Option<CouldNotVerify>,
    #[serde(skip)]
    pub(crate) recorded: Recorded,
}

impl VerifyReport {
    /// 0 everything holds, 1 a break (or a remembered break not acknowledged), 2 something
    /// could not be verified and nothing was found broken.
    pub(crate) fn exit_code(&self) -> u8 {
        let mut code = match (&self.incomplete, &self.witness, &self.auditor_state) {
            (Some(_), _, _) => 2,
            (None, Some(w), Some(s)) if !w.ok || s.open_break.is_some() => 1,
            _ => 0,
        };
        if self.mirror.as_ref().is_some_and(|m| !m.holds())
            || self.archive.as_ref().is_some_and(|a| !a.holds())
            || self.index.as_ref().is_some_and(|i| !i.ok)
            || !self.chain.ok
        {
            code = 1;
        }
        code
    }
}

/// Verifies the log as `settings` say (the database, the bus for completeness, the witness,
/// the mirror) and `options`; records the run unless on a standby.
pub(crate) async fn run(
    settings: &Settings,
    options: &VerifyOptions,
) -> Result<VerifyReport, Stopped> {
    let stop = |standby: Option<&StandbyView>, why: CouldNotVerify| Stopped {
        standby: standby.cloned(),
        found: None,
        why,
    };
    let (mirror, archive, _staged) = read_first(settings, options.archive.as_deref())
        .await
        .map_err(|w| stop(None, w))?;
    let failed = |standby: Option<&StandbyView>, e: anyhow::Error| stop(standby, e.into());
    let workers = settings.database.connections.max(1);
    // One more connection than workers: a payload compared by PostgreSQL itself.
    let (db, standby) = open_reader(settings, workers + 1)
        .await
        .map_err(|e| failed(None, e))?;
    let sb = standby.as_ref();
    let store = Reader::new(db.clone());
    let trees = TreeStore::new(db.clone());
    // With the witness: the key, policy, state and checkpoints first (exit 2 when they cannot
    // be used); the walk then feeds the tree from its own read of the rows, and resumes after
    // the checkpoint checked last time (`--full`: every row).
    let prepared = match &settings.witness.public_key {
        Some(key) => Some(
            witness::prepare(settings, &trees, key)
                .await
                .map_err(|e| stop(sb, CouldNotVerify::Witness(e)))?,
        ),
        None => None,
    };
    let mut sink = match &prepared {
        Some(p) => Some(p.sink(&trees).await.map_err(|e| failed(sb, e.into()))?),
        None => None,
    };
    let opts = WalkOptions {
        workers: workers as usize,
        from_link: prepared.as_ref().and_then(|p| p.from_link),
    };
    let started = Instant::now();
    let leaves = sink.as_mut().map(|s| s as &mut dyn LeafSink);
    let mut chain = super::walk(&store, opts, leaves)
        .await
        .map_err(|e| failed(sb, e.into()))?;
    if !settings.verify.skip_completeness {
        let bus = Bus::connect(&settings.nats).await.map_err(|e| {
            failed(sb, anyhow::anyhow!("{e}; or pass --skip-completeness to verify without the completeness report, which needs NATS"))
        })?;
        let c = gaps::check(&store, &bus)
            .await
            .map_err(|e| failed(sb, e.into()))?;
        chain.add_completeness(c);
    }
    // Re-verdicts (their hashes and run chain), and their runs' ends: the re-verdict tree's leaves.
    let (broken, reverdict_leaves) = super::reverdicts::check_runs(&db)
        .await
        .map_err(|e| failed(sb, e.into()))?;
    if let Some(why) = broken {
        chain.add_break(why);
    }
    let index = super::index::check(&db).await;
    let index = index.map_err(|e| failed(sb, e.into()))?;
    chain.duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    chain.standby = standby;
    let mut report = VerifyReport {
        not_rehashed_before: prepared.as_ref().and_then(|p| p.not_rehashed_before()),
        chain,
        witness: None,
        auditor_state: None,
        mirror: None,
        archive: None,
        index,
        with_state: false,
        incomplete: None,
        recorded: Recorded::Yes,
    };
    if let (Some(p), Some(sink)) = (prepared, sink) {
        match witness::finish(p, sink, &trees, &reverdict_leaves).await {
            Err(e) => report.incomplete = Some(CouldNotVerify::Witness(e)),
            Ok((w, memory)) => {
                report.with_state = memory.path.is_some();
                match memory.settle(finding(&report.chain, &w)) {
                    Ok(s) => report.auditor_state = Some(s),
                    Err(e) => report.incomplete = Some(CouldNotVerify::State(e)),
                }
                report.witness = Some(w);
            }
        }
    }
    let stopped = |report: VerifyReport, why| Stopped {
        standby: None,
        found: Some(Box::new(report)),
        why,
    };
    if let Some(mirror) = &mirror {
        match super::mirror::check(&store, &trees, mirror).await {
            Ok(m) => report.mirror = Some(m),
            Err(e) => return Err(stopped(report, CouldNotVerify::Mirror(e))),
        }
    }
    if let Some(dir) = &archive {
        // With a mirror, each archived row is checked at its leaf in the mirror's tiles.
        let entries = mirror.as_ref().map(|m| m.entries.as_slice());
        match super::archive::check(&store, dir, entries).await {
            Ok(a) => report.archive = Some(a),
            Err(e) => return Err(stopped(report, CouldNotVerify::Archive(e))),
        }
    }
    report.recorded = if report.chain.standby.is_some() {
        Recorded::Standby
    } else {
        let witness_ok = report.witness.as_ref().map(|w| w.ok);
        match super::record(&store, &report.chain, witness_ok).await {
            Ok(()) => Recorded::Yes,
            Err(e) => Recorded::Failed(e),
        }
    };
    Ok(report)
}

/// The database as a reader with `connections` connections, and its view when it is a standby.
async fn open_reader(
    settings: &Settings,
    connections: u32,
) -> anyhow::Result<(Db, Option<StandbyView>)> {
    let db = Db::open_existing(&settings.database, connections).await?;
    let standby = db.standby_view().await?;
    Ok((db, standby))
}

/// What `verify` reads before the database, bounded: the mirror, once (for `--mirror` and
/// `--archive` both), and the archive's manifest with every file it names opened (the files
/// are read later). A copy that cannot be read, whose checkpoint the key does not open, or an
/// archive naming a file outside its folder is exit 2 at once, in one line.
async fn read_first(
    settings: &Settings,
    archive: Option<&Path>,
) -> Result<ReadFirst, CouldNotVerify> {
    let mirror = match &settings.verify.mirror {
        Some(dir) => {
            let key = settings.witness.public_key.as_deref();
            let read = super::mirror::read(dir, key, &settings.object_store);
            Some(read.await.map_err(CouldNotVerify::Mirror)?)
        }
        None => None,
    };
    let Some(archive) = archive else {
        return Ok((mirror, None, None));
    };
    // An archive in a bucket is fetched first, into a staging directory kept until the end.
    let (dir, staged) = crate::archive::remote::at(archive, &settings.object_store)
        .await
        .map_err(CouldNotVerify::Archive)?;
    crate::archive::read::preflight(&dir).map_err(CouldNotVerify::Archive)?;
    Ok((mirror, Some(dir), staged))
}

/// The mirror read, and the archive's directory (its staging directory, kept while the guard
/// lives, when it is `s3://...`).
type ReadFirst = (Option<Mirror>, Option<PathBuf>, Option<tempfile::TempDir>);

/// This run's first break, to be remembered: the chain's first, else the witness's.
fn finding(chain: &ChainReport, w: &WitnessReport) -> Option<Finding> {
    if !chain.ok {
        let b = chain.breaks.first();
        return Some(Finding {
            why: b.map_or_else(
                || chain.first_break.clone().unwrap_or_default(),
                |b| b.why.clone(),
            ),
            stream: b.and_then(|b| b.stream.clone()),
            stream_seq: b.and_then(|b| b.stream_seq),
            link: b.and_then(|b| b.link),
            checkpoint: None,
            breaks_total: chain.breaks_total + i64::from(!w.ok),
        });
    }
    (!w.ok).then(|| Finding {
        why: w.first_break.clone().unwrap_or_default(),
        checkpoint: w.first_divergent.clone(),
        breaks_total: 1,
        ..Default::default()
    })
}
