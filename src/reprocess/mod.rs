//! Reprocessing after a catalogue upgrade: stored rows judged again, from their `raw` bytes, by
//! this binary's catalogue (or one read from a directory). Originals are never changed; each
//! re-verdict is a hashed row of `audit.reverdicts` naming its catalogue, and a finished run is
//! closed by a row chaining the runs. Pages of rows in key order (bounded memory); a run stopped
//! half-way resumes after its last re-verdict (`--resume RUN`).

pub mod store;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::audit::canon::{canonical_errors, canonical_strings, clean};
use crate::audit::reverdict::Reverdict;
use crate::db::DbError;
use crate::decode::catalogue::rt::dynamic::DynCatalogue;
use crate::decode::catalogue::rt::FieldError;
use crate::decode::verdict;
use store::ReprocessStore;

/// Which stored rows to judge again.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Selection {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub stream: Option<String>,
    /// Inclusive stream sequence range.
    pub seq: Option<(i64, i64)>,
    /// Original statuses (empty: all).
    pub statuses: Vec<String>,
}

/// A position in key order: after (stream, stream sequence, bus time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(pub String, pub i64, pub DateTime<Utc>);

impl Cursor {
    /// Before every row (streams are never empty names, so the rest does not matter).
    pub fn start() -> Cursor {
        Cursor(String::new(), i64::MIN, DateTime::<Utc>::UNIX_EPOCH)
    }
}

/// A stored row as reprocessing reads it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub stream: String,
    pub stream_seq: i64,
    pub published_at: DateTime<Utc>,
    pub envelope: Option<String>,
    pub event_type: Option<String>,
    pub event_version: Option<String>,
    pub status: String,
    pub raw: Vec<u8>,
}

impl Stored {
    fn event(&self) -> Option<String> {
        match (&self.event_type, &self.event_version) {
            (Some(t), Some(v)) => Some(format!("{t}-{v}")),
            (Some(t), None) => Some(t.clone()),
            _ => None,
        }
    }
}

/// Old → new status of one event, with a count and example keys (`stream:seq`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Transition {
    pub event: String,
    pub old: String,
    pub new: String,
    pub count: u64,
    pub examples: Vec<String>,
}

/// What a run (or a dry run) found.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Outcome {
    /// `None` for a dry run.
    pub run_id: Option<i64>,
    pub catalogue: String,
    pub rows: u64,
    /// (old → new) → count, every event together.
    pub totals: BTreeMap<String, u64>,
    /// Per event and (old → new); unchanged verdicts included.
    pub transitions: Vec<Transition>,
    /// Hex of the closing hash (a run that finished).
    pub run_hash: Option<String>,
}

/// The catalogue that judges: the built-in one, or one read from a directory.
pub enum Judge<'c> {
    BuiltIn,
    Loaded(&'c DynCatalogue),
}

impl Judge<'_> {
    pub fn fingerprint(&self) -> String {
        match self {
            Judge::BuiltIn => crate::decode::catalogue::FINGERPRINT.to_owned(),
            Judge::Loaded(c) => c.fingerprint.clone(),
        }
    }

    /// The new verdict of a stored row: (status, errors, unknown fields).
    pub fn judge(&self, s: &Stored) -> (String, Option<String>, Option<String>) {
        // A message without an envelope was named by a header or its subject: its stored name.
        let name = s.event();
        let fallback = match s.envelope.as_deref() {
            Some("bare") | None => name.as_deref(),
            Some(_) => None,
        };
        let v = match self {
            Judge::BuiltIn => verdict::decode(&s.raw, fallback),
            Judge::Loaded(c) => verdict::decode_with(&s.raw, fallback, c),
        };
        // Text columns and jsonb refuse NUL: cleaned like every text of a row.
        let errors: Vec<FieldError> = v
            .errors
            .iter()
            .map(|e| FieldError {
                path: clean(&e.path),
                code: e.code,
                message: clean(&e.message),
            })
            .collect();
        let unknown: Vec<String> = v.unknown_fields.iter().map(|p| clean(p)).collect();
        (
            v.status.as_str().to_owned(),
            canonical_errors(&errors),
            canonical_strings(&unknown),
        )
    }
}

const EXAMPLES: usize = 3;

fn key(old: &str, new: &str) -> String {
    format!("{old}→{new}")
}

fn totals_of(transitions: &[Transition]) -> BTreeMap<String, u64> {
    let mut totals = BTreeMap::new();
    for t in transitions {
        *totals.entry(key(&t.old, &t.new)).or_default() += t.count;
    }
    totals
}

