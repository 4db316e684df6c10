//! Reprocessing after a catalogue upgrade: stored rows judged again, from their `raw` bytes, by
//! this binary's catalogue (or one read from a directory), and compared with each row's latest
//! verdict. Originals are never changed; a verdict that changed is a hashed row of
//! `audit.reverdicts` naming its catalogue; every page judged is recorded with its transitions
//! (unchanged verdicts counted too), and a finished run is closed by a row chaining the runs.
//! Pages of rows in key order (bounded memory); a run stopped half-way resumes after its last
//! recorded page (`--resume RUN`).

pub(crate) mod store;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::db::DbError;
use crate::decode::catalogue::rt::dynamic::DynCatalogue;
use crate::decode::catalogue::rt::FieldError;
use crate::decode::verdict;
use crate::row::canon::{canonical_errors, canonical_strings, clean};
use crate::row::reverdict::Reverdict;
use store::{Page, ReprocessStore};

/// Which stored rows to judge again.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Selection {
    pub(crate) since: Option<DateTime<Utc>>,
    pub(crate) until: Option<DateTime<Utc>>,
    pub(crate) stream: Option<String>,
    /// Inclusive stream sequence range.
    pub(crate) seq: Option<(i64, i64)>,
    /// Original statuses (empty: all).
    pub(crate) statuses: Vec<String>,
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
    pub(crate) stream: String,
    pub(crate) stream_seq: i64,
    pub(crate) published_at: DateTime<Utc>,
    pub(crate) envelope: Option<String>,
    pub(crate) event_type: Option<String>,
    pub(crate) event_version: Option<String>,
    pub(crate) raw: Vec<u8>,
    /// Its latest verdict: its latest re-verdict, else the original.
    pub(crate) latest: Latest,
}

/// A verdict as stored: status, and the canonical JSON of its errors and unknown fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Latest {
    pub(crate) status: String,
    pub(crate) errors: Option<String>,
    pub(crate) unknown_fields: Option<String>,
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

/// Latest → new status of one event, with a count and example keys (`stream:seq`).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub(crate) struct Transition {
    pub(crate) event: String,
    pub(crate) old: String,
    pub(crate) new: String,
    pub(crate) count: u64,
    pub(crate) examples: Vec<String>,
}

