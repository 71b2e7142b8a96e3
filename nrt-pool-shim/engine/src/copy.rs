//! Host copies of tensor data: split over the CPUs when large, into memory advised for huge
//! pages.

/// A host copy of device bytes. Large results land in memory advised for transparent huge
/// pages: faulting in a fresh 64 MiB buffer 4 KiB at a time costs several times the copy.
pub(crate) fn host_copy(src: &[u8]) -> Vec<u8> {
    let mut v = host_buffer(src.len());
    let n = src.len();
    // SAFETY: the vector has room for n bytes (its capacity) and `src` holds n; a fresh
    // allocation does not overlap it.
    unsafe { copy_raw_parallel(v.spare_capacity_mut().as_mut_ptr().cast(), src.as_ptr(), n) };
    // SAFETY: all n bytes were written above.
    unsafe { v.set_len(n) };
    v
}

/// The CPUs this process may run on (counted once).
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Bytes from which a copy or fill is split over the CPUs: a large tensor's copy is
/// bound by how fast one CPU moves memory and takes its page faults.
const PARALLEL_FROM: usize = 8 << 20;

/// Runs `part(lo, hi)` over [0, n) in pieces, one per CPU (up to four) when `n` is large,
/// the first on this thread.
fn in_parallel(n: usize, part: impl Fn(usize, usize) + Sync) {
    let ways = if n >= PARALLEL_FROM {
        cpus().clamp(1, 4)
    } else {
        1
    };
    if ways == 1 {
        return part(0, n);
    }
    // Pieces of whole 2 MiB pages, so two threads never fault on one huge page.
    let piece = n.div_ceil(ways).next_multiple_of(2 << 20);
    std::thread::scope(|s| {
        let part = &part;
        for w in 1..ways {
            let (lo, hi) = ((w * piece).min(n), ((w + 1) * piece).min(n));
            if lo < hi {
                s.spawn(move || part(lo, hi));
            }
        }
        part(0, piece.min(n));
    });
}

/// `dst.copy_from_slice(src)`, split over the CPUs when large.
pub(crate) fn copy_parallel(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy of equal lengths");
    // SAFETY: both slices span the length (asserted); a `&mut` and a `&` never overlap.
    unsafe { copy_raw_parallel(dst.as_mut_ptr(), src.as_ptr(), src.len()) }
}

/// Copies `n` bytes from `src` to `dst`, split over the CPUs when large.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes (initialised or not), they do not
/// overlap, and neither is touched elsewhere during the call.
unsafe fn copy_raw_parallel(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    in_parallel(n, |lo, hi| {
        // SAFETY: [lo, hi) lies in both ranges (the contract); the pieces are disjoint.
        unsafe {
            std::ptr::copy_nonoverlapping((s as *const u8).add(lo), (d as *mut u8).add(lo), hi - lo)
        }
    });
}

/// `dst.fill(v)`, split over the CPUs when large.
pub(crate) fn fill_parallel(dst: &mut [u8], v: u8) {
    let d = dst.as_mut_ptr() as usize;
    in_parallel(dst.len(), |lo, hi| {
        // SAFETY: [lo, hi) lies in `dst`; the pieces are disjoint.
        unsafe { std::ptr::write_bytes((d as *mut u8).add(lo), v, hi - lo) }
    });
}

/// An empty vector with room for `len` bytes of tensor data; a large one asks for
/// transparent huge pages (as NumPy does for its arrays), so filling it takes a fault per
/// 2 MiB instead of per 4 KiB.
pub fn host_buffer(len: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let v: Vec<u8> = Vec::with_capacity(len);
    if len >= 2 * HUGE {
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: advice on whole pages inside the vector's own allocation; it changes
            // no contents (the memory is not yet initialised).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_copies_are_exact_at_every_size() {
        // Below and above the size copies are split over CPUs at, and pieces that do not
        // divide evenly.
        for n in [
            0usize,
            1,
            4095,
            4 << 20,
            (5 << 20) + 17,
            super::PARALLEL_FROM,
            (9 << 20) + 3,
            (33 << 20) + 4097,
        ] {
            let src: Vec<u8> = (0..n).map(|i| (i * 31 + i / 4096) as u8).collect();
            assert_eq!(super::host_copy(&src), src, "{n} bytes");
            let mut dst = vec![0xEEu8; n];
            super::copy_parallel(&mut dst, &src);
            assert!(dst == src, "{n} bytes");
            super::fill_parallel(&mut dst, 7);
            assert!(dst.iter().all(|&b| b == 7), "{n} bytes");
        }
    }
}
