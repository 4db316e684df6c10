//! `verify` against the witness: the signed checkpoints read from outside the database (the
//! stream, with its configuration checked, or the directory) are trusted once their signature,
//! origin and (with a policy) quorum of cosignatures hold; the auditor's state ([`super::
//! auditor`]) is never lowered: a newest checkpoint smaller than, or inconsistent with, the one
//! checked last time is a break that prints both signed notes. Then the tree made from the rows'
//! recomputed hashes, in log order, fed by the walk itself ([`TreeSink`], one read of the
//! table), must have each checkpoint's root at its size (and every link's stored tree and every
//! stored subtree must match it). The re-verdict runs' tree (origin `O/reverdicts`) is held
//! against its own checkpoints the same way.
//!
//! Every row by default: the walk rehashes every row and rebuilds the tree from every row hash,
//! meeting the state's checkpoint on the way. Only `--incremental` resumes at the state's
//! checkpoint (whose root the stored tree must still have), and the report then names the rows
//! it did not rehash. The new state is not written here: [`super::auditor::Memory`] settles it
//! with the chain's outcome and the breaks it remembers.

use std::path::PathBuf;

use serde::Serialize;

use super::auditor::{AuditorState, Checked, Memory, StateError};
use super::breaks::{AckError, RecordedBreak};
pub(crate) use super::tree_sink::TreeSink;
use crate::db::DbError;
use crate::log::tree::TreeStore;
use crate::tlog::merkle::{self, Frontier, MemTree};
use crate::tlog::note::{self, Checkpoint, PublicKey, REVERDICTS_SUFFIX};
use crate::witnessed::signer::CheckpointError;
use trusted::{against_state, before_policy, none_trusted, sort_out, split_views};

mod trusted;

/// A checkpoint not trusted, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Rejected {
    pub(crate) checkpoint: String,
    pub(crate) why: String,
}

/// The checkpoints of one log signed by the key before the first one the witness policy's
/// quorum cosigned: not trusted, not used, counted once (see `trusted::before_policy`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BeforePolicy {
    pub(crate) origin: String,
    pub(crate) count: usize,
    pub(crate) smallest: u64,
    pub(crate) largest: u64,
    /// The size of the log's first checkpoint that carries the quorum.
    pub(crate) first_cosigned: u64,
}

/// What the check found.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct WitnessReport {
    pub(crate) ok: bool,
    /// Checkpoints read from the witness.
    pub(crate) checkpoints: usize,
    /// Checkpoints whose signature, origin and cosignatures hold (both logs).
    pub(crate) trusted: usize,
    pub(crate) rejected: Vec<Rejected>,
    /// Per log, the checkpoints signed before the first cosigned one (with a policy).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) before_policy: Vec<BeforePolicy>,
    /// The largest trusted checkpoint's size (the rows' tree).
    pub(crate) witnessed_size: u64,
    /// The largest trusted checkpoint's size of the re-verdict runs' tree.
    pub(crate) reverdicts_size: u64,
    /// The first checkpoint the database does not hold (or that contradicts the state).
    pub(crate) first_divergent: Option<String>,
    /// The first thing that does not hold (checkpoint, link or stored subtree).
    pub(crate) first_break: Option<String>,
    /// The signed notes that show a rollback or fork (the saved one, then the witness's).
    pub(crate) evidence: Vec<String>,
    /// What the checkpoint stream's configuration lacks to keep evidence.
    pub(crate) stream_problems: Vec<String>,
    /// Rows whose hashes were taken into the tree in this run, from `from_size` on.
    pub(crate) rows_hashed: u64,
    pub(crate) from_size: u64,
    /// Whether the run resumed from the state file (`--incremental`).
    pub(crate) incremental: bool,
    /// With `--incremental`: the rows before this size were not rehashed (an edit of one that
    /// left its stored hash alone is not seen by this run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_rehashed_before: Option<u64>,
    /// Whether a state file was read (false with `--no-state` or on a first run).
    pub(crate) state_loaded: bool,
}

impl WitnessReport {
    fn fail(&mut self, checkpoint: Option<String>, why: String) {
        if self.ok {
            self.ok = false;
            self.first_divergent = checkpoint;
            self.first_break = Some(why);
        }
    }
}

