//! The fuzz targets on the stable toolchain (CI has no nightly): every seed git keeps
//! (`fuzz/seeds/<target>/`) and every structured input (`fuzz/structured_inputs.py`, for
//! `decode` and `settings`) replayed through the same check `cargo fuzz` runs
//! (`fuzz/src/lib.rs`, included here), which panics when a parser breaks its contract; each
//! target's seeds must hold inputs its parser accepts and inputs it refuses. The seeds are made
//! again from the project's formats and must be read as intended (`EVENT_AUDIT_WRITE_SEEDS=1`
//! writes them into `fuzz/seeds/`; docs/fuzzing.md). The corpora of long runs live outside git
//! (`fuzz/corpus.sh`); `EVENT_AUDIT_FUZZ_CORPUS=DIR` replays `DIR/<target>/` too.

#[path = "fuzz_corpus/index_seeds.rs"]
mod index_seeds;
#[path = "fuzz_corpus/seeds.rs"]
mod seeds;
// The fuzz crate's library, whose items are public for its targets.
#[allow(unreachable_pub)]
#[path = "../../fuzz/src/lib.rs"]
mod targets;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::support::BIN;

/// The seeds git keeps of `target`.
fn seeds_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

/// The files of `dir`, in name order.
fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    files
}

/// The directory of `target`'s structured inputs (`decode` and `settings`; `None` for the
/// others), made once per run of the suite.
fn structured(target: &str) -> Option<&'static Path> {
    static MADE: OnceLock<[PathBuf; 2]> = OnceLock::new();
    let i = ["decode", "settings"].iter().position(|t| *t == target)?;
    let dirs = MADE.get_or_init(|| {
        ["decode", "settings"].map(|t| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("fuzz-structured")
                .join(t);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).expect("remove the last run's inputs");
            }
            fuzz_script("structured_inputs.py", &[t.as_ref(), dir.as_os_str()]);
            dir
        })
    });
    Some(&dirs[i])
}

/// Every file of `dir` through `target`'s check, in name order; panics naming the file and
/// showing its bytes when one breaks the contract. How many were accepted and refused.
fn replay(target: &str, check: targets::Check, dir: &Path) -> (usize, usize) {
    let (mut accepted, mut refused) = (0, 0);
    for f in &files_of(dir) {
        let bytes = std::fs::read(f).expect("an input");
        let ok = std::panic::catch_unwind(|| check(&bytes)).unwrap_or_else(|_| {
            panic!(
                "{target}: {} breaks the contract: {}",
                f.display(),
                String::from_utf8_lossy(&bytes)
            )
        });
        if ok {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    (accepted, refused)
}

#[test]
fn every_committed_input_keeps_its_targets_contract() {
    let mut replayed = Vec::new();
    for (target, check) in targets::TARGETS {
        let dir = seeds_dir(target);
        let (accepted, refused) = replay(target, *check, &dir);
        assert!(
            accepted > 0 && refused > 0,
            "{target}: {accepted} accepted and {refused} refused of {} files in {}",
            accepted + refused,
            dir.display()
        );
        replayed.push(format!("{target} {accepted}+{refused}"));
        // A long run's corpus, when one is named (fuzz/corpus.sh where).
        if let Some(corpora) = std::env::var_os("EVENT_AUDIT_FUZZ_CORPUS") {
            let dir = Path::new(&corpora).join(target);
            if dir.is_dir() {
                let (a, r) = replay(target, *check, &dir);
                replayed.push(format!("{target} corpus {a}+{r}"));
            }
        }
    }
    assert!(replayed.len() >= 13, "{replayed:?}");
    eprintln!("replayed (accepted+refused): {}", replayed.join(", "));
}

#[test]
fn the_seeds_are_read_as_intended_and_kept_in_git() {
    let seeds = seeds::all();
    let write = std::env::var("EVENT_AUDIT_WRITE_SEEDS").is_ok_and(|v| v == "1");
    let mut targets_seeded = BTreeSet::new();
    let mut kept = BTreeSet::new();
    for s in &seeds {
        let (_, check) = targets::TARGETS
            .iter()
            .find(|(t, _)| *t == s.target)
            .expect("a target");
        assert_eq!(check(&s.bytes), s.accepted, "{}: seed {}", s.target, s.name);
        targets_seeded.insert(s.target);
        if !s.kept {
            continue;
        }
        let file = seeds_dir(s.target).join(format!("seed-{}", s.name));
        kept.insert(file.clone());
        if write {
            std::fs::create_dir_all(seeds_dir(s.target)).expect("the seeds directory");
            std::fs::write(&file, &s.bytes).expect("write a seed");
        }
        assert!(
            file.exists(),
            "{} is missing: write the seeds again",
            file.display()
        );
        // The settings seeds are made without randomness, and the dictionary and the
        // structured inputs are made from them: a new setting must reach them.
        if s.target == "settings" {
            let committed = std::fs::read(&file).expect("read a seed");
            assert!(
                committed == s.bytes,
                "{} is not what the settings make now: write the seeds again",
                file.display()
            );
        }
    }
    let all: BTreeSet<&str> = targets::TARGETS.iter().map(|(t, _)| *t).collect();
    assert_eq!(targets_seeded, all, "a target without seeds");
    // Nothing else in fuzz/seeds/: a seed no longer made (or no longer kept) goes with
    // `EVENT_AUDIT_WRITE_SEEDS=1`, and the inputs of fixed findings are `regression-*`.
    for target in &all {
        for f in files_of(&seeds_dir(target)) {
            let name = f
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            if name.starts_with("regression-") || kept.contains(&f) {
                continue;
            }
            assert!(
                write && name.starts_with("seed-"),
                "{}: neither a seed seeds.rs keeps nor a regression input",
                f.display()
            );
            std::fs::remove_file(&f).expect("remove a seed no longer kept");
        }
    }
}

/// The tokens of a target's libFuzzer dictionary (`fuzz/dict/<target>.dict`), none without one.
fn dictionary(target: &str) -> Vec<Vec<u8>> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/dict/{target}.dict"));
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.starts_with('"') && l.ends_with('"') && l.len() >= 2)
        .map(|l| unescape(&l[1..l.len() - 1]))
        .collect()
}

