//! `make bench` rows for the device runtime, as ratios measured in one run (median of
//! repeats, spread, goal; JSON in target/bench/device.json):
//! - the heap on issue #14's trace (2,000,000 operations, sizes 64 << k for k in 0..=10,
//!   64-byte alignment, at most 48 live blocks, an allocation with probability 2/3 while
//!   fewer than 48 are live, else a free of a uniformly chosen live block; 64 MiB pool;
//!   `Heap<128>`) vs linked_list_allocator and talc;
//! - each memcpy backend (C, VEC) vs libc memcpy, by size.

use std::alloc::Layout;
use std::hint::black_box;

use neuroncustomop::runtime::heap::Heap;
use neuroncustomop::runtime::mem;
use nrt_pool_testkit::bench::{Goal, Report, Sample};

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

/// Replays the trace on an allocator given as (alloc, free); a failed allocation keeps the
/// live count consistent by not adding a block (then the trace's later frees index fewer).
fn replay<P: Copy>(trace: &[Op], mut alloc: impl FnMut(u32) -> Option<P>, mut free: impl FnMut(P)) {
    let mut live: Vec<P> = Vec::with_capacity(MAX_LIVE);
    for op in trace {
        match *op {
            Op::Alloc(n) => {
                if let Some(p) = alloc(n) {
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

fn run_ours(trace: &[Op]) {
    let mut h: Heap<128> = Heap::empty();
    h.init(0x1000_0000, POOL as u64);
    let h = std::cell::RefCell::new(h);
    replay(
        trace,
        |n| h.borrow_mut().alloc(n, 64).ok(),
        |p| h.borrow_mut().free(p).unwrap(),
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
    );
    black_box(&t);
}

fn main() {
    let trace = trace();
    let mem = vec![0u8; POOL + 4096];
    let mut report = Report::new("device");
    // In turns, so a slow spell of this shared machine lands on all three alike.
    let mem = std::cell::RefCell::new(mem);
    let [ours, lla, talc_t] = Sample::interleaved(
        9,
        1,
        [
            &mut || run_ours(&trace),
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
    for size in [16usize, 256, 4096, 65536, 1 << 20] {
        let src = vec![0x5Au8; size + 64];
        let mut dst = vec![0u8; size + 64];
        let reps = ((64 << 20) / size).clamp(4, 1 << 16);
        let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
        // In turns, as the heap rows. SAFETY (all three): disjoint buffers of size + 64 bytes.
        let [libc, c, v] = Sample::interleaved(
            9,
            reps as u32,
            [
                &mut || {
                    for _ in 0..reps {
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                black_box(s),
                                black_box(d),
                                black_box(size),
                            )
                        };
                    }
                },
                &mut || {
                    for _ in 0..reps {
                        unsafe { mem::copy_bytes(black_box(d), black_box(s), black_box(size)) };
                    }
                },
                &mut || {
                    for _ in 0..reps {
                        unsafe { mem::copy_vector(black_box(d), black_box(s), black_box(size)) };
                    }
                },
            ],
        );
        let goal = if size >= 256 {
            Goal::RatioAtLeast(0.95)
        } else {
            Goal::None
        };
        report.row(
            &format!("neuron_memcpy C, {size} B, vs libc memcpy"),
            c,
            libc,
            goal,
        );
        report.row(
            &format!("neuron_memcpy VEC, {size} B, vs libc memcpy"),
            v,
            libc,
            goal,
        );
    }
}
