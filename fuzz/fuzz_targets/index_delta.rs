//! `cargo fuzz run index_delta`: the check in `fuzz/src/lib.rs` of the same name, on any bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    event_audit_fuzz::index_delta(data);
});
