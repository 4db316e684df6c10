//! `refusal` must not allocate for a payload PostgreSQL accepts: it runs on every message.
//! The test binary's allocator counts each thread's allocations (the other tests of the binary
//! run beside this one, on threads of their own).

use event_audit::test_support::row::jsonb::{refusal, Refusal};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// This thread's allocations so far.
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // A const thread local holds no destructor and allocates nothing; after the thread's
        // locals are gone, the allocation is simply not counted.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
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
    let before = allocations();
    for p in payloads {
        got.push(refusal(p));
    }
    assert_eq!(allocations(), before, "refusal allocated");
    let expected = [
        None,
        Some(Refusal::NulCharacter),
        Some(Refusal::NumberOutOfRange),
        Some(Refusal::LoneSurrogate),
    ];
    assert_eq!(got, expected);
}
