//! What the auditor and the daemon read from others: evidence bundles (their strict JSON, their
//! entries' leaf data) and the messages of the bus (the decoder, against its run-time
//! interpreter and `serde_json`), and the rows `verify` streams out of PostgreSQL (binary COPY).

use event_audit::decode::verdict::{decode as decode_message, Status};
use event_audit::evidence::bundle::json::{self, Keys};
use event_audit::evidence::bundle::{self as evidence_bundle, fields, leaf, Expect};
use event_audit::test_support::verify::copy::Tuples;
use serde_json::Value;

use super::{judged, judged_dynamic, log_key, policy, ORIGIN};

/// An evidence bundle's text: the strict JSON reader reads its own compact text back to the
/// same value; a bundle that proves with the log's key, origin and witness policy proves the
/// same without them (the checks only add).
pub fn bundle(data: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(data) else {
        return false;
    };
    for keys in [Keys::Unique, Keys::LastWins] {
        if let Ok(v) = json::parse(s, keys) {
            assert_eq!(json::parse(&v.to_string(), keys), Ok(v.clone()), "{v}");
        }
    }
    let expect = Expect {
        origin: Some(ORIGIN.into()),
        policy: Some(policy().clone()),
    };
    let strict = evidence_bundle::check(s, Some(&log_key().public()), &expect);
    let loose = evidence_bundle::check(s, None, &Expect::default());
    if let Ok(p) = &strict {
        let l = loose.expect("a bundle that proves with the key proves without it");
        assert_eq!(
            (&l.format, &l.origin, l.tree_size, l.entries),
            (&p.format, &p.origin, p.tree_size, p.entries)
        );
        assert!(p.cosigned_by.as_ref().is_some_and(|by| !by.is_empty()));
    }
    strict.is_ok()
}

/// A leaf's data (a row's canonical encoding, v1 or v2): what reads is exactly the encoding of
/// the row read, and the columns a bundle would show of it are made without a panic.
pub fn leaf_data(data: &[u8]) -> bool {
    let Ok(c) = leaf::parse(data) else {
        return false;
    };
    assert_eq!(c.encode(), data, "leaf data read back as another");
    let _ = fields::columns(&c);
    true
}

/// One message of the bus: the verdict keeps its status invariants, is the same twice, is the
/// run-time interpreter's verdict, calls nothing "not JSON" that `serde_json` reads as an
/// object, and has an object as payload past `malformed`.
pub fn decode(data: &[u8]) -> bool {
    let v = decode_message(data, None);
    match v.status {
        Status::Decoded => assert!(v.errors.is_empty() && v.event.is_some()),
        Status::Invalid => assert!(!v.errors.is_empty() && v.event.is_none()),
        Status::Malformed => assert!(v.errors.len() == 1 && v.event.is_none()),
        Status::UnknownType | Status::UnknownVersion => {
            assert!(v.errors.is_empty() && v.name.is_some())
        }
    }
    assert!(v.errors.iter().all(|e| !e.message.is_empty()));
    assert_eq!(Status::parse(v.status.as_str()), Some(v.status));
    assert_eq!(
        judged(&v),
        judged(&decode_message(data, None)),
        "not deterministic"
    );
    assert_eq!(
        judged(&v),
        judged_dynamic(data),
        "the interpreter judges otherwise"
    );
    // Against serde_json: what it reads as an object is never "not JSON" to the decoder. (Not
    // the converse: an RFC 8259 number past f64, such as 3e26696, is JSON that serde_json's
    // `Value` refuses and the decoder rightly reads; the fuzzer found one.)
    let whole: Result<Value, _> = serde_json::from_slice(data);
    if whole.is_ok_and(|w| w.is_object()) {
        let not_json = v.errors.iter().any(|e| e.code.as_str() == "not_json");
        assert!(
            !not_json,
            "serde_json reads an object the decoder calls not JSON"
        );
    }
    if v.status != Status::Malformed {
        let payload = v.payload.map(str::trim_start);
        assert!(
            payload.is_some_and(|p| p.starts_with('{')),
            "{:?}",
            v.status
        );
    }
    v.status == Status::Decoded
}

/// A `verify` COPY stream: read whole, in two halves and a byte at a time, the same rows and the
/// same ending.
pub fn copy_rows(data: &[u8]) -> bool {
    let whole = read_copy(data, &[data.len()]);
    assert_eq!(read_copy(data, &[data.len() / 2, data.len()]), whole);
    if data.len() <= 4096 {
        let each: Vec<usize> = (1..=data.len()).collect();
        assert_eq!(read_copy(data, &each), whole);
    }
    whole.1.is_ok() && !whole.0.is_empty()
}

/// The rows `Tuples` reads from `data` pushed in chunks ending at `ends`, and how it ended.
fn read_copy(data: &[u8], ends: &[usize]) -> (Vec<String>, Result<(), String>) {
    let (mut t, mut rows, mut start) = (Tuples::new(), Vec::new(), 0);
    for &end in ends {
        t.push(&data[start..end]);
        start = end;
        loop {
            match t.next_row() {
                Ok(Some((seq, r))) => rows.push(format!("{seq} {r:?}")),
                Ok(None) => break,
                Err(e) => return (rows, Err(e.to_string())),
            }
        }
    }
    (rows, t.finish().map_err(|e| e.to_string()))
}
