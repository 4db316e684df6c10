//! `Erasures::judge`: an erasure reaches only the rows recorded before it.

use super::*;
use crate::row::erasure::{Erased, Published};

const H: [u8; 32] = [5; 32];

fn named(n: i64, stream: &str, seq: i64) -> Erasure {
    Erasure {
        erasure: n,
        at: String::new(),
        reason: "r".into(),
        selector: "account".into(),
        rows: vec![Erased {
            stream: stream.into(),
            stream_seq: seq,
            row_hash: hex(&H),
        }],
        subjects: Vec::new(),
        published: None,
        archive: None,
    }
}

fn by_time(n: i64, before: &str, count: i64) -> Erasure {
    Erasure {
        erasure: n,
        at: String::new(),
        reason: "r".into(),
        selector: "published before".into(),
        rows: Vec::new(),
        subjects: Vec::new(),
        published: Some(Published {
            from: None,
            before: before.into(),
            count,
            row_hashes_sha256: String::new(),
        }),
        archive: None,
    }
}

fn place(seq: i64, link: i64, emptied: bool) -> Place<'static> {
    Place {
        stream: "S",
        stream_seq: seq,
        // 2026-11-01T00:00:00Z
        published_us: 1_793_491_200_000_000,
        row_hash: &H,
        link,
        emptied,
        leaf: None,
    }
}

fn erasures(records: Vec<(Erasure, i64)>) -> Erasures {
    let mut e = Erasures::default();
    for (r, link) in records {
        e.add(r, link).expect("a record that parses");
    }
    e.index();
    e
}

#[test]
fn a_named_row_is_covered_only_by_a_record_placed_after_it() {
    let e = erasures(vec![(named(1, "S", 3), 10)]);
    let mut counted = Vec::new();
    assert_eq!(e.judge(&place(3, 9, true), &mut counted), Judged::Covered);
    assert_eq!(
        e.judge(&place(3, 11, true), &mut counted),
        Judged::EmptiedAfter(1)
    );
    assert_eq!(e.judge(&place(4, 9, true), &mut counted), Judged::Uncovered);
    assert!(counted.is_empty(), "a named erasure counts nothing");
}

#[test]
fn an_erasure_by_time_counts_the_rows_it_emptied_before_it() {
    // Erasure 1 by time at link 10; erasure 2 names row 2, recorded at link 5, before it.
    let e = erasures(vec![
        (named(2, "S", 2), 5),
        (by_time(1, "2027-01-01T00:00:00Z", 1), 10),
    ]);
    let mut counted = Vec::new();
    // Row 1 (link 3) emptied: the erasure by time emptied it.
    assert_eq!(e.judge(&place(1, 3, true), &mut counted), Judged::Covered);
    assert_eq!(counted, vec![(1, H)]);
    counted.clear();
    // Row 2 (link 4) was emptied by erasure 2 first: not counted by erasure 1.
    assert_eq!(e.judge(&place(2, 4, true), &mut counted), Judged::Covered);
    assert!(counted.is_empty());
    // A row recorded after the erasure by time, emptied: a break, naming it.
    assert_eq!(
        e.judge(&place(7, 12, true), &mut counted),
        Judged::EmptiedAfter(1)
    );
    // A row it covers but did not empty is not counted.
    assert_eq!(
        e.judge(&place(1, 3, false), &mut counted),
        Judged::Uncovered
    );
    assert!(counted.is_empty());
}

#[test]
fn a_prune_counts_every_row_of_its_range_recorded_before_it() {
    let mut p = by_time(1, "2026-12-01T00:00:00Z", 2);
    p.published.as_mut().expect("by time").from = Some("2026-11-01T00:00:00Z".into());
    p.archive = Some(crate::row::erasure::Archived {
        partition: "events_2026_11".into(),
        file_sha256: String::new(),
        file: "events_2026_11.jsonl".into(),
    });
    let e = erasures(vec![(p, 10)]);
    let mut counted = Vec::new();
    assert_eq!(
        e.judge(&place(1, 3, false), &mut counted),
        Judged::Uncovered
    );
    assert_eq!(e.judge(&place(2, 4, true), &mut counted), Judged::Covered);
    assert_eq!(counted, vec![(0, H), (0, H)]);
    counted.clear();
    assert_eq!(
        e.judge(&place(3, 11, true), &mut counted),
        Judged::EmptiedAfter(1)
    );
    assert!(counted.is_empty());
    // The log's own erasure records are never counted.
    let mut own = place(1, 3, false);
    own.stream = erasure::STREAM;
    assert_eq!(e.judge(&own, &mut counted), Judged::Uncovered);
    assert!(counted.is_empty());
}

#[test]
fn a_restored_leaf_is_covered_only_at_its_index_by_a_record_placed_after_it() {
    let mut e = erasures(vec![]);
    e.restores.push(restores::RestoreRecord {
        number: 1,
        link: 10,
        leaves: 30..50,
        digest: String::new(),
        from: "tiles".into(),
        at: String::new(),
        reason: String::new(),
    });
    let leaf = |seq: i64, link: i64, leaf: Option<u64>| Place {
        stream: restore::LEAVES,
        leaf,
        ..place(seq, link, true)
    };
    let mut counted = Vec::new();
    assert_eq!(
        e.judge(&leaf(30, 9, Some(30)), &mut counted),
        Judged::Restored
    );
    assert_eq!(
        counted,
        vec![(0, H)],
        "counted for restore 1 (after no erasure)"
    );
    counted.clear();
    // Not at the index it claims, outside the record's leaves, or placed after the record.
    for p in [
        leaf(31, 9, Some(32)),
        leaf(50, 9, Some(50)),
        leaf(40, 11, Some(40)),
    ] {
        assert_eq!(e.judge(&p, &mut counted), Judged::Uncovered, "{p:?}");
    }
    assert!(counted.is_empty());
}
