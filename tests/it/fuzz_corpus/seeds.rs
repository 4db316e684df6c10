//! The seed inputs of the fuzz targets, made from the project's own formats and fixtures: a
//! handful of valid inputs per target and near-valid ones (cut, flipped, a field missing or
//! added), each with whether its target must accept it. `tests/it/fuzz_corpus.rs` checks them and,
//! with `EVENT_AUDIT_WRITE_SEEDS=1`, writes those git keeps to `fuzz/seeds/<target>/seed-<name>`:
//! all of them but `decode`'s, of which git keeps `DECODE_KEPT` (the others are made here on
//! every run, and the structured inputs hold a fuller message of every event version).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chrono::DateTime;
use serde_json::{json, Value};

use super::targets::{log_key, policy_text, witnesses, ORIGIN};
use crate::support::bundle::{bundle, cosign, row};
use crate::support::records::records;
use event_audit::config::Settings;
use event_audit::decode::catalogue::EVENTS;
use event_audit::test_support::archive::line::write_line;
use event_audit::test_support::dev::sample::{native, payload_for};
use event_audit::test_support::row::pgcopy::CopyBuf;
use event_audit::tlog::merkle::{leaf_hash, Frontier, MemTree};
use event_audit::tlog::note::Checkpoint;
use event_audit::tlog::tile::push_entry;

/// One seed: its target, its file name, its bytes, whether the target accepts it, and whether
/// git keeps it as a file (`fuzz/seeds/<target>/seed-<name>`).
pub(super) struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
    pub accepted: bool,
    pub kept: bool,
}

pub(super) fn add(
    out: &mut Vec<Seed>,
    target: &'static str,
    name: &str,
    bytes: impl Into<Vec<u8>>,
    ok: bool,
) {
    out.push(Seed {
        target,
        name: name.to_owned(),
        bytes: bytes.into(),
        accepted: ok,
        kept: target != "decode" || DECODE_KEPT.contains(&name),
    });
}

/// The `decode` seeds git keeps: of the decoder fixtures (`tests/corpus/decode.jsonl`) and the
/// number past f64, the ten that reach the most of libFuzzer's coverage features together,
/// picked greedily (each next the one adding the most features not yet reached:
/// `fuzz/corpus.sh pick decode DIR 10`, docs/fuzzing.md, "The corpora and the seeds").
pub(super) const DECODE_KEPT: &[&str] = &[
    "fixture-12",
    "fixture-36",
    "number-past-f64",
    "fixture-19",
    "fixture-59",
    "fixture-29",
    "fixture-37",
    "fixture-16",
    "fixture-35",
    "fixture-55",
];

/// Every target's seeds.
pub(super) fn all() -> Vec<Seed> {
    let mut out = Vec::new();
    tiles(&mut out);
    notes(&mut out);
    decoder(&mut out);
    evidence(&mut out);
    files(&mut out);
    archive(&mut out);
    super::index_seeds::index(&mut out);
    out
}