/// libFuzzer's dictionary escapes: `\"`, `\\` and `\xNN`.
fn unescape(s: &str) -> Vec<u8> {
    let (b, mut out, mut i) = (s.as_bytes(), Vec::new(), 0);
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'x')) => {
                let hex = std::str::from_utf8(&b[i + 2..i + 4]).expect("two hex digits");
                out.push(u8::from_str_radix(hex, 16).expect("hex"));
                i += 4;
            }
            (b'\\', Some(&c)) => {
                out.push(c);
                i += 2;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Runs `python3 fuzz/<script> <args>`; panics with its standard error unless it succeeds.
fn fuzz_script(script: &str, args: &[&std::ffi::OsStr]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(script);
    let out = std::process::Command::new("python3")
        .arg(path)
        .args(args)
        .env("EVENT_AUDIT_BIN", BIN)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_dictionaries_are_what_the_catalogue_and_the_settings_make() {
    fuzz_script("make_dict.py", &["--check".as_ref()]);
    let decode = dictionary("decode");
    assert!(
        decode.contains(&b"\"account.created-v1\"".to_vec()),
        "{decode:?}"
    );
    let settings = dictionary("settings");
    assert!(settings.contains(&b"[database]".to_vec()));
    // Optional settings too, which the defaults leave out (`seed-every-setting`).
    for key in [
        "[retention]",
        "payloads_for =",
        "signing_key_file =",
        "api_key_file =",
    ] {
        assert!(settings.contains(&key.as_bytes().to_vec()), "{key}");
    }
}

/// Mutations of one input: bytes flipped, inserted, removed, a tail cut, a slice repeated or a
/// token of the target's dictionary put in, one to four of them, from `rng`.
fn mutate(rng: &mut rand::rngs::StdRng, input: &[u8], tokens: &[Vec<u8>]) -> Vec<u8> {
    use rand::Rng;
    let mut v = input.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = if v.is_empty() {
            0
        } else {
            rng.gen_range(0..v.len())
        };
        match rng.gen_range(0..6) {
            5 if !tokens.is_empty() => {
                let t = &tokens[rng.gen_range(0..tokens.len())];
                v.splice(at..at, t.iter().copied());
            }
            0 if !v.is_empty() => v[at] ^= 1 << rng.gen_range(0..8),
            1 => v.insert(at, rng.gen()),
            2 if !v.is_empty() => {
                v.remove(at);
            }
            3 => v.truncate(at),
            _ => {
                let end = (at + rng.gen_range(1..16)).min(v.len());
                let slice = v[at..end].to_vec();
                v.splice(at..at, slice);
            }
        }
    }
    v
}

/// The bounded, seeded run CI makes of every target without nightly: each target's check over
/// mutations of its seeds and, for `decode` and `settings`, its structured inputs (a fixed
/// seed, so a failure is the same on every run).
#[test]
fn seeded_mutations_of_every_corpus_keep_the_contract() {
    use rand::{Rng, SeedableRng};
    const CASES: usize = 1000;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x005e_ed27);
    for (target, check) in targets::TARGETS {
        let mut paths = files_of(&seeds_dir(target));
        if let Some(dir) = structured(target) {
            paths.extend(files_of(dir));
        }
        let files: Vec<Vec<u8>> = paths
            .iter()
            .map(|p| std::fs::read(p).expect("an input"))
            .collect();
        assert!(!files.is_empty(), "{target}: no seeds");
        let tokens = dictionary(target);
        for case in 0..CASES {
            let pick = rng.gen_range(0..files.len());
            let input = mutate(&mut rng, &files[pick], &tokens);
            if std::panic::catch_unwind(|| check(&input)).is_err() {
                panic!("{target}: case {case} breaks the contract on {input:?}");
            }
        }
    }
}

