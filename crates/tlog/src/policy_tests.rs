//! Tests of the witness policy: the tlog-policy grammar, nested groups, the log line, and the
//! format read before it.

use super::*;
use crate::cosign::WitnessSigner;
use crate::note::{Checkpoint, PrivateKey};

fn witness(name: &str, b: u8) -> WitnessSigner {
    WitnessSigner::from_seed(name, &[b; 32]).unwrap()
}

fn log() -> PrivateKey {
    PrivateKey::from_seed("log.example/a", &[1; 32]).unwrap()
}

fn note() -> (String, String) {
    let cp = Checkpoint {
        origin: "log.example/a".into(),
        size: 12,
        root: [7; 32],
    };
    let n = log().sign(&cp);
    let body = Note::parse(&n).unwrap().text.to_owned();
    (n, body)
}

fn names(ws: &[&WitnessSigner]) -> Vec<String> {
    ws.iter().map(|w| w.public().name.clone()).collect()
}

/// The specification's example: two groups of three, "2 of X and any of Y".
#[test]
fn the_specifications_example_with_nested_groups() {
    let x: Vec<_> = (1..=3)
        .map(|i| witness(&format!("x{i}.example"), i))
        .collect();
    let y: Vec<_> = (4..=6)
        .map(|i| witness(&format!("y{i}.example"), i))
        .collect();
    let mut text = format!("# the example\nlog {}\n\n", log().public().encode());
    for (i, w) in x.iter().enumerate() {
        text += &format!("witness X{} {}\n", i + 1, w.public().encode());
    }
    text += "group X-witnesses 2 X1 X2 X3\n";
    for (i, w) in y.iter().enumerate() {
        text += &format!(
            "\twitness Y{} {} https://y.example/w{i}/\n",
            i + 1,
            w.public().encode()
        );
    }
    text += "group Y-witnesses any Y1 Y2 Y3\n  # a comment\ngroup X-and-Y all X-witnesses Y-witnesses\nquorum X-and-Y\n";
    let p = WitnessPolicy::parse(&text).unwrap();
    assert!(!p.legacy);
    assert_eq!(p.witnesses.len(), 6);
    assert_eq!(p.witnesses[3].url.as_deref(), Some("https://y.example/w0"));
    assert_eq!(p.witnesses[0].url, None);
    assert_eq!(p.check_log(&log().public()), Ok(()));
    let other = PrivateKey::from_seed("log.example/b", &[9; 32]).unwrap();
    assert!(matches!(
        p.check_log(&other.public()),
        Err(PolicyError::OtherLog { .. })
    ));

    let (n, body) = note();
    let with = |ws: &[&WitnessSigner]| {
        let mut s = n.clone();
        for w in ws {
            s += &w.cosign(&body, 5);
        }
        s
    };
    // Two X and no Y; one X and one Y; all of Y: not enough.
    for ws in [
        vec![&x[0], &x[1]],
        vec![&x[0], &y[0]],
        vec![&y[0], &y[1], &y[2]],
    ] {
        let got = p.check(&with(&ws));
        assert!(
            matches!(got, Err(PolicyError::NotMet { .. })),
            "{:?}",
            names(&ws)
        );
    }
    // Two X and one Y: met, named by their policy names.
    assert_eq!(
        p.check(&with(&[&x[2], &y[1], &x[0]])),
        Ok(vec!["X1".into(), "X3".into(), "Y2".into()])
    );
    let mut again = WitnessPolicy::parse(&p.encode()).unwrap();
    assert_eq!(again, p);
    again = WitnessPolicy::parse(&again.encode()).unwrap();
    assert_eq!(again, p);
    let msg = p.check(&with(&[&x[0]])).unwrap_err().to_string();
    assert!(
        msg.contains("X-and-Y (2 of 2)") && msg.contains("X1"),
        "{msg}"
    );
}

#[test]
fn a_single_witness_and_none() {
    let a = witness("a.example", 2);
    let p =
        WitnessPolicy::parse(&format!("witness A {}\nquorum A\n", a.public().encode())).unwrap();
    let (n, body) = note();
    assert!(p.check(&n).is_err());
    assert_eq!(
        p.check(&format!("{n}{}", a.cosign(&body, 1))),
        Ok(vec!["A".into()])
    );
    let none = WitnessPolicy::parse("quorum none\n").unwrap();
    assert_eq!(none.check(&n), Ok(vec![]));
    assert_eq!(none.check_log(&log().public()), Ok(()));
}

