//! Drift from live traffic: what the log's rows carry that the catalogue does not declare,
//! declared optional fields never seen, required fields missing, type mismatches, unknown
//! versions and types — assembled from the per-batch aggregates ingest writes
//! (`audit.field_observations`), never from raw bytes. `suggest` turns it into a patch to
//! `catalogue/events.toml` for a person to review.

pub(crate) mod report;
pub(crate) mod store;
pub(crate) mod suggest;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::decode::catalogue::{find_event, EventSpec};

/// The time range of a drift report (bus time); observations are per batch, so a batch
/// overlapping the range counts whole.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Range {
    pub(crate) since: Option<DateTime<Utc>>,
    pub(crate) until: Option<DateTime<Utc>>,
}

/// One aggregate as the store groups it.
#[derive(Debug, Clone)]
pub(crate) struct Agg {
    pub(crate) what: String,
    pub(crate) event: String,
    pub(crate) status: String,
    pub(crate) path: String,
    pub(crate) kind: String,
    pub(crate) code: String,
    pub(crate) count: u64,
    pub(crate) declared_seen: u64,
    pub(crate) first: DateTime<Utc>,
    pub(crate) last: DateTime<Utc>,
}

pub(crate) type Rows = Vec<Agg>;

/// When something was seen, and how often.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) count: u64,
    pub(crate) first_seen: DateTime<Utc>,
    pub(crate) last_seen: DateTime<Utc>,
}

impl Seen {
    fn of(a: &Agg) -> Seen {
        Seen {
            count: a.count,
            first_seen: a.first,
            last_seen: a.last,
        }
    }

    fn merge(&mut self, a: &Agg) {
        self.count += a.count;
        self.first_seen = self.first_seen.min(a.first);
        self.last_seen = self.last_seen.max(a.last);
    }
}

/// An undeclared field of an event version.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Undeclared {
    /// Array indexes folded to `*`.
    pub(crate) path: String,
    /// JSON kind → count.
    pub(crate) kinds: BTreeMap<String, u64>,
    #[serde(flatten)]
    pub(crate) seen: Seen,
}

/// A field error of invalid rows at one path.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) code: String,
    /// For type mismatches: the JSON kind found.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) found: String,
    #[serde(flatten)]
    pub(crate) seen: Seen,
}

/// Drift of one event version.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct EventDrift {
    pub(crate) event: String,
    /// Rows by status.
    pub(crate) rows: BTreeMap<String, u64>,
    pub(crate) undeclared: Vec<Undeclared>,
    /// Declared optional top-level fields no row of the range had (rows judged by this
    /// binary's catalogue only).
    pub(crate) optional_never_seen: Vec<String>,
    /// `missing_field` and `null_value` errors of invalid rows.
    pub(crate) required_missing: Vec<Problem>,
    /// `invalid_type` (and `out_of_range`) errors of invalid rows, by path and kind found.
    pub(crate) type_mismatches: Vec<Problem>,
}

/// An event name the catalogue does not know.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Unknown {
    pub(crate) event: String,
    #[serde(flatten)]
    pub(crate) seen: Seen,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub(crate) struct Drift {
    pub(crate) catalogue: String,
    pub(crate) events: Vec<EventDrift>,
    pub(crate) unknown_versions: Vec<Unknown>,
    pub(crate) unknown_types: Vec<Unknown>,
}

fn never_seen(spec: &EventSpec, seen: u64) -> Vec<String> {
    spec.fields
        .iter()
        .enumerate()
        .filter(|(i, f)| !f.required && *i < 64 && seen & (1u64 << i) == 0)
        .map(|(_, f)| f.name.to_owned())
        .collect()
}

fn new_event(event: &str) -> EventDrift {
    EventDrift {
        event: event.to_owned(),
        rows: BTreeMap::new(),
        undeclared: Vec::new(),
        optional_never_seen: Vec::new(),
        required_missing: Vec::new(),
        type_mismatches: Vec::new(),
    }
}

fn add_unknown(list: &mut Vec<Unknown>, a: &Agg) {
    match list.iter_mut().find(|u| u.event == a.event) {
        Some(u) => u.seen.merge(a),
        None => list.push(Unknown {
            event: a.event.clone(),
            seen: Seen::of(a),
        }),
    }
}

/// Assembles the report from the store's aggregates. Pure.
pub(crate) fn assemble(rows: &[Agg], fingerprint: &str) -> Drift {
    let mut events: BTreeMap<String, EventDrift> = BTreeMap::new();
    let mut seen_bits: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = Drift {
        catalogue: fingerprint.to_owned(),
        ..Drift::default()
    };
    for a in rows {
        match (a.what.as_str(), a.status.as_str()) {
            ("rows", "unknown_version") => add_unknown(&mut out.unknown_versions, a),
            ("rows", "unknown_type") => add_unknown(&mut out.unknown_types, a),
            ("rows", "decoded" | "invalid") => {
                let e = events
                    .entry(a.event.clone())
                    .or_insert_with(|| new_event(&a.event));
                *e.rows.entry(a.status.clone()).or_default() += a.count;
                *seen_bits.entry(a.event.clone()).or_default() |= a.declared_seen;
            }
            ("undeclared", _) => {
                let e = events
                    .entry(a.event.clone())
                    .or_insert_with(|| new_event(&a.event));
                match e.undeclared.iter_mut().find(|u| u.path == a.path) {
                    Some(u) => {
                        u.seen.merge(a);
                        *u.kinds.entry(a.kind.clone()).or_default() += a.count;
                    }
                    None => e.undeclared.push(Undeclared {
                        path: a.path.clone(),
                        kinds: BTreeMap::from([(a.kind.clone(), a.count)]),
                        seen: Seen::of(a),
                    }),
                }
            }
            ("error", _) => {
                let e = events
                    .entry(a.event.clone())
                    .or_insert_with(|| new_event(&a.event));
                let list = match a.code.as_str() {
                    "missing_field" | "null_value" => &mut e.required_missing,
                    "invalid_type" | "out_of_range" => &mut e.type_mismatches,
                    _ => continue,
                };
                match list
                    .iter_mut()
                    .find(|p| p.path == a.path && p.code == a.code && p.found == a.kind)
                {
                    Some(p) => p.seen.merge(a),
                    None => list.push(Problem {
                        path: a.path.clone(),
                        code: a.code.clone(),
                        found: a.kind.clone(),
                        seen: Seen::of(a),
                    }),
                }
            }
            _ => {}
        }
    }
    for (name, e) in &mut events {
        if let Some(spec) = find_event(name) {
            e.optional_never_seen = never_seen(spec, seen_bits.get(name).copied().unwrap_or(0));
        }
        e.required_missing
            .sort_by(|a, b| b.seen.count.cmp(&a.seen.count).then(a.path.cmp(&b.path)));
        e.type_mismatches
            .sort_by(|a, b| b.seen.count.cmp(&a.seen.count).then(a.path.cmp(&b.path)));
    }
    out.events = events.into_values().collect();
    out
}

/// A time given on the command line: RFC 3339, or a date (midnight UTC).
pub(crate) fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{s}` is neither an RFC 3339 time nor a date (YYYY-MM-DD)"))
}