/// Every input `fuzz/structured_inputs.py` makes from the catalogue and the default settings
/// (each field of each event version, each setting, wrong one way at a time) keeps its target's
/// contract: for `decode`, the generated decoders and the interpreter agree on all of them.
#[test]
fn the_structured_inputs_keep_their_targets_contract() {
    for target in ["decode", "settings"] {
        let dir = structured(target).expect("structured inputs");
        let (_, check) = targets::TARGETS
            .iter()
            .find(|(t, _)| *t == target)
            .expect("a target");
        let (accepted, refused) = replay(target, *check, dir);
        // Valid messages or files among them, and far more refused ones.
        assert!(
            accepted > 0 && refused > accepted,
            "{target}: {accepted} accepted, {refused} refused"
        );
        eprintln!("{target}: {accepted} accepted, {refused} refused");
    }
}

/// Inputs one edit away from each target's smallest seed (`fuzz/neighbours.py`: the seed cut at
/// every offset, each byte deleted, replaced by each structural byte, a byte inserted at every
/// offset) keep their target's contract: the deterministic walk libFuzzer does not make. All of
/// them up to `WALK`, past it every n-th of the walk (`--sample`, the same on every run), so the
/// test stays within seconds (a bundle seed has ~49,000 neighbours, each checked with
/// signatures).
#[test]
fn the_neighbours_of_each_targets_smallest_seed_keep_its_contract() {
    const WALK: usize = 1_000;
    let mut walked = Vec::new();
    for (target, check) in targets::TARGETS {
        let smallest = std::fs::read_dir(seeds_dir(target))
            .expect("the seeds")
            .map(|e| e.expect("an entry").path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
            })
            .min_by_key(|p| {
                (
                    std::fs::metadata(p).map_or(u64::MAX, |m| m.len()),
                    p.clone(),
                )
            })
            .unwrap_or_else(|| panic!("{target}: no seed"));
        let name = smallest.file_name().expect("a name").to_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        fuzz_script(
            "neighbours.py",
            &[
                target.as_ref(),
                dir.path().as_os_str(),
                name.as_os_str(),
                "--sample".as_ref(),
                WALK.to_string().as_ref(),
            ],
        );
        let (accepted, refused) = replay(target, *check, dir.path());
        let inputs = accepted + refused;
        // Every offset of the seed gives at least a cut and a deletion: all of them, or a
        // sample of more than half of `WALK`.
        let seed_len = std::fs::metadata(&smallest).expect("the seed").len();
        let expected = usize::try_from(2 * seed_len)
            .expect("a small seed")
            .min(WALK / 2);
        assert!(
            inputs > expected && inputs <= WALK,
            "{target}: {inputs} neighbours of {name:?}"
        );
        walked.push(format!("{target} {name:?} {inputs}"));
    }
    eprintln!("walked: {}", walked.join(", "));
}