/// Judges the selection again. `run`: `None` for a dry run (nothing written), else the run id
/// and where to start (its cursor). Pages of `page_size` rows.
pub async fn reprocess(
    store: &ReprocessStore,
    judge: &Judge<'_>,
    sel: &Selection,
    run: Option<(i64, Cursor)>,
    page_size: i64,
    mut progress: impl FnMut(u64),
) -> Result<Outcome, DbError> {
    let fingerprint = judge.fingerprint();
    let mut cursor = run.as_ref().map_or_else(Cursor::start, |(_, c)| c.clone());
    let run_id = run.as_ref().map(|(id, _)| *id);
    let mut counts: BTreeMap<(String, String, String), (u64, Vec<String>)> = BTreeMap::new();
    let mut rows = 0u64;
    // One page written while the next is read: at most one write in flight, and writes commit
    // in key order, so a run that stops resumes after its last committed page.
    let mut pending: Option<Vec<(Reverdict, Option<String>)>> = None;
    loop {
        let write = async {
            match pending.take() {
                Some(p) => store.write(&p).await,
                None => Ok(()),
            }
        };
        let (page, written) = tokio::join!(store.page(sel, &cursor, page_size), write);
        written?;
        let page = page?;
        let Some(last) = page.last() else { break };
        cursor = Cursor(last.stream.clone(), last.stream_seq, last.published_at);
        let mut out = Vec::with_capacity(page.len());
        for s in &page {
            let (status, errors, unknown) = judge.judge(s);
            let event = s.event();
            if run_id.is_none() {
                let e = counts
                    .entry((
                        event.clone().unwrap_or_default(),
                        s.status.clone(),
                        status.clone(),
                    ))
                    .or_default();
                e.0 += 1;
                if e.1.len() < EXAMPLES {
                    e.1.push(format!("{}:{}", s.stream, s.stream_seq));
                }
            }
            out.push((
                Reverdict {
                    run_id: run_id.unwrap_or(0),
                    stream: s.stream.clone(),
                    stream_seq: s.stream_seq,
                    published_at: s.published_at,
                    catalogue: fingerprint.clone(),
                    old_status: s.status.clone(),
                    status,
                    errors,
                    unknown_fields: unknown,
                },
                event,
            ));
        }
        if run_id.is_some() {
            pending = Some(out);
        }
        rows += page.len() as u64;
        progress(rows);
        if (page.len() as i64) < page_size {
            break;
        }
    }
    if let Some(p) = pending.take() {
        store.write(&p).await?;
    }
    let mut outcome = Outcome {
        run_id,
        catalogue: fingerprint,
        rows,
        ..Outcome::default()
    };
    match run_id {
        None => {
            outcome.transitions = counts
                .into_iter()
                .map(|((event, old, new), (count, examples))| Transition {
                    event,
                    old,
                    new,
                    count,
                    examples,
                })
                .collect();
        }
        Some(id) => {
            outcome.transitions = store.transitions(id, EXAMPLES as i64).await?;
            outcome.rows = outcome.transitions.iter().map(|t| t.count).sum();
        }
    }
    outcome.totals = totals_of(&outcome.transitions);
    if let Some(id) = run_id {
        let json = serde_json::to_string(&outcome.totals).unwrap_or_else(|_| "{}".into());
        let end = store.close(id, &json).await?;
        outcome.run_hash = Some(end.hash.iter().map(|b| format!("{b:02x}")).collect());
    }
    Ok(outcome)
}

/// The outcome as text: totals, then per event the changed verdicts with examples.
pub fn table(o: &Outcome) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let run = o
        .run_id
        .map_or_else(|| "dry run".to_owned(), |id| format!("run {id}"));
    let _ = writeln!(
        out,
        "# {run}: {} rows judged by catalogue {}",
        o.rows, o.catalogue
    );
    for (k, n) in &o.totals {
        let _ = writeln!(out, "{k}\t{n}");
    }
    let changed: Vec<&Transition> = o.transitions.iter().filter(|t| t.old != t.new).collect();
    if changed.is_empty() {
        let _ = writeln!(out, "no verdict changed");
    } else {
        let _ = writeln!(out, "changed verdicts by event:");
        for t in changed {
            let _ = writeln!(
                out,
                "  {}\t{}→{}\t{}\te.g. {}",
                t.event,
                t.old,
                t.new,
                t.count,
                t.examples.join(", ")
            );
        }
    }
    if let Some(h) = &o.run_hash {
        let _ = writeln!(out, "# run closed, hash {h}");
    }
    out
}
