//! `make bench` rows for the device runtime, as ratios measured in one run:
//! - the dataram heap on a tensor-sized alloc/free trace vs linked_list_allocator and talc;
//! - each memcpy backend (C, VEC) vs libc memcpy, by size.
//!
//! A ratio > 1 means ours is faster. Times are the best of several repetitions.

use std::alloc::Layout;
use std::hint::black_box;
use std::time::{Duration, Instant};

use neuroncustomop::heap::Heap;
use neuroncustomop::mem;

const POOL: usize = 16 * 1024;

/// Tensor-sized requests (staging buffers, 4 KiB stream buffers, small scalars) with frees
/// in a shuffled order, deterministic.
fn trace() -> Vec<Option<(u32, usize)>> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut live = 0usize;
    let mut t = Vec::new();
    for _ in 0..20_000 {
        if live < 6 && next() % 3 != 0 {
            let size = [64u32, 256, 1024, 4096, 48, 2048][(next() % 6) as usize];
            t.push(Some((size, 0)));
            live += 1;
        } else if live > 0 {
            t.push(None);
            live -= 1;
        }
    }
    t
}

fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn run_ours(trace: &[Option<(u32, usize)>]) {
    let mut h: Heap = Heap::empty();
    h.init(0x8_0000, POOL as u64);
    let mut live: Vec<u64> = Vec::with_capacity(16);
    for op in trace {
        match op {
            Some((n, _)) => {
                if let Ok(p) = h.alloc(*n, 64) {
                    live.push(p);
                }
            }
            None => {
                if let Some(p) = live.pop() {
                    h.free(p).unwrap();
                }
            }
        }
    }
    black_box(&h);
}

fn run_lla(trace: &[Option<(u32, usize)>], mem: &mut [u8]) {
    let mut h = linked_list_allocator::Heap::empty();
    // SAFETY: `mem` is an exclusive buffer that outlives the heap.
    unsafe { h.init(mem.as_mut_ptr(), mem.len()) };
    let mut live = Vec::with_capacity(16);
    for op in trace {
        match op {
            Some((n, _)) => {
                let l = Layout::from_size_align(*n as usize, 64).unwrap();
                if let Ok(p) = h.allocate_first_fit(l) {
                    live.push((p, l));
                }
            }
            None => {
                if let Some((p, l)) = live.pop() {
                    // SAFETY: allocated by this heap with this layout.
                    unsafe { h.deallocate(p, l) };
                }
            }
        }
    }
    black_box(&h);
}

fn run_talc(trace: &[Option<(u32, usize)>], mem: &mut [u8]) {
    let mut t = talc::Talc::new(talc::ErrOnOom);
    // SAFETY: `mem` is an exclusive buffer that outlives the allocator.
    unsafe { t.claim(talc::Span::from(&mut *mem)).unwrap() };
    let mut live = Vec::with_capacity(16);
    for op in trace {
        match op {
            Some((n, _)) => {
                let l = Layout::from_size_align(*n as usize, 64).unwrap();
                // SAFETY: a non-zero layout.
                if let Ok(p) = unsafe { t.malloc(l) } {
                    live.push((p, l));
                }
            }
            None => {
                if let Some((p, l)) = live.pop() {
                    // SAFETY: allocated by this allocator with this layout.
                    unsafe { t.free(p, l) };
                }
            }
        }
    }
    black_box(&t);
}

fn main() {
    let trace = trace();
    let mut mem = vec![0u8; POOL + 4096];
    let ours = best(7, || run_ours(&trace));
    let lla = best(7, || run_lla(&trace, &mut mem));
    let talc_t = best(7, || run_talc(&trace, &mut mem));
    println!(
        "heap: {} ops on a {} KiB pool, 64-byte aligned tensor buffers",
        trace.len(),
        POOL / 1024
    );
    println!(
        "  ours {:>9.1} us | vs linked_list_allocator {:.2}x | vs talc {:.2}x",
        ours.as_secs_f64() * 1e6,
        lla.as_secs_f64() / ours.as_secs_f64(),
        talc_t.as_secs_f64() / ours.as_secs_f64()
    );
    println!("memcpy (throughput vs libc memcpy; > 1 is faster):");
    for size in [16usize, 256, 4096, 65536, 1 << 20] {
        let src = vec![0x5Au8; size + 64];
        let mut dst = vec![0u8; size + 64];
        let reps = ((64 << 20) / size).clamp(4, 1 << 16);
        let mut time = |f: &mut dyn FnMut(*mut u8, *const u8, usize)| {
            best(5, || {
                for _ in 0..reps {
                    f(black_box(dst.as_mut_ptr()), black_box(src.as_ptr()), size);
                }
            })
        };
        // SAFETY (all three): disjoint buffers of size + 64 bytes.
        let libc = time(&mut |d, s, n| unsafe { std::ptr::copy_nonoverlapping(s, d, n) });
        let c = time(&mut |d, s, n| unsafe { mem::copy_bytes(d, s, n) });
        let v = time(&mut |d, s, n| unsafe { mem::copy_vector(d, s, n) });
        println!(
            "  {:>8} B: C {:.2}x  VEC {:.2}x  (libc {:.2} GB/s)",
            size,
            libc.as_secs_f64() / c.as_secs_f64(),
            libc.as_secs_f64() / v.as_secs_f64(),
            (size * reps) as f64 / libc.as_secs_f64() / 1e9
        );
    }
}