/// Why the check could not be made (exit 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum WitnessError {
    #[error("the witness holds no checkpoint; nothing to verify against (is the daemon signing checkpoints, and is this the right stream or directory?)")]
    NoCheckpoints,
    /// The checkpoint stream is missing and the database holds no checkpoint of this key: most
    /// likely nothing was signed yet.
    #[error("the checkpoint stream `{stream}` does not exist on NATS at {url}, and the database holds no checkpoint this key signed: most likely no daemon has signed with this key yet (a daemon run with --signing-key-file creates the stream and signs at its first checkpoint round, its log saying `checkpoints on`; wait for it). If the daemon publishes elsewhere, pass --checkpoint-stream with its witness.checkpoint_stream setting, or --checkpoint-dir DIR")]
    NothingSigned { stream: String, url: String },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("reading the witnessed checkpoints: {0}")]
    Witness(#[from] CheckpointError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Ack(#[from] AckError),
}

/// A trusted checkpoint and where it was found.
#[derive(Debug, Clone)]
struct Trusted {
    cp: Checkpoint,
    note: String,
    label: String,
}

/// Everything known before the walk.
pub(crate) struct Prepared {
    key: PublicKey,
    origin: String,
    path: Option<PathBuf>,
    saved: AuditorState,
    /// The break this run acknowledged (`--acknowledge-break`), already marked in `saved`.
    acknowledged: Option<RecordedBreak>,
    report: WitnessReport,
    events: Vec<Trusted>,
    reverdicts: Vec<Trusted>,
    /// The walk rehashes the rows of links from this one on (`None`: every row).
    pub(crate) from_link: Option<i64>,
    start: Frontier,
}

fn reverdicts_origin(origin: &str) -> String {
    format!("{origin}{REVERDICTS_SUFFIX}")
}

/// Reads the key, the policy, the state and the witness, and checks the checkpoints against
/// each other and against the state. Errors are "could not verify" (exit 2).
pub(crate) async fn prepare(
    settings: &crate::config::Settings,
    trees: &TreeStore,
    public_key: &std::path::Path,
) -> Result<Prepared, WitnessError> {
    let w = &settings.witness;
    let key = crate::witnessed::signer::load_public_key(public_key)?;
    let policy = match &w.witness_policy {
        Some(p) => Some(crate::witnessed::signer::load_policy(p, Some(&key))?),
        None => None,
    };
    let origin = w.origin.clone().unwrap_or_else(|| key.name.clone());
    let path = if w.no_state {
        None
    } else {
        w.state_path(&origin, &note::hex4(&key.id))
    };
    let loaded = match &path {
        Some(p) => AuditorState::load(p, &key)?,
        None => None,
    };
    let (found, problems) = match crate::witnessed::signer::read_witness(settings).await {
        Err(CheckpointError::NoStream { stream, url }) => {
            let stored = crate::log::checkpoints::CheckpointStore::newest_stored(trees.db())
                .await?
                .is_some_and(|n| note::open(&n, &key).is_ok());
            return Err(if stored {
                CheckpointError::NoStream { stream, url }.into()
            } else {
                WitnessError::NothingSigned { stream, url }
            });
        }
        r => r?,
    };
    let mut report = WitnessReport {
        ok: true,
        checkpoints: found.len(),
        state_loaded: loaded.is_some(),
        ..Default::default()
    };
    let mut saved = loaded.unwrap_or_default();
    let acknowledged = match (&w.acknowledge_break, &path) {
        (Some(_), None) => return Err(AckError::NoState.into()),
        (Some(id), Some(_)) => Some(saved.breaks.acknowledge(
            id,
            saved.runs + 1,
            chrono::Utc::now(),
        )?),
        (None, _) => None,
    };
    if found.is_empty() && saved.logs.is_empty() {
        return Err(WitnessError::NoCheckpoints);
    }
    if !problems.is_empty() {
        report.fail(
            None,
            format!("the checkpoint stream does not keep evidence: {} (checkpoints can be removed through NATS)", problems.join("; ")),
        );
        report.stream_problems = problems;
    }
    let rv_origin = reverdicts_origin(&origin);
    let logs = [origin.as_str(), rv_origin.as_str()];
    let ([mut events, mut reverdicts], [early, early_rv]) =
        sort_out(found, &key, policy.as_ref(), logs, &mut report);
    report.trusted = events.len() + reverdicts.len();
    for (log, list, aside) in [
        (&origin, &mut events, early),
        (&rv_origin, &mut reverdicts, early_rv),
    ] {
        list.sort_by_key(|t| t.cp.size);
        before_policy(&mut report, log, list, aside);
    }
    if events.is_empty() && saved.logs.is_empty() {
        none_trusted(&mut report, &key, policy.is_some());
    }
    for (log, list) in [(&origin, &mut events), (&rv_origin, &mut reverdicts)] {
        list.sort_by_key(|t| t.cp.size);
        split_views(&mut report, list);
        list.dedup_by(|a, b| a.cp == b.cp);
        against_state(&mut report, log, list, saved.logs.get(log.as_str()));
    }
    report.witnessed_size = events.last().map_or(0, |t| t.cp.size);
    report.reverdicts_size = reverdicts.last().map_or(0, |t| t.cp.size);
    let (start, from_link) = match (report.ok, saved.logs.get(&origin)) {
        (true, Some(s)) => resume(&mut report, trees, s, events.last(), !w.incremental).await?,
        _ => (Frontier::new(), None),
    };
    report.from_size = start.size();
    Ok(Prepared {
        key,
        origin,
        path,
        saved,
        acknowledged,
        report,
        events,
        reverdicts,
        from_link,
        start,
    })
}

