//! The envelope-id findings recomputed from the rows: `audit.id_findings` is not chained, so
//! `verify` derives what it must hold from the rows (which are) and their log order, and names
//! every finding that is missing, extra, points to the wrong first occurrence, or has a kind
//! the rows rule out. It reads through [`Reader`] only ids that occur more than once, and the
//! stored findings.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use sqlx::Row;

use super::Break;
use crate::db::{Ctx, DbError};
use crate::log::Reader;
use crate::row::columns;

/// A row's place in the log: (stream, stream sequence, bus time).
type Key = (String, i64, DateTime<Utc>);

/// One row carrying an envelope id that occurs more than once, in log order.
#[derive(Debug, Clone)]
pub(crate) struct Occurrence {
    pub(crate) event_id: String,
    pub(crate) key: Key,
    pub(crate) event_type: Option<String>,
    pub(crate) event_version: Option<String>,
    /// Whether the row claims its id ([`columns::CLAIMS_ITS_ID`]); rows that do not never take
    /// part in findings.
    pub(crate) claims: bool,
    /// SHA-256 of the message as received.
    pub(crate) raw_hash: Vec<u8>,
    /// The JSON value of the payload text in the message ([`columns::payload_digest`]).
    pub(crate) payload: Option<[u8; 32]>,
}

/// One row of `audit.id_findings`.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(crate) event_id: String,
    pub(crate) duplicate: bool,
    pub(crate) first: Key,
}

fn at(key: &Key) -> String {
    format!("row stream={} stream_seq={}", key.0, key.1)
}

fn row_break(key: &Key, why: String) -> Break {
    Break {
        link: None,
        batch: None,
        stream: Some(key.0.clone()),
        stream_seq: Some(key.1),
        why,
    }
}

/// What the findings must be, given every occurrence of the repeated ids in log order, checked
/// against what is stored. Pure. A finding's kind is recomputed by ingest's own rule
/// ([`columns::same_event`]): the same event name and the same message, or the same payload
/// value, make a duplicate; anything else a conflict.
pub(crate) fn compare(occurrences: &[Occurrence], mut stored: HashMap<Key, Stored>) -> Vec<Break> {
    let mut breaks = Vec::new();
    let mut first: HashMap<&str, &Occurrence> = HashMap::new();
    for o in occurrences.iter().filter(|o| o.claims) {
        let Some(f) = first.get(o.event_id.as_str()).copied() else {
            first.insert(&o.event_id, o);
            if stored.remove(&o.key).is_some() {
                breaks.push(row_break(
                    &o.key,
                    format!(
                        "{}: id finding on the first occurrence of envelope id {} (finding inserted)",
                        at(&o.key),
                        o.event_id
                    ),
                ));
            }
            continue;
        };
        let Some(s) = stored.remove(&o.key) else {
            breaks.push(row_break(
                &o.key,
                format!(
                    "{}: repeats envelope id {} first seen at {}, but has no id finding (finding deleted)",
                    at(&o.key),
                    o.event_id,
                    at(&f.key)
                ),
            ));
            continue;
        };
        let same_name = o.event_type == f.event_type && o.event_version == f.event_version;
        let duplicate =
            columns::same_event(same_name, o.raw_hash == f.raw_hash, (f.payload, o.payload));
        let why = if s.event_id != o.event_id {
            Some(format!(
                "names envelope id {}, the row has {}",
                s.event_id, o.event_id
            ))
        } else if s.first != f.key {
            Some(format!(
                "points to {} as the first occurrence, the log has {}",
                at(&s.first),
                at(&f.key)
            ))
        } else if s.duplicate && !duplicate {
            Some(if same_name {
                "says duplicate, but the first occurrence carries another payload".to_owned()
            } else {
                "says duplicate, but the first occurrence is another event".to_owned()
            })
        } else if !s.duplicate && duplicate {
            Some("says conflict, but the first occurrence is the same event and payload".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            breaks.push(row_break(
                &o.key,
                format!("{}: id finding {why} (finding edited)", at(&o.key)),
            ));
        }
    }
    let mut extra: Vec<(Key, Stored)> = stored.into_iter().collect();
    extra.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, s) in extra {
        breaks.push(row_break(
            &key,
            format!(
                "{}: id finding for envelope id {} that no repeat in the log explains (finding inserted)",
                at(&key),
                s.event_id
            ),
        ));
    }
    breaks
}