fn tree(n: u64) -> MemTree {
    MemTree {
        leaves: (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect(),
    }
}

/// The fixtures' log at size `n`, signed.
fn signed(n: u64) -> String {
    log_key().sign(&Checkpoint {
        origin: ORIGIN.into(),
        size: n,
        root: tree(n).root(n),
    })
}

fn tiles(out: &mut Vec<Seed>) {
    for (i, p) in [
        "tile/0/000",
        "tile/0/x001/x234/067",
        "tile/entries/000.p/7",
        "tile/3/x999/999.p/255",
        "tile/63/x018/x446/x744/x073/x709/x551/615",
    ]
    .iter()
    .enumerate()
    {
        add(out, "tile_path", &format!("valid-{i}"), *p, true);
    }
    for (i, p) in [
        "tile/0/x000/001",
        "tile/entries/000.p/0",
        "tile/64/000",
        "tile/0/000.p/256",
        "tile/01/000",
        "tile/0/1234",
        "tile/0/x018/x446/x744/x073/x709/x551/616",
    ]
    .iter()
    .enumerate()
    {
        add(out, "tile_path", &format!("refused-{i}"), *p, false);
    }
    let mut entries = vec![1, 2];
    for i in 0..3u8 {
        push_entry(&mut entries, &[i; 32]).expect("an entry");
    }
    let hashes: Vec<u8> = [0, 4]
        .into_iter()
        .chain((0..5).flat_map(|i| [i; 32]))
        .collect();
    let level2: Vec<u8> = [4, 1].into_iter().chain([9; 64]).collect();
    add(out, "tile_data", "bundle", entries.clone(), true);
    add(out, "tile_data", "hashes", hashes.clone(), true);
    add(out, "tile_data", "level-2", level2, true);
    add(
        out,
        "tile_data",
        "bundle-cut",
        &entries[..entries.len() - 1],
        false,
    );
    let mut extra = entries.clone();
    push_entry(&mut extra, b"one more").expect("an entry");
    add(out, "tile_data", "bundle-extra", extra, false);
    add(
        out,
        "tile_data",
        "hashes-short",
        &hashes[..hashes.len() - 1],
        false,
    );
}

fn notes(out: &mut Vec<Seed>) {
    let [w1, w2] = witnesses();
    let n4 = signed(4);
    let n10 = signed(10);
    let cosigned = cosign(&n10, w1, 1_767_225_600);
    add(out, "note", "signed", n4.clone(), true);
    add(out, "note", "cosigned", cosigned.clone(), true);
    add(out, "note", "public-key", log_key().public().encode(), true);
    let flipped = n4.replacen(
        "\u{2014} event-audit/fuzz ",
        "\u{2014} event-audit/fuzz A",
        1,
    );
    add(out, "note", "bad-base64", flipped, false);
    add(
        out,
        "note",
        "no-blank-line",
        n4.replace("\n\n", "\n"),
        false,
    );
    add(out, "cosign", "policy", policy_text(), true);
    add(out, "cosign", "cosigned", cosigned.clone(), true);
    add(out, "cosign", "witness-key", w2.public().encode(), true);
    add(out, "cosign", "not-cosigned", n10.clone(), false);
    add(
        out,
        "cosign",
        "quorum-3",
        policy_text().replace("quorum 1", "quorum 3"),
        false,
    );
    add(
        out,
        "cosign",
        "ftp",
        policy_text().replace("https://w1", "ftp://w1"),
        false,
    );
    let no_host = policy_text().replace("https://w1.example/", "http:///");
    add(out, "cosign", "no-host", no_host, false);
    let t = tree(10);
    let body = |old: u64, proof: &[[u8; 32]], note: &str| {
        let lines: String = proof.iter().map(|h| B64.encode(h) + "\n").collect();
        format!("old {old}\n{lines}\n{note}")
    };
    let wr = "witness_request";
    add(out, wr, "first", body(0, &[], &n4), true);
    add(
        out,
        wr,
        "extends",
        body(4, &t.consistency(4, 10), &n10),
        true,
    );
    add(
        out,
        wr,
        "cosigned",
        body(4, &t.consistency(4, 10), &cosigned),
        true,
    );
    add(
        out,
        wr,
        "leading-zero",
        body(4, &[], &n10).replace("old 4", "old 04"),
        false,
    );
    add(out, wr, "64-lines", body(4, &[[7; 32]; 64], &n10), false);
    add(
        out,
        wr,
        "not-base64",
        format!("old 4\nAAAA\n\n{n10}"),
        false,
    );
}

fn decoder(out: &mut Vec<Seed>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |f: &str| std::fs::read_to_string(format!("{root}/tests/corpus/{f}")).expect(f);
    let expected = read("expected.jsonl");
    for (i, (line, want)) in read("decode.jsonl")
        .lines()
        .zip(expected.lines())
        .enumerate()
    {
        let want: Value = serde_json::from_str(want).expect("an expectation");
        if !line.is_empty() {
            let ok = want["status"] == "decoded";
            add(out, "decode", &format!("fixture-{:02}", i + 1), line, ok);
        }
    }
    // Found by the target: JSON with a number past f64 (its payload unread: an unknown version).
    let far = r#"{"event":"a.b-v9","payload":{"size":3e26696}}"#;
    add(out, "decode", "number-past-f64", far, false);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(27);
    for e in &EVENTS {
        let payload = payload_for(e.name, false, &mut rng).expect("a catalogue event");
        let msg = native(e.name, "id-1", "2026-01-05T09:00:00Z", &payload);
        add(out, "decode", &format!("event-{}", e.name), msg, true);
    }
}

fn evidence(out: &mut Vec<Seed>) {
    let t0 = DateTime::from_timestamp_micros(1_767_225_600_000_000).expect("t0");
    let leaves: Vec<Vec<u8>> = records("FUZZ", 5, 1, t0)
        .iter()
        .map(|r| r.canon().encode())
        .collect();
    let (one, four) = (row(&leaves[1]), row(&leaves[4]));
    let mut value = bundle(ORIGIN, log_key(), &leaves, &[(1, &one), (4, &four)]);
    let note = value["checkpoint"].as_str().expect("checkpoint").to_owned();
    value["checkpoint"] = cosign(&note, &witnesses()[0], 1_767_225_600).into();
    let text = serde_json::to_string_pretty(&value).expect("JSON");
    add(out, "bundle", "cosigned", text.clone(), true);
    add(
        out,
        "bundle",
        "cut",
        &text.as_bytes()[..text.len() / 2],
        false,
    );
    let mut less = value.clone();
    less["entries"][0]["columns"]
        .as_object_mut()
        .expect("columns")
        .remove("status");
    add(out, "bundle", "no-status", less.to_string(), false);
    let mut more = value.clone();
    more["comment"] = "not a field of the format".into();
    add(out, "bundle", "extra-field", more.to_string(), false);
    for (i, l) in leaves.iter().take(3).enumerate() {
        add(out, "leaf_data", &format!("leaf-{i}"), l.clone(), true);
    }
    // The older encodings, still read: v2 (no commitment), v1 (no catalogue either).
    for r in records("FUZZ", 1, 1, t0) {
        let mut c = r.canon();
        c.commitment = None;
        add(out, "leaf_data", "leaf-v2", c.encode(), true);
        c.catalogue = None;
        add(out, "leaf_data", "leaf-v1", c.encode(), true);
    }
    let l = &leaves[0];
    add(out, "leaf_data", "cut", &l[..l.len() - 1], false);
    add(out, "leaf_data", "longer", [&l[..], b"x"].concat(), false);
    add(
        out,
        "leaf_data",
        "tag-v9",
        [b"event-audit row v9\0", &l[19..]].concat(),
        false,
    );
    let stream = copy_stream(t0);
    add(out, "copy_rows", "rows", stream.clone(), true);
    add(out, "copy_rows", "cut", &stream[..stream.len() - 7], false);
    add(out, "copy_rows", "header-only", &stream[..19], false);
}

/// A `verify` COPY stream (`link_seq`, then the row) of four rows.
fn copy_stream(t0: DateTime<chrono::Utc>) -> Vec<u8> {
    const HEADER_LEN: usize = 19;
    let mut out = CopyBuf::with_capacity(0).finish();
    out.truncate(HEADER_LEN);
    for (i, r) in records("FUZZ", 4, 2, t0).iter().enumerate() {
        let mut one = CopyBuf::with_capacity(0);
        r.view(3).encode(&mut one);
        let one = one.finish();
        let fields = &one[HEADER_LEN + 2..one.len() - 2];
        let count = i16::from_be_bytes([one[HEADER_LEN], one[HEADER_LEN + 1]]) + 1;
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&8i32.to_be_bytes());
        out.extend_from_slice(&(i as i64 * 10).to_be_bytes());
        out.extend_from_slice(fields);
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

/// The fixtures' log at size 10 as the auditor's (`verify`) and the signer's files keep it.
fn state_files() -> (Value, Value) {
    let mut f = Frontier::new();
    for i in 0..10u64 {
        f.append(leaf_hash(&i.to_be_bytes()), |_, _| {});
    }
    let (key, note) = (log_key().public().encode(), signed(10));
    let frontier = B64.encode(f.to_bytes());
    let auditor = json!({
        "format": "event-audit-verify-state/2",
        "key": key,
        "logs": {ORIGIN: {"note": note, "frontier": frontier}},
        "runs": 3,
        "breaks": [{
            "id": "0a1b2c3d", "found_at": "2026-01-05T09:00:00Z", "run": 2,
            "why": "row 5 altered", "stream": "EVENTS", "stream_seq": 5, "link": 5,
            "breaks_total": 1, "acknowledged": {"at": "2026-01-06T09:00:00Z", "run": 3}
        }]
    });
    let signer = json!({
        "format": "event-audit-signer-state/1",
        "key": key,
        "logs": {ORIGIN: {"size": 10, "root": B64.encode(f.root()), "frontier": frontier, "note": note}}
    });
    (auditor, signer)
}

/// The defaults and every setting they leave out (the optional ones: key files, state
/// directories, retention), which the command line names (an argument's id is its setting's
/// path), each with the first of a few values that the settings load with. So the dictionary
/// and the structured inputs made from this seed reach every setting, not only the defaulted.
/// (A setting that cannot stand beside those before it is left out: NATS takes one way to
/// authenticate, here its credentials file.)
fn every_setting(default: &str) -> String {
    use clap::CommandFactory;
    fn paths(cmd: &clap::Command, into: &mut std::collections::BTreeSet<String>) {
        let ids = cmd.get_arguments().map(|a| a.get_id().as_str());
        into.extend(ids.filter(|id| id.contains('.')).map(str::to_owned));
        cmd.get_subcommands().for_each(|sub| paths(sub, into));
    }
    let mut all = std::collections::BTreeSet::new();
    paths(&event_audit::Cli::command(), &mut all);
    let mut doc: toml::Table = default.parse().expect("the defaults as TOML");
    let fits = ["/tmp/event-audit-seed", "1h", "http://127.0.0.1:1/"].map(toml::Value::from);
    let fits = fits
        .into_iter()
        .chain([1.into(), true.into()])
        .collect::<Vec<toml::Value>>();
    for path in all {
        let parts: Vec<&str> = path.split('.').collect();
        let (last, sections) = parts.split_last().expect("a dotted path");
        let given = sections
            .iter()
            .try_fold(&doc, |table, s| table.get(*s)?.as_table())
            .is_some_and(|table| table.contains_key(*last));
        if given {
            continue;
        }
        for value in &fits {
            let mut tried = doc.clone();
            let mut table = &mut tried;
            for s in sections {
                let entry = table.entry(*s).or_insert_with(|| toml::Table::new().into());
                table = entry.as_table_mut().expect("a section");
            }
            table.insert((*last).to_owned(), value.clone());
            let text = toml::to_string(&tried).expect("TOML");
            if super::targets::settings(text.as_bytes()) {
                doc = tried;
                break;
            }
        }
    }
    toml::to_string(&doc).expect("TOML")
}

fn files(out: &mut Vec<Seed>) {
    let default = toml::to_string(&Settings::default()).expect("TOML");
    add(
        out,
        "settings",
        "every-setting",
        every_setting(&default),
        true,
    );
    add(out, "settings", "default", default, true);
    let secrets = "[database]\nurl = \"postgres://audit:db-S3cret-pw@db.internal:5432/audit\"\n\
                   [nats]\nurl = \"nats://ingest:nats-S3cret-pw@nats.internal:4222\"\n\
                   [ingest]\nbatch_size = 500\nlinger = \"20ms\"\n";
    add(out, "settings", "secrets", secrets, true);
    let s = "settings";
    add(
        out,
        s,
        "unterminated",
        secrets.replacen("/audit\"", "/audit", 1),
        false,
    );
    add(
        out,
        s,
        "typo",
        secrets.replace("batch_size", "batch_sise"),
        false,
    );
    add(
        out,
        s,
        "duration",
        secrets.replace("20ms", "20 parsecs"),
        false,
    );
    add(out, s, "zero", secrets.replace("500", "0"), false);
    let one_slash = secrets.replacen("postgres://", "postgres:/", 1);
    add(out, s, "one-slash", one_slash, false);
    add(
        out,
        s,
        "type",
        format!("{secrets}[http]\nmax_connections = \"many\"\n"),
        false,
    );
    let (auditor, signer) = state_files();
    let pretty = |v: &Value| serde_json::to_string_pretty(v).expect("JSON");
    add(out, "auditor_state", "v2", pretty(&auditor), true);
    let mut v1 = auditor.clone();
    let o = v1.as_object_mut().expect("object");
    o.remove("runs");
    o.remove("breaks");
    o["format"] = "event-audit-verify-state/1".into();
    add(out, "auditor_state", "v1", pretty(&v1), true);
    let mut other = auditor.clone();
    other["key"] = witnesses()[0].public().encode().into();
    add(out, "auditor_state", "other-key", pretty(&other), false);
    let mut edge = auditor.clone();
    edge["logs"][ORIGIN]["frontier"] = B64.encode([0u8; 64]).into();
    add(out, "auditor_state", "other-edge", pretty(&edge), false);
    add(out, "signer_state", "valid", pretty(&signer), true);
    let mut smaller = signer.clone();
    smaller["logs"][ORIGIN]["size"] = 9.into();
    add(out, "signer_state", "other-size", pretty(&smaller), false);
    let mut extra = signer.clone();
    extra["logs"][ORIGIN]["cosigned"] = true.into();
    add(out, "signer_state", "extra-field", pretty(&extra), false);
}

/// Archive lines: a written row and an erased one, and a line cut short, with a byte of hex
/// that is not lowercase, and with a field it does not have.
fn archive(out: &mut Vec<Seed>) {
    let t0 = DateTime::from_timestamp_micros(1_767_225_600_000_000).expect("t0");
    let recs = records("FUZZ", 2, 1, t0);
    let mut line = Vec::new();
    write_line(&recs[0].view(3), 0, &mut line);
    add(out, "archive_line", "row", line.clone(), true);
    let mut erased = Vec::new();
    let v = recs[1].view(3);
    write_line(
        &event_audit::test_support::row::view::RowView {
            raw: b"",
            salt: None,
            payload: None,
            headers: None,
            event_id: None,
            account_number: None,
            errors: None,
            ..v
        },
        1,
        &mut erased,
    );
    add(out, "archive_line", "erased", erased, true);
    add(out, "archive_line", "cut", &line[..line.len() / 2], false);
    let text = String::from_utf8(line).expect("UTF-8");
    let at = text.find("\"row_hash\":\"").expect("row_hash") + 12;
    let mut upper = text.clone();
    upper.replace_range(at..at + 2, "AB");
    add(out, "archive_line", "hex-uppercase", upper, false);
    let extra = text.replacen("{", "{\"comment\":\"not a column\",", 1);
    add(out, "archive_line", "extra-field", extra, false);
}