/// Where the walk starts from the state's checkpoint `s` of the rows' log: the newest trusted
/// checkpoint must extend it, the stored tree must still hold it; then, unless `full`, the walk
/// resumes at it. Returns the tree to start from and the first link to rehash.
async fn resume(
    report: &mut WitnessReport,
    trees: &TreeStore,
    s: &Checked,
    newest: Option<&Trusted>,
    full: bool,
) -> Result<(Frontier, Option<i64>), WitnessError> {
    // The rows' state: consistent with the newest, so its proof from the stored tree follows.
    if let Some(newest) = newest.filter(|n| n.cp.size > s.size) {
        let proof = trees.consistency(s.size, newest.cp.size).await?;
        if let Err(e) =
            merkle::verify_consistency(s.size, newest.cp.size, &s.root, &newest.cp.root, &proof)
        {
            report.evidence = vec![s.note.clone(), newest.note.clone()];
            report.fail(Some(newest.label.clone()), format!("{} does not extend the checkpoint of size {} checked last time ({e}): a fork (both signed notes below)", newest.label, s.size));
        }
    }
    let (_, head) = trees.head().await?;
    if report.ok && u64::try_from(head).unwrap_or(0) < s.size {
        report.fail(Some(format!("checkpoint size {} (checked last time)", s.size)), format!("the database's tree has {head} rows, fewer than the checkpoint of size {} checked last time (rows removed or the database replaced)", s.size));
    } else if report.ok && !full && trees.root(s.size).await? != s.root {
        report.fail(Some(format!("checkpoint size {} (checked last time)", s.size)), format!("the database's tree at size {} no longer has the root checked last time (history rewritten; a run without --incremental names the first divergent checkpoint)", s.size));
    } else if report.ok && !full {
        report.incremental = true;
        report.not_rehashed_before = Some(s.size);
        let after = trees
            .links_after(i64::try_from(s.size).unwrap_or(i64::MAX))
            .await?;
        return Ok((
            s.tree.clone(),
            Some(after.first().map_or(i64::MAX, |l| l.link_seq)),
        ));
    }
    Ok((Frontier::new(), None))
}

impl Prepared {
    /// With `--incremental` (and a state to resume from): the size before which rows are not
    /// rehashed.
    pub(crate) fn not_rehashed_before(&self) -> Option<u64> {
        self.report.not_rehashed_before
    }

    /// The sink the walk feeds (the stored subtrees are read once, here).
    pub(crate) async fn sink(&self, trees: &TreeStore) -> Result<TreeSink, WitnessError> {
        let mut pending: Vec<(u64, merkle::Hash, String)> = self
            .events
            .iter()
            .filter(|t| t.cp.size > self.start.size())
            .map(|t| (t.cp.size, t.cp.root, t.label.clone()))
            .collect();
        if let Some(s) = self
            .saved
            .logs
            .get(&self.origin)
            .filter(|s| s.size > self.start.size())
        {
            pending.push((
                s.size,
                s.root,
                format!("checkpoint size {} (checked last time)", s.size),
            ));
            pending.sort_by_key(|p| p.0);
        }
        Ok(TreeSink::new(
            self.start.clone(),
            pending,
            trees.stored_nodes().await?,
        ))
    }
}