/// Reads the occurrences of every envelope id the log holds more than once, in log order (by
/// chain link, then stream, sequence and time), and every stored finding; compares them.
pub(super) async fn check(log: &Reader) -> Result<Vec<Break>, DbError> {
    let occurrences: Vec<Occurrence> = log
        .repeated_ids()
        .map_ok(|row| Occurrence {
            event_id: row.get("event_id"),
            key: (
                row.get("stream"),
                row.get("stream_seq"),
                row.get("published_at"),
            ),
            event_type: row.get("event_type"),
            event_version: row.get("event_version"),
            claims: row.get("claims"),
            raw_hash: row.get("raw_hash"),
            payload: super::rows::payload_of(row.get::<&[u8], _>("raw"))
                .map(columns::payload_digest),
        })
        .try_collect()
        .await
        .ctx("read the rows of repeated envelope ids")?;
    let stored: HashMap<Key, Stored> = log
        .id_findings()
        .map_ok(|row| {
            let key: Key = (
                row.get("stream"),
                row.get("stream_seq"),
                row.get("published_at"),
            );
            let finding: String = row.get("finding");
            let s = Stored {
                event_id: row.get("event_id"),
                duplicate: finding == "duplicate",
                first: (
                    row.get("first_stream"),
                    row.get("first_stream_seq"),
                    row.get("first_published_at"),
                ),
            };
            (key, s)
        })
        .try_collect()
        .await
        .ctx("read the id findings")?;
    Ok(compare(&occurrences, stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(id: &str, seq: i64, ty: &str, raw: &[u8]) -> Occurrence {
        Occurrence {
            event_id: id.into(),
            key: ("S".into(), seq, DateTime::UNIX_EPOCH),
            event_type: Some(ty.into()),
            event_version: Some("v1".into()),
            claims: true,
            raw_hash: raw.to_vec(),
            payload: Some(columns::payload_digest(&String::from_utf8_lossy(raw))),
        }
    }

    fn finding(id: &str, dup: bool, first: i64) -> Stored {
        Stored {
            event_id: id.into(),
            duplicate: dup,
            first: ("S".into(), first, DateTime::UNIX_EPOCH),
        }
    }

    fn key(seq: i64) -> Key {
        ("S".into(), seq, DateTime::UNIX_EPOCH)
    }

    #[test]
    fn the_findings_the_rows_call_for_pass() {
        let occ = vec![
            occ("a", 1, "t", b"x"),
            occ("a", 2, "t", b"x"),
            occ("a", 5, "u", b"y"),
        ];
        let stored = HashMap::from([
            (key(2), finding("a", true, 1)),
            (key(5), finding("a", false, 1)),
        ]);
        assert!(compare(&occ, stored).is_empty());
    }

    #[test]
    fn a_deleted_finding_an_extra_one_and_edited_ones_are_named() {
        let occ = vec![
            occ("a", 1, "t", b"x"),
            occ("a", 2, "u", b"y"),
            occ("a", 3, "t", b"x"),
            occ("a", 4, "u", b"z"),
        ];
        let stored = HashMap::from([
            (key(3), finding("a", false, 1)),
            (key(4), finding("a", true, 1)),
            (key(9), finding("b", true, 8)),
        ]);
        let whys: Vec<String> = compare(&occ, stored).into_iter().map(|b| b.why).collect();
        assert_eq!(whys.len(), 4, "{whys:#?}");
        assert!(whys[0].contains("stream_seq=2") && whys[0].contains("finding deleted"));
        assert!(whys[1].contains("stream_seq=3") && whys[1].contains("says conflict"));
        assert!(whys[2].contains("stream_seq=4") && whys[2].contains("says duplicate"));
        assert!(whys[3].contains("stream_seq=9") && whys[3].contains("finding inserted"));
    }

    #[test]
    fn rows_that_claim_nothing_take_no_part_and_pointers_are_checked() {
        let mut none = occ("a", 1, "t", b"x");
        none.claims = false;
        let occ = vec![none, occ("a", 2, "t", b"x"), occ("a", 3, "t", b"x")];
        let ok = HashMap::from([(key(3), finding("a", true, 2))]);
        assert!(compare(&occ, ok).is_empty());
        let wrong = HashMap::from([(key(3), finding("a", true, 1))]);
        let whys: Vec<String> = compare(&occ, wrong).into_iter().map(|b| b.why).collect();
        assert!(
            whys.len() == 1 && whys[0].contains("points to row stream=S stream_seq=1"),
            "{whys:?}"
        );
    }
}
