//! `make bench` rows for the device runtime, as ratios measured in one run (median of
//! repeats, spread, goal; JSON in target/bench/device.json):
//! - the heap on issue #14's trace (2,000,000 operations, sizes 64 << k for k in 0..=10,
//!   64-byte alignment, at most 48 live blocks, an allocation with probability 2/3 while
//!   fewer than 48 are live, else a free of a uniformly chosen live block; 64 MiB pool;
//!   `Heap<128>`) vs linked_list_allocator and talc, each managing the same real buffer and
//!   writing the first 64 bytes of every block it hands out (as a kernel uses its block),
//!   so the three do the same work; ours keeps its bookkeeping outside the arena, the other
//!   two write headers into it, and that difference is what the rows compare;
//! - the runtime's memcpy vs libc memcpy, by size (`neuron_memcpy`'s C and VEC methods are
//!   one implementation on the host, so one row each).

use std::alloc::Layout;
use std::hint::black_box;

use neuroncustomop::runtime::heap::Heap;
use neuroncustomop::runtime::mem;
use nrt_pool_benchkit::{Goal, Report, Sample};

const POOL: usize = 64 << 20;
const OPS: usize = 2_000_000;
const MAX_LIVE: usize = 48;

/// One trace step: allocate `size` bytes, or free the live block at this index.
#[derive(Clone, Copy)]
enum Op {
    Alloc(u32),
    Free(usize),
}

/// The trace, deterministic (xorshift64).
fn trace() -> Vec<Op> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut live = 0usize;
    let mut t = Vec::with_capacity(OPS);
    while t.len() < OPS {
        if live < MAX_LIVE && next() % 3 != 0 {
            t.push(Op::Alloc(64u32 << (next() % 11)));
            live += 1;
        } else if live > 0 {
            t.push(Op::Free((next() % live as u64) as usize));
            live -= 1;
        }
    }
    t
}

/// Bytes of each new block the trace writes (every allocator's alike).
const TOUCH: usize = 64;

/// Replays the trace on an allocator given as (alloc, free, its block's first byte); each
/// new block's first [`TOUCH`] bytes are written. A failed allocation keeps the live count
/// consistent by not adding a block (then the trace's later frees index fewer).
fn replay<P: Copy>(
    trace: &[Op],
    mut alloc: impl FnMut(u32) -> Option<P>,
    mut free: impl FnMut(P),
    start: impl Fn(P) -> *mut u8,
) {
    let mut live: Vec<P> = Vec::with_capacity(MAX_LIVE);
    for op in trace {
        match *op {
            Op::Alloc(n) => {
                if let Some(p) = alloc(n) {
                    // SAFETY: a block of at least 64 bytes inside the bench's buffer.
                    unsafe { std::ptr::write_bytes(black_box(start(p)), 0xA5, TOUCH) };
                    live.push(p);
                }
            }
            Op::Free(i) => {
                if !live.is_empty() {
                    let p = live.swap_remove(i % live.len());
                    free(p);
                }
            }
        }
    }
}

fn run_ours(trace: &[Op], mem: &mut [u8]) {
    let mut h: Heap<128> = Heap::empty();
    // The same buffer the others manage (64-byte aligned inside it, as theirs are).
    let base = (mem.as_mut_ptr() as u64).next_multiple_of(64);
    h.init(base, POOL as u64);
    let h = std::cell::RefCell::new(h);
    replay(
        trace,
        |n| h.borrow_mut().alloc(n, 64).ok(),
        |p| h.borrow_mut().free(p).unwrap(),
        |p| p as *mut u8,
    );
    black_box(&h);
}

fn run_lla(trace: &[Op], mem: &mut [u8]) {
    let mut h = linked_list_allocator::Heap::empty();
    // SAFETY: `mem` is an exclusive buffer that outlives the heap.
    unsafe { h.init(mem.as_mut_ptr(), mem.len()) };
    let h = std::cell::RefCell::new(h);
    replay(
        trace,
        |n| {
            let l = Layout::from_size_align(n as usize, 64).unwrap();
            h.borrow_mut().allocate_first_fit(l).ok().map(|p| (p, l))
        },
        // SAFETY: allocated by this heap with this layout.
        |(p, l)| unsafe { h.borrow_mut().deallocate(p, l) },
        |(p, _)| p.as_ptr(),
    );
    black_box(&h);
}

fn run_talc(trace: &[Op], mem: &mut [u8]) {
    let mut t = talc::Talc::new(talc::ErrOnOom);
    // SAFETY: `mem` is an exclusive buffer that outlives the allocator.
    unsafe { t.claim(talc::Span::from(&mut *mem)).unwrap() };
    let t = std::cell::RefCell::new(t);
    replay(
        trace,
        |n| {
            let l = Layout::from_size_align(n as usize, 64).unwrap();
            // SAFETY: a non-zero layout.
            unsafe { t.borrow_mut().malloc(l) }.ok().map(|p| (p, l))
        },
        // SAFETY: allocated by this allocator with this layout.
        |(p, l)| unsafe { t.borrow_mut().free(p, l) },
        |(p, _)| p.as_ptr(),
    );
    black_box(&t);
}

fn main() {
    let mut report = Report::new("device");
    if report.wants("heap, 2M-op trace") {
        heap_rows(&mut report);
    }
    for size in [16usize, 256, 4096, 65536, 1 << 20] {
        let name = format!("neuron_memcpy, {size} B, vs libc memcpy");
        if report.wants(&name) {
            memcpy_row(&mut report, &name, size);
        }
    }
}

fn heap_rows(report: &mut Report) {
    let trace = trace();
    let mem = std::cell::RefCell::new(vec![0u8; POOL + 4096]);
    // In turns, so a slow spell of this shared machine lands on all three alike.
    let [ours, lla, talc_t] = Sample::interleaved(
        9,
        1,
        [
            &mut || run_ours(&trace, &mut mem.borrow_mut()),
            &mut || run_lla(&trace, &mut mem.borrow_mut()),
            &mut || run_talc(&trace, &mut mem.borrow_mut()),
        ],
    );
    report.row(
        "heap, 2M-op trace, vs linked_list_allocator",
        ours,
        lla,
        Goal::RatioAtLeast(1.0),
    );
    report.row(
        "heap, 2M-op trace, vs talc",
        ours,
        talc_t,
        Goal::RatioAtLeast(1.0),
    );
}

fn memcpy_row(report: &mut Report, name: &str, size: usize) {
    let src = vec![0x5Au8; size + 64];
    let mut dst = vec![0u8; size + 64];
    let reps = ((64 << 20) / size).clamp(4, 1 << 16);
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    // In turns, as the heap rows. SAFETY (both): disjoint buffers of size + 64 bytes.
    let [libc, ours] = Sample::interleaved(
        9,
        reps as u32,
        [
            &mut || {
                for _ in 0..reps {
                    unsafe {
                        std::ptr::copy_nonoverlapping(black_box(s), black_box(d), black_box(size))
                    };
                }
            },
            &mut || {
                for _ in 0..reps {
                    unsafe { mem::copy_bytes(black_box(d), black_box(s), black_box(size)) };
                }
            },
        ],
    );
    report.row(name, ours, libc, Goal::RatioAtLeast(0.95));
}
