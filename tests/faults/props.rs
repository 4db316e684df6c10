//! Item 2's property, as a black box: for arbitrary JSON stored through the daemon and read
//! back (every number notation, escapes, duplicate keys, unicode, whitespace), `verify` never
//! reports a change that did not happen.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use crate::daemon::drain;
use crate::env::Env;

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "-0",
            "0",
            "0.0",
            "-0.0e-5",
            "1e3",
            "1E2",
            "1.0E7",
            "1e+2",
            "0.10",
            "1.5e-7",
            "123456789012345678901234567890",
            "1e-400",
            "9.99e300",
            "-12.50E-3",
        ])
        .prop_map(str::to_owned),
        any::<i64>().prop_map(|i| i.to_string()),
        (any::<i32>(), 0u32..1000, -300i32..300).prop_map(|(m, f, e)| format!("{m}.{f}e{e}")),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        (0u32..1000, 1usize..6).prop_map(|(m, z)| format!("{m}.{}", "0".repeat(z))),
    ]
}

fn escape(c: char) -> String {
    match c {
        '"' => "\\\"".into(),
        '\\' => "\\\\".into(),
        c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
        c => c.to_string(),
    }
}

fn string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>().prop_map(escape),
            prop::sample::select(vec![
                "\\u00e9",
                "\\ud83d\\ude00",
                "\\/",
                "\\b\\f\\n\\r\\t",
                "\\u0041",
                "\\\"",
                "é",
                "😀",
                "\\u2028",
                "\\uFFFF",
            ])
            .prop_map(str::to_owned),
        ],
        0..6,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

fn space() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", " ", "\n", "\t ", "\r\n  "])
}

fn value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        number(),
        string(),
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("null".to_owned()),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec((space(), inner.clone()), 0..5).prop_map(|items| {
                let body: Vec<String> = items
                    .into_iter()
                    .map(|(s, v)| format!("{s}{v}{s}"))
                    .collect();
                format!("[{}]", body.join(","))
            }),
            object(inner),
        ]
    })
    .boxed()
}

/// An object whose keys come from a small set, so duplicates (the last one wins in jsonb) and
/// keys equal up to escaping occur.
fn object(inner: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let key = prop::sample::select(vec!["a", "b", "\\u0061", "é", "\\u00e9", "long_key", ""]);
    prop::collection::vec((key, space(), inner), 0..6)
        .prop_map(|entries| {
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, s, v)| format!("{s}\"{k}\"{s}:{s}{v}"))
                .collect();
            format!("{{{}}}", body.join(","))
        })
        .boxed()
}

#[tokio::test]
async fn verify_never_reports_a_change_that_did_not_happen() {
    let env = Env::start().await;
    let mut runner = TestRunner::deterministic();
    let payloads = object(value());
    let n = 300;
    for i in 0..n {
        let payload = payloads
            .new_tree(&mut runner)
            .expect("a generated payload")
            .current();
        let envelope = format!(r#"{{"event":"prop.case-v1","id":"p-{i}","payload":{payload}}}"#);
        env.publish("events.props", envelope.into_bytes()).await;
    }
    drain(&env, &[]).await;
    env.assert_exact(n).await;
    let (lost,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM audit.events WHERE payload IS NULL AND payload_error IS NULL",
    )
    .fetch_one(&env.pool().await)
    .await
    .expect("count");
    assert_eq!(
        lost, 0,
        "every payload is stored, or refused with its reason"
    );
}
