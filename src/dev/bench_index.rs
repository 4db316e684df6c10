//! `bench index-proof`: what a completeness proof costs on a large account index. An index of
//! `labels` accounts (each a pseudo-random label with one to three leaves, and one account's
//! label, its identifier's VRF output, with `events` leaves) is written into a fresh database's
//! stored index as one update (values, and the nodes at depths 0, 8 and 16), then the proof of
//! that account is read back as `prove --complete` reads it (`index::prove::proof_at` and the
//! account's leaves, timed over several runs), its size as the bundle shows it measured, and
//! its check (the VRF proof and `check_complete`) timed; the same for an account the index does
//! not hold. Prints one line per figure.

use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::config::{DatabaseSettings, Dur};
use crate::db::Db;
use crate::index::complete::Claim;
use crate::log::index::{self as store, StoredLabel, Writes};
use crate::tlog::index::memory::Index;
use crate::tlog::index::{alpha, check_complete, label_of, label_proven, Label, Value};
use crate::tlog::merkle::Hash;
use crate::tlog::vrf::VrfKey;

/// Rows one insert writes while the index is built.
const CHUNK: usize = 50_000;
/// Timed runs of each figure.
const RUNS: usize = 30;

fn row_hash(leaf: u64) -> Hash {
    Sha256::digest(leaf.to_be_bytes()).into()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The database at `url` as the daemon opens it (created and migrated when new).
async fn open(url: &str) -> anyhow::Result<Db> {
    Ok(Db::open_writer(&DatabaseSettings {
        url: url.to_owned(),
        connections: 2,
        connect_timeout: Dur::secs(10),
        ..DatabaseSettings::default()
    })
    .await?)
}

/// The values of `labels` accounts, one of them `target` with leaves `0, 7, 14, …` (`events`
/// of them), each with its leaves.
fn build(labels: u64, target: Label, events: u64) -> Vec<(Label, Value, Vec<i64>)> {
    let mut all = Vec::with_capacity(usize::try_from(labels).unwrap_or(0));
    let mut next = events * 7;
    for i in 1..labels {
        let l: Label = Sha256::digest(i.to_be_bytes()).into();
        let n = 1 + i % 3;
        let leaves: Vec<u64> = (0..n).map(|k| next + k).collect();
        next += n;
        let hashes: Vec<(u64, Hash)> = leaves.iter().map(|x| (*x, row_hash(*x))).collect();
        let v = Value::of(hashes.iter().map(|(x, h)| (*x, h)));
        all.push((l, v, leaves.iter().map(|x| *x as i64).collect()));
    }
    let leaves: Vec<u64> = (0..events).map(|k| k * 7).collect();
    let hashes: Vec<(u64, Hash)> = leaves.iter().map(|x| (*x, row_hash(*x))).collect();
    all.push((
        target,
        Value::of(hashes.iter().map(|(x, h)| (*x, h))),
        leaves.iter().map(|x| *x as i64).collect(),
    ));
    all
}

/// Runs the benchmark into the (new) database at `url`; returns `(labels, seconds to build)`.
pub(crate) async fn index_proof(url: &str, labels: u64, events: u64) -> anyhow::Result<(u64, f64)> {
    let db = open(url).await?;
    let key = VrfKey::from_seed(&[7; 32]);
    let id = "A-BENCH-TARGET";
    let (vrf_proof, beta) = key.prove(&alpha(id));
    let target = label_of(&beta);
    let started = Instant::now();
    let all = build(labels, target, events);
    let version = 1i64 << 40;
    let mut conn = db.acquire().await?;
    for chunk in all.chunks(CHUNK) {
        let w = Writes {
            version,
            entries: chunk.to_vec(),
            ..Writes::default()
        };
        store::write_index(&mut conn, &w).await?;
    }
    let mut idx = Index::new();
    let nodes = idx.update(all.iter().map(|(l, v, _)| (*l, *v)));
    let subject: [u8; 32] = Sha256::digest(id.as_bytes()).into();
    let w = Writes {
        version,
        nodes,
        new_labels: vec![StoredLabel {
            subject,
            label: target,
            proof: vrf_proof.to_vec(),
        }],
        ..Writes::default()
    };
    store::write_index(&mut conn, &w).await?;
    let built = started.elapsed().as_secs_f64();
    println!(
        "index of {labels} labels written in {built:.1} s; root {}",
        crate::row::hex(&idx.root())
    );

    for (what, label, n) in [
        ("an account with", target, events),
        (
            "an account the index does not hold, with",
            label_of(&key.output(&alpha("A-NOT-THERE"))),
            0,
        ),
    ] {
        let (mut read, mut claim) = (Vec::new(), None);
        for _ in 0..RUNS {
            let t = Instant::now();
            let proof = crate::index::prove::proof_at(&mut conn, &label, version).await?;
            let leaves = store::leaves_of(&mut conn, &label, version).await?;
            read.push(t.elapsed().as_secs_f64() * 1e3);
            claim = proof.map(|proof| Claim {
                identifier: id.to_owned(),
                vrf_proof: vrf_proof.to_vec(),
                leaves,
                proof,
            });
        }
        let claim = claim.ok_or_else(|| anyhow::anyhow!("the stored index made no proof"))?;
        let shown = serde_json::to_string(&crate::evidence::complete::ClaimJson::from(&claim))?;
        let hashes: Vec<(u64, Hash)> = claim.leaves.iter().map(|x| (*x, row_hash(*x))).collect();
        let mut check = Vec::new();
        let public = key.public();
        for _ in 0..RUNS {
            let t = Instant::now();
            let proven = label_proven(&public, id, &claim.vrf_proof);
            let ok = check_complete(&idx.root(), &label, &claim.proof, &hashes, u64::MAX);
            check.push(t.elapsed().as_secs_f64() * 1e3);
            // The stranger's label is not the VRF output of `id`: only its index proof counts.
            anyhow::ensure!(
                ok.is_ok() && (n == 0 || proven == Some(label)),
                "the proof does not hold"
            );
        }
        println!(
            "{what} {n} events: proof read from the stored index in {:.2} ms (median of {RUNS}); {} siblings, {} bytes as the bundle shows it; checked in {:.3} ms (VRF proof and index proof)",
            median(read),
            claim.proof.siblings.len(),
            shown.len(),
            median(check)
        );
    }
    Ok((labels, built))
}

/// `bench index-catch-up`: the account index brought up to the head of the log at `url` with
/// the key in `key_file`, as fast as it goes (updates of at most `index::update::MAX_ROWS`
/// rows); returns `(rows indexed, seconds)`. What the index does per row, without ingest beside
/// it.
pub(crate) async fn catch_up(url: &str, key_file: &std::path::Path) -> anyhow::Result<(u64, f64)> {
    let db = open(url).await?;
    let key = crate::witnessed::signer::load_key(key_file)?;
    let labeler = crate::index::label::Labeler::new(crate::tlog::index::vrf_key(&key));
    let registry = crate::telemetry::metrics::Registry::new();
    let metrics = std::sync::Arc::new(crate::index::metrics::IndexMetrics::new(&registry));
    let mut updater = crate::index::update::Updater::new(db, "bench".into(), labeler, metrics);
    let started = Instant::now();
    let done = updater
        .catch_up(
            std::time::Duration::from_secs(24 * 3600),
            crate::index::update::MAX_ROWS,
        )
        .await?;
    let rows: u64 = done.iter().map(|u| u.rows as u64).sum();
    let secs = started.elapsed().as_secs_f64();
    if let Some(last) = done.last() {
        let phase = |i: usize| done.iter().map(|u| u.phases[i]).sum::<f64>();
        println!(
            "index caught up: {} updates, {rows} rows, {} labels, leaves below {} indexed, in {secs:.2} s (reading the rows {:.2} s, labels {:.2} s, values and nodes {:.2} s, writing {:.2} s)",
            done.len(),
            last.labels,
            last.version,
            phase(0),
            phase(1),
            phase(2),
            phase(3)
        );
    }
    Ok((rows, secs))
}
