//! `cargo fuzz run vrf_proof`: the check in `fuzz/src/lib.rs` of the same name, on any bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    event_audit_fuzz::vrf_proof(data);
});
