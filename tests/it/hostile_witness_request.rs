//! The witness's request body (`POST /add-checkpoint`: `old <size>`, at most 63 proof lines, an
//! empty line, the checkpoint) under hostile text, as a bounded, seeded property test beside
//! `tests/it/hostile_input.rs`: nothing panics; what parses has at most 63 proof lines of 32 bytes
//! each and an old size written in plain decimal; a valid body parses to what was written.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngSeed;

use event_audit::test_support::witnessed::witness::add::parse;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(27),
        ..ProptestConfig::default()
    }
}

/// A valid body: `old`, `n` proof lines, the checkpoint's text.
fn body(old: u64, n: usize) -> String {
    let mut b = format!("old {old}\n");
    for i in 0..n {
        b.push_str(&B64.encode([i as u8; 32]));
        b.push('\n');
    }
    b.push_str("\nevent-audit/hostile\n9\nAAAA\n\n\u{2014} k abc\n");
    b
}

/// The parser's promises on anything it accepts.
fn holds(text: &str) -> Result<(), TestCaseError> {
    if parse(text).is_ok() {
        let first = text.lines().next().unwrap_or("");
        let digits = first.strip_prefix("old ").unwrap_or("");
        prop_assert!(!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
        prop_assert!(digits == "0" || !digits.starts_with('0'), "{first:?}");
        let proof_lines = text.lines().skip(1).take_while(|l| !l.is_empty()).count();
        prop_assert!(proof_lines <= 63, "{proof_lines} proof lines accepted");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn hostile_text_never_panics_and_what_parses_is_well_formed(s in ".{0,400}") {
        holds(&s)?;
    }

    #[test]
    fn a_changed_valid_body_is_refused_or_well_formed(
        old in 0u64..1_000_000,
        n in 0usize..70,
        at in any::<Index>(),
        byte in any::<u8>(),
        cut in any::<bool>(),
    ) {
        let valid = body(old, n);
        // The valid body parses exactly when its proof fits the limit.
        prop_assert_eq!(parse(&valid).is_ok(), n <= 63);
        let mut bytes = valid.into_bytes();
        let i = at.index(bytes.len());
        if cut {
            bytes.truncate(i);
        } else {
            bytes[i] = byte;
        }
        holds(&String::from_utf8_lossy(&bytes))?;
    }
}