#[test]
fn what_tlog_policy_refuses() {
    let (a, b) = (witness("a.example", 2), witness("b.example", 3));
    let (ka, kb) = (a.public().encode(), b.public().encode());
    // The same key under another name is a duplicate too.
    let renamed = WitnessSigner::from_seed("other.example", &[2; 32])
        .unwrap()
        .public()
        .encode();
    let lk = log().public().encode();
    for (bad, why) in [
        (String::new(), "no quorum"),
        (format!("witness A {ka}\n"), "no quorum"),
        (format!("witness A {ka}\nquorum B\n"), "undefined quorum"),
        (
            format!("group G any A\nwitness A {ka}\nquorum G\n"),
            "member defined after",
        ),
        (
            format!("witness A {ka}\nwitness A {kb}\nquorum A\n"),
            "name twice",
        ),
        (
            format!("witness A {ka}\nwitness B {renamed}\nquorum A\n"),
            "key twice",
        ),
        (
            format!("witness A {ka}\ngroup G 2 A\nquorum G\n"),
            "k above n",
        ),
        (format!("witness A {ka}\ngroup G 0 A\nquorum G\n"), "k zero"),
        (
            format!("witness A {ka}\ngroup G 01 A\nquorum G\n"),
            "leading zero",
        ),
        (
            format!("witness A {ka}\ngroup G any A A\nquorum G\n"),
            "member twice",
        ),
        (
            format!("witness A {ka}\ngroup G any\nquorum G\n"),
            "no member",
        ),
        (format!("witness none {ka}\nquorum none\n"), "none defined"),
        (
            format!("witness A {ka}\ngroup G any none\nquorum G\n"),
            "none as member",
        ),
        (
            format!("witness A {ka}\nquorum A\nquorum A\n"),
            "two quorums",
        ),
        (
            format!("witness A {ka} ftp://x\nquorum A\n"),
            "a URL not http",
        ),
        (format!("witness A {ka}\r\nquorum A\n"), "CR"),
        (
            format!("witness A {lk}\nquorum A\n"),
            "a log key as a witness",
        ),
        (
            format!("log {ka}\nquorum none\n"),
            "a witness key as the log",
        ),
        (format!("log {lk}\nlog {lk}\nquorum none\n"), "log twice"),
        (
            format!("witness A {ka} http://x extra\nquorum A\n"),
            "words past the URL",
        ),
        (format!("witnesses A {ka}\nquorum A\n"), "unknown keyword"),
    ] {
        assert!(WitnessPolicy::parse(&bad).is_err(), "{why}: {bad:?}");
    }
    // A comment needs `#` first on its line; a name may hold any non-control octet.
    let p = WitnessPolicy::parse(&format!("  # c\nwitness Ｋ {ka}\nquorum Ｋ\n")).unwrap();
    assert_eq!(p.witnesses[0].name, "Ｋ");
}

#[test]
fn the_format_read_before_is_one_group() {
    let (n, body) = note();
    let (a, b, c) = (witness("a", 1), witness("b", 2), witness("c", 3));
    let text = format!(
        "# witnesses\nwitness {} http://127.0.0.1:1\nwitness {} https://b.example/w/\nwitness {} http://c\nquorum 2\n",
        a.public().encode(),
        b.public().encode(),
        c.public().encode()
    );
    let p = WitnessPolicy::parse(&text).unwrap();
    assert!(p.legacy);
    assert_eq!(p.legacy_count(), Some(2));
    assert_eq!(p.witnesses[1].url.as_deref(), Some("https://b.example/w"));
    // Written in the new format, it reads back the same, but no longer as the old one.
    let new = WitnessPolicy::parse(&p.encode()).unwrap();
    assert_eq!(
        new,
        WitnessPolicy {
            legacy: false,
            ..p.clone()
        }
    );
    assert!(p.encode().contains("group quorum 2 a b c\nquorum quorum\n"));
    let one = format!("{n}{}", a.cosign(&body, 5));
    assert!(matches!(p.check(&one), Err(PolicyError::NotMet { .. })));
    let two = format!("{one}{}", c.cosign(&body, 6));
    assert_eq!(p.check(&two), Ok(vec!["a".into(), "c".into()]));
    // The same witness twice counts once.
    let again = format!("{one}{}", a.cosign(&body, 7));
    assert!(p.check(&again).is_err());
    for bad in [
        "",
        "quorum 1\n",
        "witness nope http://x\n",
        &format!("witness {} ftp://x\n", a.public().encode()),
        &format!("witness {} http:///\n", a.public().encode()),
        &format!("witness {} https:///x\n", a.public().encode()),
        &format!("witness {} http://x\nquorum 2\n", a.public().encode()),
        &format!("witness {} http://x\nquorum 0\n", a.public().encode()),
        &format!(
            "witness {0} http://x\nwitness {0} http://y\n",
            a.public().encode()
        ),
    ] {
        assert!(WitnessPolicy::parse(bad).is_err(), "{bad:?}");
    }
    let all = WitnessPolicy::parse(&format!("witness {} http://x\n", a.public().encode()));
    assert_eq!(all.map(|p| p.legacy_count()), Ok(Some(1)));
}

/// An ML-DSA-44 witness (type 0x06 vkey) is counted beside Ed25519 ones, and its key is a
/// duplicate under another name as an Ed25519 one would be.
#[test]
fn an_ml_dsa_44_witness_is_counted() {
    use crate::cosign::AnyWitnessSigner;
    let ed = witness("ed.example", 2);
    let pq = AnyWitnessSigner::ml_dsa_44_from_seed("pq.example", &[3; 32]).unwrap();
    let text = format!(
        "log {}\nwitness ED {}\nwitness PQ {}\ngroup both all ED PQ\nquorum both\n",
        log().public().encode(),
        ed.public().encode(),
        pq.public().encode()
    );
    let p = WitnessPolicy::parse(&text).unwrap();
    let (n, body) = note();
    let only_ed = format!("{n}{}", ed.cosign(&body, 5));
    assert!(p.check(&only_ed).is_err());
    let both = format!("{only_ed}{}", pq.cosign(&body, 6).unwrap());
    assert_eq!(p.check(&both).unwrap().len(), 2);
    // A forged ML-DSA-44 line by the policy's witness rejects the note.
    let line = pq.cosign(&body, 6).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (head, sig) = line.trim_end().rsplit_once(' ').unwrap();
    let mut blob = b64.decode(sig).unwrap();
    blob[100] ^= 1;
    let forged = format!("{only_ed}{head} {}\n", b64.encode(blob));
    assert!(p.check(&forged).is_err());
    let again = AnyWitnessSigner::ml_dsa_44_from_seed("pq2.example", &[3; 32]).unwrap();
    let dup = format!("{text}witness PQ2 {}\n", again.public().encode());
    assert!(WitnessPolicy::parse(&dup).is_err());
}