/// Completes the check after the walk: checkpoints the rows did not reach, older checkpoints
/// against the state, the re-verdict runs' tree (`reverdict_leaves`: the closed runs' end hashes
/// in chain order), and the new state when everything holds (the auditor's [`Memory`] writes it
/// once the chain's outcome is known).
pub(crate) async fn finish(
    p: Prepared,
    sink: TreeSink,
    trees: &TreeStore,
    reverdict_leaves: &[[u8; 32]],
) -> Result<(WitnessReport, Memory), WitnessError> {
    let mut report = p.report;
    report.rows_hashed = sink.rows;
    for (c, why) in sink.breaks {
        report.fail(c, why);
    }
    if let Some((s, _, name)) = sink.pending.get(sink.next) {
        report.fail(Some(name.clone()), format!("{name}: the database's tree has only {} rows (rows removed after it was witnessed)", sink.tree.size().min(*s)));
    }
    // Checkpoints older than where this run started: each must extend into the state's.
    if let (true, Some(s)) = (report.ok, p.saved.logs.get(&p.origin)) {
        for t in p.events.iter().filter(|t| t.cp.size < p.start.size()) {
            let proof = trees.consistency(t.cp.size, s.size).await?;
            if merkle::verify_consistency(t.cp.size, s.size, &t.cp.root, &s.root, &proof).is_err() {
                report.evidence = vec![t.note.clone(), s.note.clone()];
                report.fail(Some(t.label.clone()), format!("{} is not consistent with the checkpoint of size {} checked last time: a fork", t.label, s.size));
            }
        }
    }
    // The re-verdict runs' tree, whole (a few leaves), against its checkpoints and the state.
    let rv_origin = reverdicts_origin(&p.origin);
    let mem = MemTree {
        leaves: reverdict_leaves
            .iter()
            .map(|l| merkle::leaf_hash(l))
            .collect(),
    };
    let saved_rv = p.saved.logs.get(&rv_origin);
    let rv_checks = p
        .reverdicts
        .iter()
        .map(|t| (t.cp.size, t.cp.root, t.label.clone()))
        .chain(saved_rv.map(|s| {
            (
                s.size,
                s.root,
                format!("re-verdict checkpoint size {} (checked last time)", s.size),
            )
        }));
    for (size, root, name) in rv_checks {
        if size > mem.leaves.len() as u64 {
            report.fail(Some(name.clone()), format!("{name}: the database holds only {} closed re-verdict runs (runs removed after it was witnessed)", mem.leaves.len()));
        } else if mem.root(size) != root {
            report.fail(Some(name.clone()), format!("{name}: the re-verdict runs' tree at size {size} has another root (runs or their re-verdicts rewritten)"));
        }
    }
    let memory = |proposed| Memory {
        path: p.path.clone(),
        key: p.key.clone(),
        saved: p.saved.clone(),
        proposed,
        acknowledged: p.acknowledged.clone(),
    };
    if !report.ok {
        return Ok((report, memory(p.saved.clone())));
    }
    // The new state: the newest trusted checkpoint of each log, never lower than the saved one.
    let mut state = p.saved.clone();
    if let (Some(n), Some(tree)) = (
        p.events.last(),
        sink.at_newest.or_else(|| {
            (p.start.size() == p.events.last().map_or(0, |n| n.cp.size)).then(|| p.start.clone())
        }),
    ) {
        // Never lowered: a smaller checkpoint than the saved one stays unsaved (and was a break).
        if tree.size() == n.cp.size {
            let _ = state
                .logs
                .advance(&p.origin, Checked::at(tree, n.note.clone()));
        }
    }
    if let Some(n) = p.reverdicts.last() {
        let mut tree = Frontier::new();
        for l in mem.leaves.iter().take(n.cp.size as usize) {
            tree.append(*l, |_, _| {});
        }
        let _ = state
            .logs
            .advance(&rv_origin, Checked::at(tree, n.note.clone()));
    }
    Ok((report, memory(state)))
}