/// What a run (or a dry run) found.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Outcome {
    /// `None` for a dry run.
    pub(crate) run_id: Option<i64>,
    pub(crate) catalogue: String,
    pub(crate) rows: u64,
    /// Rows whose verdict changed (status, errors or unknown fields): the re-verdicts stored.
    pub(crate) changed: u64,
    /// (old → new) → count, every event together.
    pub(crate) totals: BTreeMap<String, u64>,
    /// Per event and (old → new); unchanged verdicts included.
    pub(crate) transitions: Vec<Transition>,
    /// Hex of the closing hash (a run that finished).
    pub(crate) run_hash: Option<String>,
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
    pub(crate) fn judge(&self, s: &Stored) -> (String, Option<String>, Option<String>) {
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

/// Counts per (event, old, new) with the first examples in key order.
#[derive(Default)]
struct Tally(BTreeMap<(String, String, String), (u64, Vec<String>)>);

impl Tally {
    fn add(&mut self, event: &str, old: &str, new: &str, count: u64, examples: &[String]) {
        let e = self
            .0
            .entry((event.to_owned(), old.to_owned(), new.to_owned()))
            .or_default();
        e.0 += count;
        for x in examples {
            if e.1.len() < EXAMPLES {
                e.1.push(x.clone());
            }
        }
    }

    fn merge(&mut self, ts: &[Transition]) {
        for t in ts {
            self.add(&t.event, &t.old, &t.new, t.count, &t.examples);
        }
    }

    fn transitions(&self) -> Vec<Transition> {
        self.0
            .iter()
            .map(|((event, old, new), (count, examples))| Transition {
                event: event.clone(),
                old: old.clone(),
                new: new.clone(),
                count: *count,
                examples: examples.clone(),
            })
            .collect()
    }
}

/// A stored run to carry on: its id, where to start, and its recorded pages' transitions.
pub(crate) struct RunStart {
    pub(crate) id: i64,
    pub(crate) cursor: Cursor,
    pub(crate) done: Vec<Vec<Transition>>,
}

/// Judges one page of stored rows (in key order, not empty: it ends at its last row) with
/// `judge` (whose fingerprint is `fingerprint`): its transitions from each row's latest verdict,
/// and a re-verdict of run `run_id` for each verdict that changed.
pub fn judge_page(judge: &Judge<'_>, fingerprint: &str, rows: &[Stored], run_id: i64) -> Page {
    let mut tally = Tally::default();
    let mut reverdicts = Vec::new();
    for s in rows {
        let (status, errors, unknown_fields) = judge.judge(s);
        let event = s.event();
        let example = [format!("{}:{}", s.stream, s.stream_seq)];
        tally.add(
            event.as_deref().unwrap_or_default(),
            &s.latest.status,
            &status,
            1,
            &example,
        );
        let same = status == s.latest.status
            && errors == s.latest.errors
            && unknown_fields == s.latest.unknown_fields;
        if same {
            continue;
        }
        reverdicts.push((
            Reverdict {
                run_id,
                stream: s.stream.clone(),
                stream_seq: s.stream_seq,
                published_at: s.published_at,
                catalogue: fingerprint.to_owned(),
                old_status: s.latest.status.clone(),
                status,
                errors,
                unknown_fields,
            },
            event,
        ));
    }
    let last = rows.last().map_or_else(Cursor::start, |l| {
        Cursor(l.stream.clone(), l.stream_seq, l.published_at)
    });
    Page {
        reverdicts,
        last,
        rows: rows.len() as u64,
        transitions: tally.transitions(),
    }
}

/// Judges the selection again. `run`: `None` for a dry run (nothing written), else the run to
/// write into. Pages of `page_size` rows; each page's changed verdicts and record are written in
/// one transaction while the next page is read.
pub(crate) async fn reprocess(
    store: &ReprocessStore,
    judge: &Judge<'_>,
    sel: &Selection,
    run: Option<RunStart>,
    page_size: i64,
    mut progress: impl FnMut(u64),
) -> Result<Outcome, DbError> {
    let fingerprint = judge.fingerprint();
    let mut total = Tally::default();
    let (run_id, mut cursor) = match run {
        Some(r) => {
            for page in &r.done {
                total.merge(page);
            }
            (Some(r.id), r.cursor)
        }
        None => (None, Cursor::start()),
    };
    let mut rows = 0u64;
    let mut changed = 0u64;
    // At most one write in flight, and pages commit in key order, so a run that stops resumes
    // after its last committed page.
    let mut pending: Option<Page> = None;
    loop {
        let write = async {
            match (pending.take(), run_id) {
                (Some(p), Some(id)) => store.write(id, &p).await,
                _ => Ok(()),
            }
        };
        let (page, written) = tokio::join!(store.page(sel, &cursor, page_size), write);
        written?;
        let page = page?;
        let Some(last) = page.last() else { break };
        cursor = Cursor(last.stream.clone(), last.stream_seq, last.published_at);
        let judged = judge_page(judge, &fingerprint, &page, run_id.unwrap_or(0));
        changed += judged.reverdicts.len() as u64;
        total.merge(&judged.transitions);
        if run_id.is_some() {
            pending = Some(judged);
        }
        rows += page.len() as u64;
        progress(rows);
        if (page.len() as i64) < page_size {
            break;
        }
    }
    if let (Some(p), Some(id)) = (pending.take(), run_id) {
        store.write(id, &p).await?;
    }
    let transitions = total.transitions();
    let mut outcome = Outcome {
        run_id,
        catalogue: fingerprint,
        rows: transitions.iter().map(|t| t.count).sum(),
        changed,
        totals: totals_of(&transitions),
        transitions,
        run_hash: None,
    };
    if let Some(id) = run_id {
        let json = serde_json::to_string(&outcome.totals).unwrap_or_else(|_| "{}".into());
        let end = store.close(id, outcome.rows, &json).await?;
        outcome.changed = u64::try_from(end.changed).unwrap_or(0);
        outcome.run_hash = Some(end.hash.iter().map(|b| format!("{b:02x}")).collect());
    }
    Ok(outcome)
}

/// The outcome as text: totals, then per event the changed verdicts with examples.
pub(crate) fn table(o: &Outcome) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let run = o
        .run_id
        .map_or_else(|| "dry run".to_owned(), |id| format!("run {id}"));
    let _ = writeln!(
        out,
        "# {run}: {} rows judged by catalogue {}; {} verdicts changed",
        o.rows, o.catalogue, o.changed
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
