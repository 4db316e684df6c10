//! `verify` against the witness: the signed checkpoints read from outside the database are
//! checked (b) by signature and origin, then (c) the tree made from the rows' hashes, in log
//! order, must have each checkpoint's root at its size (and every link's stored tree root and
//! every stored subtree must match it: the tree against the rows), and (d) each checkpoint must
//! extend the previous one (consistency proofs from the stored tree). The rows themselves are
//! checked against their hashes by the walk.
//!
//! Incremental by default: a state file remembers the last checkpoint this verifier checked,
//! with the tree's right edge at its size; the next run proves the stored tree consistent with
//! it and hashes only the rows after it. `full` hashes every row again.

use std::collections::HashMap;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::audit::note::{self, Checkpoint, NoteError, PublicKey};
use crate::audit::tlog::{self, Frontier, Hash};
use crate::db::{Ctx, DbError};
use crate::tree::{TreeStore, TILE_HEIGHT};

/// How many chain links' rows the witness pass reads per query.
const LINKS_PER_READ: usize = 64;

/// One checkpoint as read from the witness, with where it was found (stream sequence, file).
#[derive(Debug, Clone)]
pub struct Witnessed {
    pub label: String,
    pub note: String,
}

/// What this verifier checked last: a checkpoint and the tree's right edge at its size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct State {
    pub origin: String,
    pub size: u64,
    /// Base64 root.
    pub root: String,
    /// Base64 right edge (the frontier's hashes concatenated).
    pub frontier: String,
}

impl State {
    pub fn load(path: &Path) -> Option<State> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self).unwrap_or_default())?;
        std::fs::rename(tmp, path)
    }

    fn tree(&self) -> Option<(Hash, Frontier)> {
        let root = Hash::try_from(B64.decode(&self.root).ok()?).ok()?;
        let f = Frontier::from_bytes(self.size, &B64.decode(&self.frontier).ok()?)?;
        (f.root() == root).then_some((root, f))
    }
}

/// A checkpoint not trusted, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    pub checkpoint: String,
    pub why: String,
}

