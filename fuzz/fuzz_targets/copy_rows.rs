//! `cargo fuzz run copy_rows`: the check in `fuzz/src/lib.rs` of the same name, on any bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    event_audit_fuzz::copy_rows(data);
});
