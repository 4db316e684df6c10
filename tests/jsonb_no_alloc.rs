//! `refusal` must not allocate for a payload PostgreSQL accepts: it runs on every message.

use event_audit::test_support::row::jsonb::{refusal, Refusal};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn refusal_does_not_allocate() {
    let payloads = [
        r#"{"id":"a1","amount":-12.50e2,"tags":["x","\u00e9\ud83d\ude00"],"n":{"k":[1,2,{}]}}"#,
        r#"{"a":"\u0000"}"#,
        r#"[1e999999]"#,
        r#""\ud800""#,
    ];
    let mut got = Vec::with_capacity(payloads.len());
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for p in payloads {
        got.push(refusal(p));
    }
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        before,
        "refusal allocated"
    );
    let expected = [
        None,
        Some(Refusal::NulCharacter),
        Some(Refusal::NumberOutOfRange),
        Some(Refusal::LoneSurrogate),
    ];
    assert_eq!(got, expected);
}