/// What the check found.
#[derive(Debug, Clone, Serialize, Default)]
pub struct WitnessReport {
    pub ok: bool,
    /// Checkpoints read from the witness.
    pub checkpoints: usize,
    /// Checkpoints whose signature and origin hold.
    pub trusted: usize,
    pub rejected: Vec<Rejected>,
    /// The largest trusted checkpoint's size.
    pub witnessed_size: u64,
    /// The first checkpoint the database does not hold (or a rejected one signed by the key).
    pub first_divergent: Option<String>,
    /// The first thing that does not hold (checkpoint, link or stored subtree).
    pub first_break: Option<String>,
    /// Rows whose hashes were taken into the tree in this run, from `from_size` on.
    pub rows_hashed: u64,
    pub from_size: u64,
    /// Whether the run was incremental (from a state file).
    pub incremental: bool,
    /// The state to save when everything holds.
    #[serde(skip)]
    pub new_state: Option<State>,
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
pub enum WitnessError {
    #[error("the witness holds no checkpoint; nothing to verify against (is the daemon signing checkpoints, and is this the right stream or directory?)")]
    NoCheckpoints,
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the witness: {0}")]
    Witness(#[from] crate::checkpoint::WitnessError),
    #[error("state file {path}: {source}")]
    State {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// `verify --public-key`: reads the key and the witnessed checkpoints (the stream, or the
/// directory), checks the database against them from the state file (unless `full`), and saves
/// the new state when everything holds. Errors are "could not verify" (exit 2).
pub async fn against_witness(
    settings: &crate::config::Settings,
    store: &TreeStore,
    public_key: &Path,
) -> Result<WitnessReport, WitnessError> {
    let w = &settings.witness;
    let key = crate::checkpoint::load_public_key(public_key)?;
    // The log's name: as configured, else the key's name (keygen names the key after it).
    let origin = w.origin.clone().unwrap_or_else(|| key.name.clone());
    let found = crate::checkpoint::read_witness(settings).await?;
    let witnessed: Vec<Witnessed> = found
        .into_iter()
        .map(|f| Witnessed {
            label: f.label,
            note: f.note,
        })
        .collect();
    let path = w.state_path(&origin);
    let state = match (&path, w.full) {
        (Some(p), false) => State::load(p).filter(|s| s.origin == origin),
        _ => None,
    };
    let report = check(store, &witnessed, &key, Some(&origin), state).await?;
    if let (Some(p), Some(s)) = (&path, &report.new_state) {
        s.save(p).map_err(|source| WitnessError::State {
            path: p.display().to_string(),
            source,
        })?;
    }
    Ok(report)
}

/// Where an incremental walk starts: the first link after the last checkpoint this verifier
/// checked (from its state file), so that only the rows after it are rehashed; `None` (rehash
/// every row) with `--full`, without a state, or when anything cannot be read. The rows before
/// stay covered by the witness pass, which proves the stored tree still has that checkpoint's
/// root; `--full` rehashes them too.
pub async fn resume_link(
    settings: &crate::config::Settings,
    store: &TreeStore,
    public_key: &Path,
) -> Option<i64> {
    let w = &settings.witness;
    if w.full {
        return None;
    }
    let key = crate::checkpoint::load_public_key(public_key).ok()?;
    let origin = w.origin.clone().unwrap_or_else(|| key.name.clone());
    let state = State::load(&w.state_path(&origin)?).filter(|s| s.origin == origin)?;
    let size = i64::try_from(state.size).ok()?;
    let after = store.links_after(size).await.ok()?;
    // No link after it: nothing to rehash.
    Some(after.first().map_or(i64::MAX, |l| l.link_seq))
}

fn name(w: &Witnessed, cp: Option<&Checkpoint>) -> String {
    match cp {
        Some(c) => format!("checkpoint size {} ({})", c.size, w.label),
        None => format!("checkpoint ({})", w.label),
    }
}

/// Checks the witnessed checkpoints against the database (see the module's text). `origin`:
/// the log's expected origin (another origin is rejected); `state`: the last state, unless a
/// full run.
pub async fn check(
    store: &TreeStore,
    witnessed: &[Witnessed],
    key: &PublicKey,
    origin: Option<&str>,
    state: Option<State>,
) -> Result<WitnessReport, WitnessError> {
    let mut report = WitnessReport {
        ok: true,
        checkpoints: witnessed.len(),
        ..Default::default()
    };
    if witnessed.is_empty() {
        return Err(WitnessError::NoCheckpoints);
    }
    // (b) signatures and origin.
    let mut trusted: Vec<(Checkpoint, String)> = Vec::new();
    for w in witnessed {
        match note::open(&w.note, key) {
            Ok(cp) if origin.is_some_and(|o| o != cp.origin) => report.rejected.push(Rejected {
                checkpoint: name(w, Some(&cp)),
                why: format!("another log's origin `{}`", cp.origin),
            }),
            Ok(cp) => {
                let n = name(w, Some(&cp));
                trusted.push((cp, n));
            }
            Err(e) => {
                let claimed = note::claimed(&w.note).ok();
                let n = name(w, claimed.as_ref());
                if matches!(e, NoteError::BadSignature(_)) {
                    report.fail(Some(n.clone()), format!("{n}: {e}"));
                }
                report.rejected.push(Rejected {
                    checkpoint: n,
                    why: e.to_string(),
                });
            }
        }
    }
    report.trusted = trusted.len();
    if trusted.is_empty() {
        let first = &report.rejected[0];
        let (c, why) = (first.checkpoint.clone(), first.why.clone());
        report.fail(
            Some(c.clone()),
            format!(
                "{c}: {why}; no checkpoint is signed by key {}+{} (wrong public key?)",
                key.name,
                hex(&key.id)
            ),
        );
        return Ok(report);
    }
    trusted.sort_by_key(|(c, _)| c.size);
    for pair in trusted.windows(2) {
        let ((a, _), (b, nb)) = (&pair[0], &pair[1]);
        if a.size == b.size && a.root != b.root {
            report.fail(
                Some(nb.clone()),
                format!(
                    "{nb}: two signed checkpoints of size {} with different roots (a split view)",
                    a.size
                ),
            );
        }
    }
    trusted.dedup_by(|a, b| a.0 == b.0);
    report.witnessed_size = trusted.last().map_or(0, |(c, _)| c.size);
    if !report.ok {
        return Ok(report);
    }

    // The starting point: an earlier state consistent with the stored tree, or the empty tree.
    let mut tree = Frontier::new();
    if let Some((root, f)) = state.as_ref().and_then(State::tree) {
        let newest = &trusted[trusted.len() - 1].0;
        if newest.size >= f.size() {
            let proof = store.consistency(f.size(), newest.size).await?;
            if let Err(e) =
                tlog::verify_consistency(f.size(), newest.size, &root, &newest.root, &proof)
            {
                let n = trusted[trusted.len() - 1].1.clone();
                report.fail(
                    Some(n.clone()),
                    format!("{n} does not extend the checkpoint of size {} checked last time ({e}): history rewritten", f.size()),
                );
                return Ok(report);
            }
            if store.root(f.size()).await? != root {
                let n = format!("checkpoint size {} (checked last time)", f.size());
                report.fail(
                    Some(n.clone()),
                    format!("{n}: the database's tree at size {} no longer has the root checked last time (history rewritten; --full names the first divergent checkpoint)", f.size()),
                );
                return Ok(report);
            }
            report.incremental = true;
            tree = f;
        }
    }
    report.from_size = tree.size();
    let from_size = tree.size();
    let (_, head_size) = store.head().await?;
    let head_size = u64::try_from(head_size).unwrap_or(0);

    // (c) the tree from the rows' hashes, against every link, stored subtree and checkpoint.
    let pending: Vec<&(Checkpoint, String)> = trusted
        .iter()
        .filter(|(c, _)| c.size >= tree.size())
        .collect();
    let after = store
        .links_after(i64::try_from(tree.size()).unwrap_or(i64::MAX))
        .await?;
    // The rows are read a range of links at a time (bounded by their batch ids).
    let chunks: Vec<(i64, i64, (i64, i64))> = after
        .iter()
        .filter(|l| l.tree_size.is_some())
        .collect::<Vec<_>>()
        .chunks(LINKS_PER_READ)
        .map(|c| {
            let lo = c.iter().map(|l| l.batch_id).min().unwrap_or(0);
            let hi = c.iter().map(|l| l.batch_id).max().unwrap_or(0);
            (c[0].link_seq, c[c.len() - 1].link_seq, (lo, hi))
        })
        .collect();
    let links: HashMap<i64, (Option<i64>, Option<Vec<u8>>)> = after
        .into_iter()
        .map(|l| (l.link_seq, (l.tree_size, l.tree_root)))
        .collect();
    let stored = store.stored_nodes().await?;
    let mut next = 0usize;
    let mut best: Option<State> = None;
    let mut check_cp = |tree: &Frontier, report: &mut WitnessReport, next: &mut usize| {
        while let Some((cp, n)) = pending.get(*next) {
            if cp.size != tree.size() {
                break;
            }
            *next += 1;
            if tree.root() != cp.root {
                report.fail(
                    Some(n.clone()),
                    format!("{n}: the database's tree at size {} has another root (rows changed, added or removed before it)", cp.size),
                );
                return;
            }
            best = Some(State {
                origin: cp.origin.clone(),
                size: cp.size,
                root: B64.encode(cp.root),
                frontier: B64.encode(tree.to_bytes()),
            });
        }
    };
    check_cp(&tree, &mut report, &mut next);
    let mut current: Option<i64> = None;
    let mut bad_node: Option<String> = None;
    for &(first, last, batches) in &chunks {
        let mut rows = store.leaves_of(first, last, batches);
        while let Some(r) = rows.try_next().await.ctx("read row hashes in log order")? {
            if current.is_some_and(|c| c != r.link_seq) {
                if let Some(why) = link_tree_break(current, &links, &tree) {
                    report.fail(None, why);
                }
            }
            current = Some(r.link_seq);
            tree.append(tlog::leaf_hash(&r.row_hash), |node, h| {
                if node.level > 0
                    && node.level % TILE_HEIGHT == 0
                    && bad_node.is_none()
                    && stored.get(&node).map(Vec::as_slice) != Some(&h[..])
                {
                    bad_node = Some(format!(
                        "stored subtree height {} index {} does not match the rows (tree edited)",
                        node.level, node.index
                    ));
                }
            });
            report.rows_hashed += 1;
            check_cp(&tree, &mut report, &mut next);
            if !report.ok {
                return Ok(report);
            }
        }
    }
    if let Some(why) = link_tree_break(current, &links, &tree) {
        report.fail(None, why);
    }
    if let Some(why) = bad_node {
        report.fail(None, why);
    }
    if let Some((cp, n)) = pending.get(next) {
        report.fail(
            Some(n.clone()),
            format!(
                "{n}: the database's tree has only {} rows (rows removed after it was witnessed)",
                tree.size().max(head_size)
            ),
        );
        let _ = cp;
    }
    // (d) each checkpoint extends the previous one, by proofs from the stored tree.
    for pair in trusted.windows(2) {
        let ((a, _), (b, nb)) = (&pair[0], &pair[1]);
        if b.size < from_size || b.size > head_size {
            continue;
        }
        let proof = store.consistency(a.size, b.size).await?;
        if let Err(e) = tlog::verify_consistency(a.size, b.size, &a.root, &b.root, &proof) {
            report.fail(
                Some(nb.clone()),
                format!("{nb} is not consistent with the checkpoint of size {} in the database's tree ({e})", a.size),
            );
            return Ok(report);
        }
    }
    if report.ok {
        report.new_state = best;
    }
    Ok(report)
}

/// The break of the link just completed, if its stored tree does not match the rows.
fn link_tree_break(
    link: Option<i64>,
    links: &HashMap<i64, (Option<i64>, Option<Vec<u8>>)>,
    tree: &Frontier,
) -> Option<String> {
    let seq = link?;
    let (size, root) = links.get(&seq)?;
    let want = i64::try_from(tree.size()).ok();
    if *size != want || root.as_deref() != Some(&tree.root()[..]) {
        return Some(format!(
            "link {seq}: its tree (size and root) does not match its rows (tree or rows edited)"
        ));
    }
    None
}

fn hex(id: &[u8; 4]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
