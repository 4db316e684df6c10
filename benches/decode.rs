//! Decode throughput on a realistic mix of 20,000 messages (`sample::realistic_mix`): the typed
//! catalogue decode (`verdict::decode`) against parsing the same bytes into a `serde_json::Value`.
//! Reported twice: in events per second and in bytes per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use event_audit::decode::verdict::{decode, Status};
use event_audit::test_support::dev::sample;

const MESSAGES: usize = 20_000;
const SEED: u64 = 2026;

fn decode_mix(c: &mut Criterion) {
    let msgs = sample::realistic_mix(MESSAGES, SEED);
    let bytes: usize = msgs.iter().map(Vec::len).sum();
    let decoded = msgs
        .iter()
        .filter(|m| decode(m, None).status == Status::Decoded)
        .count();
    eprintln!(
        "mix: {MESSAGES} messages, {bytes} bytes ({} bytes/message), {decoded} decoded",
        bytes / MESSAGES
    );

    let groups = [
        ("decode_events", Throughput::Elements(MESSAGES as u64)),
        ("decode_bytes", Throughput::Bytes(bytes as u64)),
    ];
    for (name, throughput) in groups {
        let mut g = c.benchmark_group(name);
        g.throughput(throughput);
        // One iteration is the whole mix (tens of milliseconds): flat sampling, fewer samples.
        g.sampling_mode(SamplingMode::Flat);
        g.sample_size(20);
        g.bench_function("typed_decode", |b| {
            b.iter(|| {
                let mut ok = 0usize;
                for m in &msgs {
                    let v = decode(black_box(m), None);
                    ok += usize::from(v.status == Status::Decoded);
                }
                ok
            });
        });
        g.bench_function("serde_json_value", |b| {
            b.iter(|| {
                let mut ok = 0usize;
                for m in &msgs {
                    let v = serde_json::from_slice::<serde_json::Value>(black_box(m));
                    ok += usize::from(v.is_ok());
                }
                ok
            });
        });
        g.finish();
    }
}

criterion_group!(benches, decode_mix);
criterion_main!(benches);
